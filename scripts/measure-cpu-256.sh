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
source scripts/cpu-server.sh
start_cpu_server "$PORT" 8192 4
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
