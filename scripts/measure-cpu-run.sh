#!/usr/bin/env bash
# Measures one of the shipped CPU runs: llama.cpp (xllamacpp) serving SmolLM2-135M on this
# machine's CPU, driven by `site bench`. Usage: scripts/measure-cpu-run.sh SLOTS [RUN_ID]
# Each slot gets 4,096 tokens of context (n_ctx = 4096 x SLOTS), so the 4K context cannot
# fit a slot and concurrency above SLOTS exceeds the slots: both are really Over capacity.
set -euo pipefail
cd "$(dirname "$0")/.."
SLOTS=${1:?usage: measure-cpu-run.sh SLOTS [RUN_ID]}
RUN_ID=${2:-smollm2-135m-llamacpp-cpu-${SLOTS}-slots}
PORT=${PORT:-18401}
SITE=${SITE:-target/release/site}
N_CTX=$((4096 * SLOTS))
source scripts/cpu-server.sh
start_cpu_server "$PORT" "$N_CTX" "$SLOTS"
CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores)"
"$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$RUN_ID" \
  --contexts 512,1k,2k,4k --prefill-contexts 512,1k,2k --concurrency 1,2,4,8 \
  --duration "${DURATION:-10s}" --max-output 128 --warmup-hold 2s \
  --cpu "$CPU" --hardware-kind CPU --os linux \
  --engine llama.cpp --engine-version "xllamacpp $VERSION" --quantization Q4_1 --backend cpu \
  --engine-repository github.com/ggml-org/llama.cpp \
  --model-id HuggingFaceTB/SmolLM2-135M-Instruct \
  --launch-command ".venv/bin/python scripts/llama-server.py --n-ctx $N_CTX --parallel $SLOTS --threads 2" \
  --description "Measured by site bench on this project's 2-core development machine; client and server shared the 2 cores. The model's text is nonsense: this run measures load, not quality." \
  "${@:3}"
