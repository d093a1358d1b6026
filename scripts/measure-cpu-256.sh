#!/usr/bin/env bash
# Measures the CPU server the peer tools measured (tests/fixtures/peer/README.md: xllamacpp,
# SmolLM2-135M Q4_1, 4 slots, n_ctx 8192, 2 threads) with `site bench` at their settings
# (256-token prompts, 64 output tokens, 1/2/4 streams), so our run and theirs share cells.
# Usage: scripts/measure-cpu-256.sh [RUN_ID]
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_ID=${1:-smollm2-135m-llamacpp-cpu-256}
PORT=${PORT:-18402}
SITE=${SITE:-target/release/site}
bash scripts/install-engine.sh
[ -x "$SITE" ] || cargo build --release --locked
LOG=$(mktemp)
.venv/bin/python scripts/llama-server.py --port "$PORT" --n-ctx 8192 --parallel 4 --threads 2 --lifetime 1800 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 600); do grep -q '^ready ' "$LOG" && break; kill -0 $SERVER 2>/dev/null || { cat "$LOG"; exit 1; }; sleep 0.2; done
grep -q '^ready ' "$LOG" || { echo "llama-server did not start" >&2; tail -20 "$LOG" >&2; exit 1; }
VERSION=$(.venv/bin/pip show xllamacpp | sed -n 's/^Version: //p')
"$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$RUN_ID" \
  --contexts 256 --prefill-contexts 256 --concurrency 1,2,4 \
  --duration "${DURATION:-20s}" --max-output 64 --warmup-hold 2s \
  --cpu "AMD EPYC (2 cores)" --hardware-kind CPU --os linux \
  --engine llama.cpp --engine-version "xllamacpp $VERSION" --quantization Q4_1 --backend cpu \
  --engine-repository github.com/ggml-org/llama.cpp \
  --model-id HuggingFaceTB/SmolLM2-135M-Instruct \
  --launch-command ".venv/bin/python scripts/llama-server.py --n-ctx 8192 --parallel 4 --threads 2" \
  --description "Measured by site bench at the peer tools' settings (256-token prompts, 64 output tokens) against the server they measured; client and server shared 2 cores." \
  "${@:2}"
