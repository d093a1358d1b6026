#!/usr/bin/env bash
# Measures the shipped vLLM run: vLLM 0.32 (its CPU build, scripts/install-vllm.sh) serving
# SmolLM2-135M on this machine's CPU with a 1 GiB KV cache (46,592 tokens in blocks of 128),
# driven by `site bench`. Usage: scripts/measure-vllm-run.sh [RUN_ID]
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_ID=${1:-smollm2-135m-vllm-0.32.0-cpu}
PORT=${PORT:-18402}
SITE=${SITE:-target/release/site}
VENV=${VENV:-$HOME/.cache/speedmatrix-vllm/venv}
MODEL_DIR=${MODEL_DIR:-$HOME/.cache/speedmatrix-vllm/smollm2-hf}
bash scripts/install-vllm.sh >/dev/null
ARGS=(--served-model-name SmolLM2-135M-Instruct --host 127.0.0.1 --port "$PORT" --max-model-len 4096
  --dtype bfloat16 --max-num-seqs 8 --enable-prefix-caching --enable-prompt-tokens-details)
LOG=$(mktemp)
env VLLM_CPU_KVCACHE_SPACE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  "$VENV/bin/vllm" serve "$MODEL_DIR" "${ARGS[@]}" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
  kill -0 "$SERVER" 2>/dev/null || { tail -30 "$LOG" >&2; exit 1; }
  sleep 1
done
CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores)"
"$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$RUN_ID" \
  --contexts 512,1k,2k --prefill-contexts 512,1k,2k --concurrency 1,2,4,8 \
  --duration "${DURATION:-10s}" --max-output 128 --warmup-hold 2s \
  --cpu "$CPU" --hardware-kind CPU --os linux --backend cpu \
  --model-id HuggingFaceTB/SmolLM2-135M-Instruct \
  --launch-command "VLLM_CPU_KVCACHE_SPACE=1 vllm serve SmolLM2-135M-Instruct ${ARGS[*]:2}" \
  --description "Measured by site bench on this project's 2-core development machine; client and server shared the 2 cores. The model's text is nonsense: this run measures load, not quality." \
  "${@:2}"
