#!/usr/bin/env python3
"""Checks that a run measured against a real engine is plausible, from the site's own
cells.json.gz download: usage: check-run.py PUBLIC_DIR RUN_ID SLOTS DECODE_CELLS PREFILL_CELLS (the
matrix's cell counts, which must all be there). Prints one line per check and 'N passed, N
failed'; exits non-zero on any failure."""
import gzip
import json
import sys

public, run_id, slots = sys.argv[1], sys.argv[2], int(sys.argv[3])
want_decode, want_prefill = int(sys.argv[4]), int(sys.argv[5])
doc = json.load(gzip.open(f"{public}/runs/{run_id}/cells.json.gz", "rt"))
cells = doc["cells"]
passed = failed = 0


def check(cond, what):
    global passed, failed
    print(("ok   " if cond else "FAIL ") + what)
    if cond:
        passed += 1
    else:
        failed += 1


decode = [c for c in cells if c["phase"] == "decode"]
prefill = [c for c in cells if c["phase"] == "prefill"]
check(len(decode) == want_decode, f"{len(decode)} decode cells, the matrix has {want_decode}")
check(len(prefill) == want_prefill, f"{len(prefill)} prefill cells, the matrix has {want_prefill}")
check(all(c["status"] == "valid" for c in prefill), "every prefill cell is valid")
prefill_ttft = {}
for c in prefill:
    f = c["figures"]
    rate, ttft = f["prompt_tps"] or 0, f["ttft_ms"] or 0
    prefill_ttft[c["context"]] = ttft
    # The prompt rate is the prompt's tokens over its TTFT: the two figures must agree.
    check(rate > 0 and ttft > 0 and abs(rate * ttft / 1000 / c["prompt_tokens"] - 1) <= 0.10,
          f"prefill {c['context']}: {rate:.0f} prompt tok/s x TTFT {ttft:.0f} ms = {rate * ttft / 1000:.0f} of {c['prompt_tokens']} prompt tokens (within 10%)")
    check(abs(c["prompt_tokens"] - c["context"]) <= max(4, c["context"] * 0.002), f"prefill {c['context']}: prompt sized to {c['prompt_tokens']} tokens")
for c in decode:
    key = f"decode {c['context']} x {c['concurrency']}"
    if c["concurrency"] > slots:
        check(c["status"] == "over_capacity", f"{key}: over capacity (more requests than {slots} slots)")
        continue
    check(c["status"] == "valid", f"{key}: status {c['status']}")
    if c["status"] != "valid":
        continue
    f = c["figures"]
    total, per, active = f["total_tps"] or 0, f["per_request_tps"] or 0, f["avg_active"] or 0
    # The cell's total is its streams' rates together: per request x requests active.
    check(total > 0 and abs(per * active / total - 1) <= 0.20,
          f"{key}: total {total:.1f} tok/s against {per:.1f} per request x {active:.2f} active (within 20%: the median stream, and the gaps between requests)")
    # The prefill sample warmed llama.cpp's prompt cache: a decode request's first token
    # comes far sooner than a fresh prompt's.
    fresh = prefill_ttft.get(c["context"])
    check(fresh is not None and 0 < (f["ttft_ms"] or 0) < fresh / 2,
          f"{key}: TTFT {f['ttft_ms']:.0f} ms with the prompt cached, a fresh prompt's {fresh} ms")
    check(0 < (f["tbt_ms"] or 0) and abs(f["tbt_ms"] * per / 1000 - 1) <= 0.25,
          f"{key}: time between tokens {f['tbt_ms']:.1f} ms against {per:.1f} tok/s per request")
    check((f["output_tokens"] or 0) > 0, f"{key}: {f['output_tokens']} output tokens")
    check(abs(active - c["concurrency"]) <= 0.5, f"{key}: {active:.1f} requests active")
    # llama.cpp's own per-request decode rate of the requests that finished, beside ours.
    server, ours = f.get("server_per_request_tps"), f.get("finished_per_request_tps")
    check(server is not None and ours is not None and abs(ours / server - 1) <= 0.02,
          f"{key}: per request {ours} tok/s against llama.cpp's own {server} (within 2%)")
    check(not any(w["code"] == "server_disagrees" for w in c["warnings"]), f"{key}: client and server agree")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
