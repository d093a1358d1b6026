#!/usr/bin/env bash
# A fixture of any installable release of a peer tool, run against the simulated engine, so
# that a new release is a fixture the day it ships (not run in CI: it installs from PyPI).
#
#   scripts/peer-fixture.sh aiperf 0.13.0
#   scripts/peer-fixture.sh guidellm 0.7.4
#   scripts/peer-fixture.sh inference-perf 0.7.0     # needs Python 3.12 (PYTHON=python3.12)
#
# Writes tests/fixtures/peer-new/TOOL-VERSION/ (OUT=... to choose): the tool's own output
# under out/ and the command that ran it in command.txt, the layout of tests/fixtures/peer-old.
# The tool runs 4 requests at each of concurrency 1 and 2, 256-token prompts, 64 output tokens.
# AIPerf and guidellm count tokens with a Hugging Face tokenizer: TOKENIZER=a local folder
# (tokenizer.json and its config) or a hub name when the hub is reachable.
# Then check it: `site import OUT/out --cpu sim --engine sim` must give the tool's figures.
set -euo pipefail

tool=${1:?usage: peer-fixture.sh TOOL VERSION}
version=${2:?usage: peer-fixture.sh TOOL VERSION}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/tests/fixtures/peer-new/$tool-$version}
python=${PYTHON:-python3}
venv=${VENV:-/tmp/peer-fixture-venv-$tool-$version}

case "$tool" in
  aiperf | guidellm | inference-perf) ;;
  *) echo "peer-fixture.sh: TOOL is aiperf, guidellm or inference-perf, not $tool" >&2; exit 2 ;;
esac
if [[ "$tool" != inference-perf && -z "${TOKENIZER:-}" ]]; then
  echo "peer-fixture.sh: $tool counts tokens with a tokenizer: set TOKENIZER to a local tokenizer folder or a hub name" >&2
  exit 2
fi

# AIPerf takes a hub name, never a folder: a local tokenizer folder becomes a one-model hub
# cache (read offline) under the name local/tokenizer.
if [[ "$tool" == aiperf && -d "${TOKENIZER:-}" ]]; then
  hub=$(mktemp -d)
  commit=$(printf 'a%.0s' $(seq 40)) # the hub names a snapshot by a 40-digit commit
  mkdir -p "$hub/models--local--tokenizer/snapshots/$commit" "$hub/models--local--tokenizer/refs"
  cp -r "$TOKENIZER"/. "$hub/models--local--tokenizer/snapshots/$commit/"
  printf '%s' "$commit" >"$hub/models--local--tokenizer/refs/main"
  export HF_HUB_CACHE=$hub HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  TOKENIZER=local/tokenizer
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet "$tool==$version"

cargo build --quiet --release --manifest-path "$root/Cargo.toml"
site="$root/target/release/site"
rm -rf "$out"
mkdir -p "$out/out"
url_file=$(mktemp)
"$site" simulate-engine --model smollm2 --lifetime-s 1800 >"$url_file" &
sim=$!
trap 'kill $sim 2>/dev/null || true; rm -f "$url_file"' EXIT
for _ in $(seq 50); do [[ -s "$url_file" ]] && break; sleep 0.1; done
url=$(head -1 "$url_file")

case "$tool" in
  aiperf)
    cmd=("$venv/bin/aiperf" profile --model smollm2 --url "$url" --endpoint-type chat --streaming
      --tokenizer "$TOKENIZER" --concurrency 1,2 --request-count 4 --isl 256 --isl-stddev 0 --osl 64
      --osl-stddev 0 --extra-inputs ignore_eos:true --random-seed 1 --ui-type none --no-gpu-telemetry
      --artifact-dir "$out/out")
    ;;
  guidellm)
    # 0.7 on take `run` with kind= arguments; 0.5 and 0.6 `benchmark run` with flags.
    if "$venv/bin/guidellm" run --help >/dev/null 2>&1; then
      cmd=("$venv/bin/guidellm" run --backend "kind=openai_http,target=$url,model=smollm2"
        --profile kind=concurrent --override profile.streams 1,2 --constraint kind=max_requests,count=4
        --tokenizer "kind=hf_auto,model=$TOKENIZER" --data kind=synthetic_text,prompt_tokens=256,output_tokens=64
        --output "kind=json,path=$out/out/benchmarks.json" --disable-console-interactive)
    else
      cmd=("$venv/bin/guidellm" benchmark run --target "$url" --model smollm2 --backend openai_http
        --profile concurrent --rate 1,2 --max-requests 4 --processor "$TOKENIZER"
        --data prompt_tokens=256,output_tokens=64 --output-dir "$out/out" --outputs json
        --disable-console-interactive)
    fi
    ;;
  inference-perf)
    cat >"$out/config.yaml" <<EOF
api: {type: completion, streaming: true}
data:
  type: random
  input_distribution: {min: 256, max: 256, mean: 256, std_dev: 0, total_count: 8, type: fixed}
  output_distribution: {min: 64, max: 64, mean: 64, std_dev: 0, total_count: 8, type: fixed}
load:
  type: concurrent
  stages:
  - {num_requests: 4, concurrency_level: 1}
  - {num_requests: 4, concurrency_level: 2}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true}
storage:
  local_storage: {path: $out/out}
server: {type: vllm, model_name: smollm2, base_url: $url, ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: ${TOKENIZER:-gpt2}}
EOF
    cmd=("$venv/bin/inference-perf" --config_file "$out/config.yaml")
    ;;
esac

printf '%q ' "${cmd[@]}" | sed "s|$venv/bin/||g; s|$out/||g; s|$root/||g" >"$out/command.txt"
echo >>"$out/command.txt"
"${cmd[@]}"
echo "$tool $version: fixture in $out"
echo "check it: $site import $out/out --cpu sim --engine sim --run-id check"
