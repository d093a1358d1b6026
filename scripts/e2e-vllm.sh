#!/usr/bin/env bash
# End to end on a real vLLM (the CPU build, SmolLM2-135M): installs it (scripts/install-vllm.sh),
# then `site bench --launch` starts it itself and measures
#   1. a small cache (24 blocks of 128 tokens) at 256 and 512 tokens x 1 and 8 streams, at 0%
#      and 90% prefix reuse in one session (a server process a level): Over capacity cells at
#      0% (eight prompts of their own do not fit) and none at 90% (their shared blocks held
#      once), the gauge, the token counter's cross-check, the reuse each level gets against
#      what whole blocks allow;
#   2. eight streams the same cache cannot hold, the bench told otherwise (--kv-budget), with
#      answers long enough that none ends in the window: seven start (vLLM takes blocks as an
#      answer grows), the eighth waits throughout, and the cell is Over capacity as measured;
#   3. ngram speculative decoding at --restarts 2: the setting recorded, the acceptance figures,
#      each repetition on a process of its own;
# then checks the runs (scripts/check-vllm.py), builds the site and reads the run pages, and
# checks that no vLLM process is left. Any missing part fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SITE=${SITE:-$ROOT/target/debug/site}
PORT=${E2E_VLLM_PORT:-18621}
VENV=${VENV:-$HOME/.cache/speedmatrix-vllm/venv}
MODEL_DIR=${MODEL_DIR:-$HOME/.cache/speedmatrix-vllm/smollm2-hf}

step() { echo; echo "== e2e-vllm: $*"; }

step "vLLM (CPU build) and its model"
t0=$(date +%s)
VENV=$VENV MODEL_DIR=$MODEL_DIR bash scripts/install-vllm.sh
echo "e2e-vllm: install took $(( $(date +%s) - t0 )) s"

step "site binary"
cargo build --locked --quiet
[ -x "$SITE" ] || { echo "e2e-vllm: $SITE was not built" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() { pkill -f "vllm serve $MODEL_DIR" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# The server as site bench launches it: its own process group, stopped by site bench. Eager
# mode: it starts in some 30 s instead of 80 to 110 (no graph compilation); these runs check
# what is read and planned, not the engine's best speed.
SERVE="env VLLM_CPU_KVCACHE_SPACE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
$VENV/bin/vllm serve $MODEL_DIR --served-model-name smollm2 --host 127.0.0.1 --port $PORT --max-model-len 2048 \
--dtype bfloat16 --max-num-seqs 8 --enable-prefix-caching --enable-prompt-tokens-details --enforce-eager"
# Short answers: a window of one stream holds several requests (the reuse shows from the
# second on).
BENCH=(--endpoint "http://127.0.0.1:$PORT" --launch-timeout 600s --cpu "CI CPU" --duration 4s --warmup-hold 1s
  --warmup-timeout 20s --max-output 16)

step "a small cache, prefix reuse 0 and 90 in one session"
t0=$(date +%s)
(cd "$WORK" && "$SITE" bench "${BENCH[@]}" --launch "$SERVE --num-gpu-blocks-override 24" \
  --contexts 256,512 --concurrency 1,8 --prefix-reuse 0,90 --run-id vllm-small)
echo "e2e-vllm: the session took $(( $(date +%s) - t0 )) s"

step "eight streams the cache cannot hold, measured as if it could"
t0=$(date +%s)
(cd "$WORK" && "$SITE" bench "${BENCH[@]}" --launch "$SERVE --num-gpu-blocks-override 24" --kv-budget 100000 \
  --contexts 256 --concurrency 8 --prefix-reuse 0 --prefill-samples 1 --warmup-timeout 8s --max-output 512 --run-id vllm-held)
echo "e2e-vllm: the run took $(( $(date +%s) - t0 )) s"

step "ngram speculative decoding, two server processes"
t0=$(date +%s)
(cd "$WORK" && "$SITE" bench "${BENCH[@]}" \
  --launch "$SERVE --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'" \
  --restarts 2 --repeat 2 --contexts 256 --concurrency 1 --prefill-samples 1 --run-id vllm-spec)
echo "e2e-vllm: the run took $(( $(date +%s) - t0 )) s"

step "no vLLM process left"
if pgrep -af "vllm serve $MODEL_DIR"; then echo "e2e-vllm: a launched vLLM is still running" >&2; exit 1; fi

step "the runs"
python3 scripts/check-vllm.py "$WORK/data"

step "the run pages"
(cd "$WORK" && "$SITE" build >/dev/null)
python3 - "$WORK/public" <<'PY'
import html, re, sys
def text(path):
    return html.unescape(re.sub(r"<[^>]+>", " ", open(path).read()))
root = sys.argv[1]
zero, ninety, spec = (text(f"{root}/runs/{r}/index.html") for r in ("vllm-small-reuse0", "vllm-small-reuse90", "vllm-spec"))
for name, page in (("reuse0", zero), ("reuse90", ninety)):
    assert "mostly excludes prefill" not in page, f"{name}: the page says TTFT mostly excludes prefill"
assert "at 0% reuse, the whole prompt's prefill" in zero, "reuse0: the page does not say TTFT is the whole prefill"
assert "speculative_decoding" in spec, "the speculative run's facts do not name it"
print("e2e-vllm: run pages say what the runs did")
PY
echo
echo "e2e-vllm: all checks passed"
