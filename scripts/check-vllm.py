#!/usr/bin/env python3
"""Checks the runs scripts/e2e-vllm.sh measured on a real vLLM: the facts discovered, the Over
capacity cells of a 24-block cache, the gauge, the token counter's cross-check, the prefix
reuse against what whole blocks allow, speculative decoding and its processes.

Usage: check-vllm.py DATA_DIR
"""
import gzip
import json
import math
import sys

DATA = sys.argv[1]
checks = 0


def check(ok, what):
    global checks
    if not ok:
        sys.exit(f"check-vllm: {what}")
    checks += 1


def manifest(run):
    with open(f"{DATA}/runs/{run}/run.json") as f:
        return json.load(f)


def rows(columns):
    """A cell's columns (schema 3 on) as one dict a row."""
    n = columns["rows"]
    return [{k: (v[i] if isinstance(v, list) else v) for k, v in columns.items() if k != "rows"} for i in range(n)]


def cells(run):
    with gzip.open(f"{DATA}/runs/{run}/cells.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def decode(run, ctx, c):
    found = [x for x in cells(run) if x["phase"] == "decode" and x["context"] == ctx and x["concurrency"] == c]
    check(found, f"{run}: no decode cell {ctx} x {c}")
    return found


def codes(cell):
    return {w["code"] for w in cell.get("warnings", [])}


BLOCK = 128
for level in (0, 90):
    run = f"vllm-small-reuse{level}"
    m = manifest(run)
    check(m["engine"]["name"] == "vllm" and m["engine"]["version"].startswith("0.32"), f"{run}: engine {m['engine']}")
    s = m.get("server_settings", {})
    check(s.get("block_size") == str(BLOCK) and s.get("num_gpu_blocks") == "24", f"{run}: cache settings {s}")
    check(m["settings"]["kv_budget_tokens"] == 24 * BLOCK, f"{run}: KV budget {m['settings'].get('kv_budget_tokens')}")
    check("speculative_decoding" not in s, f"{run}: speculative decoding recorded on a plain server")
    for ctx in (256, 512):
        # Eight streams of ctx + 16 tokens (and the prompt's few tokens of sizing tolerance):
        # at 0% reuse 3 and 5 blocks each, more than the 23 the cache lends (one of its 24 is
        # its own); at 90% the shared prefix's whole blocks are held once: 1 + 8 x 2 = 17 and
        # 3 + 8 x 2 = 19 blocks, which the server held all at once.
        (x8,) = decode(run, ctx, 8)
        want = "over_capacity" if level == 0 else "valid"
        check(x8["status"] == want, f"{run}: {ctx} x 8 is {x8['status']} ({x8.get('over_capacity')}), {want} planned")
        (x1,) = decode(run, ctx, 1)
        check(x1["status"] == "valid", f"{run}: {ctx} x 1 is {x1['status']}: {x1.get('error')}")
        me = x1["measurement"]
        check(me.get("gauge_source") == "vllm:num_requests_running", f"{run}: {ctx} x 1 gauge {me.get('gauge_source')}")
        check(not codes(x1) & {"active_mismatch", "server_disagrees", "warmup_timed_out"}, f"{run}: {ctx} x 1 warned {codes(x1)}")
        # The counter counted the window's tokens as we did (both over the same reads).
        ours = sum(r.get("window_tokens", 0) for r in rows(me["requests"]))
        server = me["server_tokens"]["tokens"]
        check(abs(ours - server) <= 0.02 * server + 1, f"{run}: {ctx} x 1: {ours} tokens counted, the server {server}")
        # Prefix reuse as served against what whole blocks of 128 allow: every request after
        # the cell's first (which found nothing of it cached yet) finds the shared prefix's
        # whole blocks, no more and no less.
        reqs = sorted((r for r in rows(me["requests"]) if r.get("prompt_tokens") and r.get("cached_prompt_tokens") is not None), key=lambda r: r["send_s"])
        check(len(reqs) >= 3, f"{run}: {ctx} x 1: {len(reqs)} requests report cached tokens, 3 or more expected")
        p = reqs[0]["prompt_tokens"]
        blocks_tokens = math.floor(p * level / 100 / BLOCK) * BLOCK
        allowed = blocks_tokens / p * 100
        later = [r["cached_prompt_tokens"] for r in reqs[1:]]
        check(all(c == blocks_tokens for c in later), f"{run}: {ctx} x 1: cached {[r['cached_prompt_tokens'] for r in reqs]} of {p}-token prompts, {blocks_tokens} by whole blocks")
        cached = sum(later) / sum(r["prompt_tokens"] for r in reqs[1:]) * 100
        if level == 90 and allowed < 75:
            warned = [w for w in x1.get("warnings", []) if w["code"] == "prefix_reuse_off"]
            check(warned and f"whole blocks of {BLOCK} tokens" in warned[0]["message"], f"{run}: {ctx} x 1: the reuse warning does not name the blocks: {warned}")
        print(f"check-vllm: {run} {ctx} x 1: {ours} tokens (server {server:.0f}), {cached:.1f}% cached (blocks allow {allowed:.1f}%)")

# Told the cache holds 100,000 tokens, the bench runs eight streams of fresh prompts and
# 512-token answers; the server's 23 blocks start seven of them (it takes blocks as answers
# grow), the eighth waits through the window: Over capacity as measured, its requests kept.
(held,) = decode("vllm-held", 256, 8)
check(held["status"] == "over_capacity", f"vllm-held: 256 x 8 is {held['status']}")
oc = held.get("over_capacity", {})
check(oc.get("rule") == "the server kept some of the C streams waiting through the window", f"vllm-held: rule {oc}")
check(oc.get("required_tokens") == 8 and 0 < oc.get("budget_tokens", 0) < 8, f"vllm-held: {oc}")
check(held["measurement"]["requests"]["rows"] >= 8, "vllm-held: the cell's requests were not kept")
print(f"check-vllm: vllm-held 256 x 8: {oc}")

spec = manifest("vllm-spec")
check(spec.get("server_settings", {}).get("speculative_decoding", "").startswith("on"), f"vllm-spec: settings {spec.get('server_settings')}")
processes = spec.get("server_processes", [])
check(len(processes) == 2, f"vllm-spec: {len(processes)} server processes, 2 launched")
reps = decode("vllm-spec", 256, 1)
check(sorted(x.get("server_instance") for x in reps) == [1, 2], f"vllm-spec: instances {[x.get('server_instance') for x in reps]}")
for x in reps:
    check(x["status"] == "valid", f"vllm-spec: a repetition is {x['status']}")
    sd = x["measurement"].get("spec_decode")
    check(sd and sd.get("drafts", 0) > 0, f"vllm-spec: no drafts counted: {sd}")
    check(0 <= sd.get("accepted_tokens", -1) <= sd.get("draft_tokens", 0), f"vllm-spec: acceptance {sd}")
    print(f"check-vllm: vllm-spec repetition {x.get('server_instance')}: {sd}")
print(f"check-vllm: {checks} passed")
