#!/usr/bin/env bash
# Makes a project folder of 230 runs for the listing checks: the series fixture (7 runs, with
# site.toml) plus 223 copies of one of its runs, each with its own id and day in 2025 (the
# last copy's model is `__proto__`).
# Usage: scripts/many-runs.sh DEST
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=$1
mkdir -p "$DEST"
cp -r "$ROOT/tests/fixtures/valid/series/." "$DEST/"
SRC=$DEST/data/runs/c-vllm-0.9.1
for n in $(seq 0 222); do
  id=$(printf 'copy-%03d' "$n")
  day=$(printf '2025-%02d-%02d' $((1 + n / 28)) $((1 + n % 28)))
  cp -r "$SRC" "$DEST/data/runs/$id"
  sed -i "s/2026-01-15/$day/" "$DEST/data/runs/$id/run.json"
done
# One run of a model whose id is a name plain JavaScript objects hold specially.
sed -i 's#"id": "acme/Tiny-1B"#"id": "__proto__"#' "$DEST/data/runs/copy-222/run.json"
