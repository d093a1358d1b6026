#!/usr/bin/env bash
# Re-creates the shipped imported runs from the peer result files in tests/fixtures/peer/
# (all measured against one llama.cpp server: xllamacpp, SmolLM2-135M Q4_1, 4 slots,
# n_ctx 8192, 2 threads, on a 2-core CPU machine). Usage: scripts/import-peer-runs.sh [DATA]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-data}
SITE=${SITE:-target/debug/site}
[ -x "$SITE" ] || cargo build --locked --quiet
PEER=tests/fixtures/peer
FACTS=(--cpu "AMD EPYC (2 cores)" --hardware-kind CPU --os linux --engine llama.cpp
  --engine-version "xllamacpp 2026.10.11549" --quantization Q4_1
  --model-id HuggingFaceTB/SmolLM2-135M-Instruct
  --launch-command ".venv/bin/python scripts/llama-server.py --n-ctx 8192 --parallel 4 --threads 2")
one() { local id=$1; shift; "$SITE" import --data "$DATA" --force --run-id "smollm2-135m-llamacpp-cpu-$id" "${FACTS[@]}" "$@"; }
# vLLM, SGLang and inference-perf do not write their version: it is the one they ran as.
one vllm-bench-serve "$PEER"/vllm-0.33.0 --tool-version 0.33.0
one sglang-bench-serving "$PEER"/sglang-0.5.23/sglang-bench.jsonl --tool-version 0.5.23
one guidellm "$PEER"/guidellm-0.8.1/benchmarks.json
one aiperf "$PEER"/aiperf-0.13.0/sweep-c124
one inference-perf "$PEER"/inference-perf-0.7.0 --tool-version 0.7.0
