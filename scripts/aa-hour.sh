#!/usr/bin/env bash
# Real A/A runs of one llama.cpp configuration over about an hour, for the run-to-run noise
# checks (`tests/fixtures/aa-hour`, `tests/run_noise.rs`): RUNS runs of the same launch
# command, each its own server process, SPACING seconds apart; one of them with a busy loop
# on one core beside it (other work on the machine); then one run of the same server on one
# thread instead of two (a real slowdown, its launch command differs).
# Usage: scripts/aa-hour.sh OUT_DIR [RUNS] [SPACING_S]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:?usage: scripts/aa-hour.sh OUT_DIR [RUNS] [SPACING_S]}
RUNS=${2:-6}
SPACING=${3:-420}
SITE=${SITE:-$ROOT/target/release/site}
PORT=${AA_PORT:-18431}
bash scripts/install-engine.sh >/dev/null
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

run() { # run-id threads
  (cd "$OUT" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$1" \
    --launch "exec .venv/bin/python scripts/llama-server.py --port $PORT --n-ctx 4096 --parallel 4 --threads $2 --lifetime 900" \
    --contexts 256,512 --concurrency 1,2,4 --duration 5s --max-output 128 --repeat 3 \
    --cpu "2-core CI VM" --engine-version xllamacpp --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
}
# The launch command names its paths relative to the repository: the bench runs it from OUT.
ln -sfn "$ROOT/.venv" "$OUT/.venv"
ln -sfn "$ROOT/scripts" "$OUT/scripts"
ln -sfn "$ROOT/.cache" "$OUT/.cache"

busy_at=$(( (RUNS + 1) / 2 ))
for k in $(seq 1 "$RUNS"); do
  id=$(printf 'aa-%02d' "$k")
  if [ "$k" -eq "$busy_at" ]; then
    id="$id-busy"
    (while :; do :; done) &
    BUSY=$!
    run "$id" 2
    kill "$BUSY"; wait "$BUSY" 2>/dev/null || true
  else
    run "$id" 2
  fi
  echo "$(date -u +%FT%TZ) measured $id"
  sleep "$SPACING"
done
run one-thread 1
echo "$(date -u +%FT%TZ) measured one-thread"
