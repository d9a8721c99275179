"""Load on `gpt2 serve`: N concurrent streaming clients, as N grows.

Starts the server on a free port, then for each N sends N clients at once,
each making REQUESTS streamed requests of TOKENS tokens one after another
(greedy, or drawn at --temperature T), and prints per N: the total tokens/s (all tokens / wall time), the
time to first token (median and 95th percentile over the requests) and the
tokens/s each stream sees after its first token (median). Before each N is
timed, one untimed round of N concurrent requests warms the server for that
load (on a GPU it captures a CUDA graph per batch size it meets). A request
that fails ends the script with its error, exit 1. Python's standard
library only.

Usage: python3 apps/bench/serve_load.py GPT2 MODEL [--clients 1,2,4,8,16]
           [--requests 2] [--tokens 32] [--max-batch 8] [--temperature 0]
           [--serve-flags '--device cuda --dtype bfloat16'] [--wrapper 'env VAR=...']

--serve-flags adds flags to `gpt2 serve`; --wrapper puts words before the
gpt2 command (an `env` that sets its library path); each is one string,
split as a shell splits words.
"""
import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("gpt2")
parser.add_argument("model")
parser.add_argument("--clients", default="1,2,4,8,16")
parser.add_argument("--requests", type=int, default=2)
parser.add_argument("--tokens", type=int, default=32)
parser.add_argument("--max-batch", type=int, default=8)
parser.add_argument("--temperature", type=float, default=0.0)
parser.add_argument("--serve-flags", default="")
parser.add_argument("--wrapper", default="")
args = parser.parse_args()

server = subprocess.Popen(shlex.split(args.wrapper) +
                          [args.gpt2, "serve", "--model", args.model, "--port", "0",
                           "--max-batch", str(args.max_batch), "--max-queue", "1024"] +
                          shlex.split(args.serve_flags),
                          stdout=subprocess.PIPE, text=True)
url = None
for line in server.stdout:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m:
        url = f"http://127.0.0.1:{m.group(1)}/v1/completions"
        break
if url is None:
    sys.exit(f"serve_load: gpt2 serve ended (exit {server.wait()}) without naming its address")
# The server logs a line per request; keep its pipe drained.
threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()

PROMPTS = ["Hello", "The quick brown fox jumps over the lazy dog and", "Once upon a time",
           "To be, or not to be, that is the question:", "In the beginning", "Call me Ishmael.",
           "It was the best of times, it was the worst of times,", "A"]


def stream(prompt):
    """(seconds to the first text, seconds after it, tokens) of one streamed request."""
    body = json.dumps({"prompt": prompt, "max_tokens": args.tokens,
                       "temperature": args.temperature, "stream": True}).encode()
    start = time.perf_counter()
    first = None
    with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=600) as r:
        for raw in r:
            if raw.startswith(b"data: {") and first is None:
                first = time.perf_counter()
    end = time.perf_counter()
    return first - start, end - first, args.tokens


def load(n, requests):
    """n clients at once, each making `requests` requests in turn: (results, wall seconds)."""
    results, errors = [], []
    lock = threading.Lock()

    def client(i):
        for k in range(requests):
            try:
                r = stream(PROMPTS[(i + k) % len(PROMPTS)])
            except Exception as e:  # an HTTP error, a timeout, a cut stream
                with lock:
                    errors.append(f"client {i}, request {k + 1}: {type(e).__name__}: {e}")
                return
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit(f"serve_load: {len(errors)} of {n * requests} requests failed; first: {errors[0]}")
    return results, time.perf_counter() - start


try:
    print(f"{'clients':>7} {'total tok/s':>11} {'TTFT median':>11} {'TTFT p95':>9} "
          f"{'stream tok/s':>12}")
    for n in (int(c) for c in args.clients.split(",")):
        load(n, 1)  # untimed: the server meets this load once first
        results, wall = load(n, args.requests)
        ttft = sorted(r[0] for r in results)
        p95 = ttft[min(len(ttft) - 1, int(round(0.95 * (len(ttft) - 1))))]
        per_stream = statistics.median((r[2] - 1) / r[1] for r in results if r[1] > 0)
        total = sum(r[2] for r in results) / wall
        print(f"{n:>7} {total:>11.1f} {statistics.median(ttft) * 1e3:>9.0f}ms "
              f"{p95 * 1e3:>7.0f}ms {per_stream:>12.1f}")
finally:
    server.terminate()
    server.wait()
