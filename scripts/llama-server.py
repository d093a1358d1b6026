#!/usr/bin/env python3
"""Starts llama.cpp's own HTTP server (xllamacpp) on loopback for a bounded time.

Prints `ready http://127.0.0.1:PORT` once /health answers OK, then serves until --lifetime
seconds pass or it gets SIGTERM/SIGINT. Used by the end-to-end checks and to measure the
shipped CPU runs; run it with the project venv: .venv/bin/python scripts/llama-server.py
"""
import argparse
import json
import signal
import sys
import time
import urllib.request

import xllamacpp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--port", type=int, default=18300)
    ap.add_argument("--n-ctx", type=int, default=8192, help="total context, shared evenly by the slots")
    ap.add_argument("--parallel", type=int, default=4, help="slots (requests decoded at once)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lifetime", type=float, default=900, help="seconds before the server stops by itself")
    ap.add_argument("--startup-timeout", type=float, default=120)
    a = ap.parse_args()

    p = xllamacpp.CommonParams()
    p.model.path = a.model
    p.n_ctx = a.n_ctx
    p.n_parallel = a.parallel
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    p.endpoint_metrics = True
    p.hostnames = ["127.0.0.1"]  # loopback only
    p.port = a.port
    server = xllamacpp.Server(p)

    url = f"http://127.0.0.1:{a.port}"
    deadline = time.monotonic() + a.startup_timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "ok":
                    break
        except Exception:
            pass
        if time.monotonic() > deadline:
            print(f"llama-server: {url}/health not OK after {a.startup_timeout} s", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print(f"ready {url}", flush=True)

    stop = {"now": False}

    def on_signal(*_):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    end = time.monotonic() + a.lifetime
    while not stop["now"] and time.monotonic() < end:
        time.sleep(0.2)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
