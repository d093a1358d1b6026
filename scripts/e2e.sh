#!/usr/bin/env bash
# End to end on a real engine and in a real browser. Installs what it needs (engine, model,
# Chromium, playwright-core), starts llama.cpp's server on loopback, measures a small run
# with `site bench`, measures an A/A pair at --repeat 3 (the diff must judge no cell faster or
# slower), builds the site, checks the run's figures, then serves the site and
# drives Chromium over it. Any missing part fails the script: nothing is skipped.
# Screenshots land in target/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SITE=${SITE:-$ROOT/target/debug/site}
PORT=${E2E_PORT:-18411}
SLOTS=2

step() { echo; echo "== e2e: $*"; }

step "engine and model"
bash scripts/install-engine.sh

step "browser"
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then echo "e2e: chromium is missing and this user cannot apt-get install it" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
chromium --version
command -v node >/dev/null || { echo "e2e: node is missing" >&2; exit 1; }
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)

step "site binary"
cargo build --locked --quiet
[ -x "$SITE" ] || { echo "e2e: $SITE was not built" >&2; exit 1; }

WORK=$(mktemp -d)
SERVER_LOG=$WORK/llama-server.log
cleanup() {
  [ -n "${SERVE:-}" ] && kill "$SERVE" 2>/dev/null || true
  [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cp -r data "$WORK/data"

step "llama.cpp server ($SLOTS slots, 4,096 tokens each)"
.venv/bin/python scripts/llama-server.py --port "$PORT" --n-ctx $((4096 * SLOTS)) --parallel $SLOTS --threads 2 --lifetime 900 >"$SERVER_LOG" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
  grep -q '^ready ' "$SERVER_LOG" && break
  kill -0 "$SERVER" 2>/dev/null || { tail -30 "$SERVER_LOG" >&2; echo "e2e: llama-server died" >&2; exit 1; }
  sleep 0.2
done
grep -q '^ready ' "$SERVER_LOG" || { echo "e2e: llama-server did not become ready" >&2; exit 1; }

step "site bench against it"
(cd "$WORK" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id e2e-llamacpp \
  --contexts 512,1k --concurrency 1,2,4 --duration 3s --max-output 64 --warmup-hold 1s \
  --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct \
  --launch-command "scripts/llama-server.py --n-ctx $((4096 * SLOTS)) --parallel $SLOTS")

step "A/A on the same server: two runs at --repeat 3, nothing changed, no cell judged"
mkdir -p "$WORK/aa"
for run in aa-a aa-b; do
  (cd "$WORK/aa" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$run" \
    --contexts 256 --concurrency 1,2 --duration 3s --max-output 64 --warmup-hold 1s --repeat 3 \
    --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
done
(cd "$WORK/aa" && "$SITE" diff aa-a aa-b --out diff --fail-on-regression) | tee "$WORK/aa/diff.txt"
python3 - "$WORK/aa/diff/comparison.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
judged = [(r["phase"], r["context"], r["concurrency"], k, v) for r in rows for k, v in r.items() if k.endswith("_verdict") and v]
called = [j for j in judged if j[4] in ("faster", "slower")]
single = [j for j in judged if j[4] == "single"]
print(f"e2e: A/A verdicts: {len(judged)} figures judged, {len(called)} called faster or slower, {len(single)} single")
if not judged or called or single:
    sys.exit(f"e2e: the A/A diff must judge every figure at n 3 and call none faster or slower: {called or single}")
PY
step "one session at --prefix-reuse 0,90 --turns 2 on llama.cpp: a run a level, first turns checked against its prompt cache (timings.cache_n), second turns carrying the first"
mkdir -p "$WORK/reuse"
(cd "$WORK/reuse" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id s --prefix-reuse 0,90 --turns 2 \
  --contexts 512 --concurrency 1 --duration 5s --max-output 16 --warmup-hold 1s \
  --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
(cd "$WORK/reuse" && "$SITE" build)
python3 - "$WORK/reuse" <<'PY'
import gzip, json, sys, glob
root = sys.argv[1]
failed = []
for run, lo, hi in (("s-reuse0", 0, 15), ("s-reuse90", 75, 100)):
    other = json.load(open(f"{root}/data/runs/{run}/run.json"))["other_levels"]
    cells = json.load(gzip.open(f"{root}/public/runs/{run}/cells.json.gz", "rt"))["cells"]
    for c in (c for c in cells if c["phase"] == "decode"):
        f = c["figures"]
        pct, later, later_ttft = f["cached_prompt_pct"], f["next_turn_cached_pct"], f["next_turn_ttft_ms"]
        off = [w["message"] for w in c["warnings"] if w["code"] == "prefix_reuse_off"]
        print(f"e2e: {run} {c['context']} x {c['concurrency']}: first turns {pct}% of the prompt tokens from llama.cpp's cache (planned {run[7:]}%), later turns {later}% (TTFT {later_ttft} ms); other levels {other}")
        if pct is None or not lo <= pct <= hi or off or later is None or later_ttft is None:
            failed.append(f"{run} {c['concurrency']}: {pct} {later} {off}")
    rows = []
    # The run's cells file: a line a cell (schema 5).
    for line in gzip.open(f"{root}/data/runs/{run}/cells.jsonl.gz", "rt"):
        d = json.loads(line)
        if d["phase"] != "decode" or not (d.get("measurement") or {}).get("requests"):
            continue
        r = d["measurement"]["requests"]
        col = lambda k: r.get(k) if isinstance(r.get(k), list) else [r.get(k)] * r["rows"]
        rows += [dict(zip(("turn", "prompt", "cached"), t)) for t in zip(col("turn"), col("prompt_tokens"), col("cached_prompt_tokens"))]
    first = [x["prompt"] for x in rows if x["turn"] == 1 and x["prompt"]]
    second = [x for x in rows if x["turn"] == 2 and x["prompt"]]
    print(f"e2e: {run}: {len(first)} first turns ({max(first) if first else None} prompt tokens), second turns (prompt, cached): {[(x['prompt'], x['cached']) for x in second]}")
    if not (first and second and all(x["prompt"] > max(first) and (x["cached"] or 0) >= 0.8 * max(first) for x in second)):
        failed.append(f"{run}: the second turns did not carry the first (prompt tokens and llama.cpp's cache)")
page = open(f"{root}/public/runs/s-reuse0/index.html").read()
if "Prefix-reuse levels" not in page or 'href="../../runs/s-reuse90/index.html"' not in page or "TTFT by prefix reuse" not in page:
    failed.append("the run page does not link and chart the session's levels")
if failed:
    sys.exit(f"e2e: prefix reuse and turns not as planned: {failed}")
PY
if (cd "$WORK/reuse" && "$SITE" diff s-reuse0 s-reuse90 --out d) 2>"$WORK/reuse/diff.err"; then
  echo "e2e: two prefix-reuse workloads were compared" >&2; exit 1
fi
grep -q "two workloads" "$WORK/reuse/diff.err" || { cat "$WORK/reuse/diff.err" >&2; exit 1; }

step "request rates on llama.cpp (0.2, 0.5 and 3 requests/s at 256 tokens: the last Saturated), and 60 s of the Mooncake conversation trace"
mkdir -p "$WORK/rates"
(cd "$WORK/rates" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id rates \
  --contexts 256 --rates 0.2,0.5,3 --arrival constant --seed 3 --duration 15s --warmup-hold 2s \
  --max-output 64 --drain-timeout 30s \
  --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
# SmolLM2 on two CPU threads serves some 1.5 short requests a second: the trace's lengths at
# 1.5% (a 512-token block becomes 8 tokens) and its time at 0.3 of its speed.
(cd "$WORK/rates" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id trace \
  --trace "$ROOT/tests/fixtures/traces/mooncake-conversation-head.jsonl" --trace-start 20 --trace-duration 60 \
  --speedup 0.3 --scale-lengths 0.015 --drain-timeout 30s \
  --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
(cd "$WORK/rates" && "$SITE" build >/dev/null)
python3 - "$WORK/rates" <<'PY'
import gzip, json, sys
root = sys.argv[1]
failed = []
cells = [json.loads(l) for l in open(f"{root}/data/runs/rates/rates.jsonl")]
page = open(f"{root}/public/runs/rates/index.html").read()
rows = page.split('<table class="rates">')[1].split("</table>")[0].split("<tr>")[2:]
status = ["Saturated" if "Saturated" in r else "Kept up" if "Kept up" in r else "other" for r in rows]
print(f"e2e: llama.cpp at 0.2, 0.5, 3 requests/s: {status}")
if status != ["Kept up", "Kept up", "Saturated"]:
    failed.append(f"rates: expected the lowest two kept up and the highest Saturated, got {status}")
for c in cells:
    lags = sorted((r["send_s"] - r["scheduled_s"]) * 1000 for r in c["requests"] if "send_s" in r)
    if lags and lags[-1] > 50:
        failed.append(f"rates: the client fell {lags[-1]:.1f} ms behind its schedule at {c['rate_rps']}")
t = json.load(open(f"{root}/data/runs/trace/run.json"))["traffic"]["trace"]
cell = json.loads(open(f"{root}/data/runs/trace/rates.jsonl").readline())
done = [r for r in cell["requests"] if "error" not in r and "end_s" in r]
# A prompt is at least the start every prompt has (tag and chat template) and a token a
# block: the trace's shortest inputs, scaled, are shorter (the run counts them).
floor = lambda r: max(r["planned"]["input_tokens"], t["prefix_tokens"] + -(-r["planned"]["input_tokens"] // t["block_tokens"]))
served = sum(r["prompt_tokens"] for r in done if "prompt_tokens" in r)
asked = sum(floor(r) for r in done if "prompt_tokens" in r)
cached = [r for r in done if "cached_tokens" in r]
measured = 100 * sum(min(r["cached_tokens"], r["prompt_tokens"]) for r in cached) / max(1, sum(r["prompt_tokens"] for r in cached))
print(f"e2e: trace slice: {t['in_slice']} requests ({t['shorter_than_prefix']} shorter than the {t['prefix_tokens']}-token start), {len(done)} completed; input served {served} of {asked} asked; reuse by the trace {t['planned_reuse_pct']:.1f}%, as sent {t['sent_reuse_pct']:.1f}%, llama.cpp cached {measured:.1f}%")
if len(done) < 0.9 * t["in_slice"]:
    failed.append(f"trace: only {len(done)} of {t['in_slice']} requests completed")
if not asked or abs(served / asked - 1) > 0.05:
    failed.append(f"trace: input served {served} against {asked} asked")
# llama.cpp keeps one prompt a slot (two slots): it finds at most the reuse as sent, and at
# least the common start every request shares.
if not (0.5 * t["sent_reuse_pct"] <= measured <= t["sent_reuse_pct"] + 2):
    failed.append(f"trace: llama.cpp cached {measured:.1f}% against {t['sent_reuse_pct']:.1f}% as sent")
if "<h2>Trace replay</h2>" not in open(f"{root}/public/runs/trace/index.html").read():
    failed.append("trace: the run page has no Trace replay section")
if failed:
    sys.exit(f"e2e: rates and trace replay not as expected: {failed}")
PY

kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=

step "A/A across server restarts (--launch --restarts 3), and one thread against two"
# Each run starts the server itself three times (one process per repetition): an A/A pair of such
# runs must call nothing, and the same server on one thread must be judged slower.
mkdir -p "$WORK/restart"
launched() { # run-id threads
  (cd "$WORK/restart" && "$SITE" bench --endpoint "http://127.0.0.1:$PORT" --run-id "$1" \
    --launch "echo \$\$ >> $WORK/restart/pids; exec $ROOT/.venv/bin/python $ROOT/scripts/llama-server.py --model $ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf --port $PORT --n-ctx $((4096 * SLOTS)) --parallel $SLOTS --threads $2 --lifetime 600" \
    --restarts 3 --repeat 3 --contexts 256 --concurrency 1,2 --duration 3s --max-output 64 --warmup-hold 1s \
    --cpu "CI CPU" --engine-version "xllamacpp" --model-id HuggingFaceTB/SmolLM2-135M-Instruct)
}
launched r-a 2
launched r-b 2
launched r-one 1
# Every process the three runs started (three each), by the ids they recorded: none left running.
[ "$(wc -l < "$WORK/restart/pids")" -eq 9 ] || { echo "e2e: expected 9 launched processes, got $(wc -l < "$WORK/restart/pids")" >&2; exit 1; }
while read -r pid; do
  if kill -0 "$pid" 2>/dev/null; then echo "e2e: launched server process $pid was left running" >&2; exit 1; fi
done < "$WORK/restart/pids"
(cd "$WORK/restart" && "$SITE" diff r-a r-b --out aa --fail-on-regression) | tee "$WORK/restart/aa.txt"
grep -q "own server processes (A 3, B 3" "$WORK/restart/aa.txt" || { echo "e2e: the restarted A/A pair does not name its processes" >&2; exit 1; }
if (cd "$WORK/restart" && "$SITE" diff r-a r-one --out ab --fail-on-regression) > "$WORK/restart/ab.txt"; then
  cat "$WORK/restart/ab.txt"; echo "e2e: one thread against two was not judged slower" >&2; exit 1
fi
cat "$WORK/restart/ab.txt"
grep -q "slower figures in:" "$WORK/restart/ab.txt" || { echo "e2e: no slower figure for one thread against two" >&2; exit 1; }
[ -s "$WORK/restart/data/runs/r-a/server.log" ] || { echo "e2e: no server.log kept" >&2; exit 1; }

step "site build and the run's figures"
(cd "$WORK" && "$SITE" build)
# Contexts 512 and 1k, concurrency 1, 2 and 4: six decode cells, two prefill cells.
python3 scripts/check-run.py "$WORK/public" e2e-llamacpp $SLOTS 6 2

# `site serve` on the site under DIR (a free port, output in LOG, more flags after): sets
# SERVE (its pid) and BASE (its URL).
serve_site() {
  local dir=$1 log=$2
  shift 2
  (cd "$dir" && exec "$SITE" serve --port 0 "$@" >"$log" 2>&1) &
  SERVE=$!
  for _ in $(seq 1 100); do grep -q 'Serving .* at http' "$log" && break; sleep 0.1; done
  BASE=$(sed -n 's/^Serving .* at \(http[^ ]*\)\/ .*/\1/p' "$log" | head -1)
  [ -n "$BASE" ] || { cat "$log" >&2; echo "e2e: site serve printed no URL" >&2; exit 1; }
}

step "site serve and Chromium"
serve_site "$WORK" "$WORK/serve.log" --templates "$ROOT/site-templates" --static "$ROOT/static"
VLLM_RUN=step-3.5-flash-vllm-0.29.0-4x-h200-sxm
SGLANG_RUN=step-3.7-flash-fp8-sglang-0.5.6-2x-h200-nvl
CHECKS=$(cat <<JSON
[
  {"name": "index", "path": "/"},
  {"name": "run-vllm", "path": "/runs/$VLLM_RUN/", "heatmap_cells": 48, "looped": 1, "over_capacity": 15, "svg": "#prefill svg", "points_from": "prefill", "print": true},
  {"name": "run-vllm-chart", "path": "/runs/$VLLM_RUN/", "svg": "#throughput-interactivity svg", "points_from": "decode"},
  {"name": "run-cpu-e2e", "path": "/runs/e2e-llamacpp/", "heatmap_cells": 6, "looped": 0, "over_capacity": 2, "svg": "#prefill svg", "points_from": "prefill"},
  {"name": "run-imported-tool", "path": "/runs/smollm2-135m-llamacpp-cpu-guidellm/"},
  {"name": "model", "path": "/models/stepfun-ai-step-3-5-flash/", "svg": "figure.chart svg"},
  {"name": "hardware", "path": "/hardware/amd-epyc-2-cores/"},
  {"name": "engine", "path": "/engines/llama-cpp/"},
  {"name": "compare", "path": "/compare/$VLLM_RUN--$SGLANG_RUN/", "svg": "figure.chart svg"},
  {"name": "methodology", "path": "/glossary/"},
  {"name": "cell-e2e", "path": "/cell/#e2e-llamacpp/decode-512-x2", "svg": "svg.timeline"},
  {"name": "cell-cpu", "path": "/cell/#smollm2-135m-llamacpp-cpu-2-slots/decode-1k-x2", "svg": "svg.timeline"},
  {"name": "cell-seed", "path": "/cell/#$VLLM_RUN/decode-64k-x4"},
  {"name": "tools", "path": "/tools/huggingfacetb-smollm2-135m-instruct-llama-cpp-xllamacpp-2026-10-11549-1x-amd-epyc-2-cores/"},
  {"name": "leaderboards", "path": "/leaderboards/"},
  {"name": "leaderboard", "path": "/leaderboards/8k-x64/"},
  {"name": "pareto", "path": "/pareto/stepfun-ai-step-3-5-flash/", "svg": "figure.chart svg"},
  {"name": "targets", "path": "/targets/"},
  {"name": "target-board", "path": "/targets/chat-8k/"},
  {"name": "not-found", "path": "/no/such/page/", "status": 404}
]
JSON
)
mkdir -p target/screenshots
node tests/browser/check.mjs "$BASE" "$ROOT/target/screenshots" "$CHECKS"
kill "$SERVE"; wait "$SERVE" 2>/dev/null || true; SERVE=

step "the cell viewer: every repetition's evidence, over HTTP and from file://"
(cd "$WORK/aa" && "$SITE" build >/dev/null)
serve_site "$WORK/aa" "$WORK/aa-serve.log"
node tests/browser/cells.mjs "$BASE" "$WORK/aa/public" aa-a decode-256-x2 3
# The A/A pair is one configuration measured twice: its trend page, checked as every page is
# (links, console, axe, screenshots).
SERIES=$(cd "$WORK/aa/public" && ls -d series/*/ 2>/dev/null | head -1)
[ -n "$SERIES" ] || { echo "e2e: the A/A pair made no trend page" >&2; exit 1; }
node tests/browser/check.mjs "$BASE" "$ROOT/target/screenshots" "[{\"name\": \"series\", \"path\": \"/$SERIES\"}]"
kill "$SERVE"; wait "$SERVE" 2>/dev/null || true; SERVE=

step "the rate run's and the trace replay's pages in Chromium"
serve_site "$WORK/rates" "$WORK/rates-serve.log"
node tests/browser/check.mjs "$BASE" "$ROOT/target/screenshots" '[{"name": "run-rates", "path": "/runs/rates/"}, {"name": "run-trace", "path": "/runs/trace/"}]'
kill "$SERVE"; wait "$SERVE" 2>/dev/null || true; SERVE=

step "runs listing script: 230 runs, over HTTP and from file://"
scripts/many-runs.sh "$WORK/many"
(cd "$WORK/many" && "$SITE" build >/dev/null)
serve_site "$WORK/many" "$WORK/many-serve.log"
node tests/browser/listing.mjs "$BASE" "$WORK/many/public"

step "live reload: a run page open in Chromium while its run file changes"
node tests/browser/reload.mjs "$BASE" copy-000 "$WORK/many/data/runs/copy-000/run.json"
echo "e2e: screenshots in target/screenshots/"
