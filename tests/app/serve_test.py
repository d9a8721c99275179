"""`gpt2 serve` as a client sees it, over HTTP, with Python's standard library.

- Requests of different lengths sent at once decode in one batch, and each
  greedy completion equals `gpt2 generate` of that prompt alone.
- Streaming sends the same text as server-sent events ending in [DONE].
- usage counts, n with a seed (repeatable), stop strings, /tokenize and
  /detokenize, /v1/models, /health.
- Bad requests get HTTP 400 with OpenAI's error object naming the field, an
  oversized body 413, a request past the queue 503 with Retry-After, one
  without the API key 401; a client that leaves mid-stream frees its place.
- SIGTERM stops the server with exit code 0; each request logs one line.

Usage: /usr/bin/python3 serve_test.py GPT2 CHECKPOINT
"""
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

GPT2, MODEL = sys.argv[1:3]

server = subprocess.Popen([GPT2, "serve", "--model", MODEL, "--port", "0"],
                          stdout=subprocess.PIPE, text=True)
port = None
for line in server.stdout:
    print(line, end="")
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m:
        port = int(m.group(1))
        break
assert port, "the server printed no address"
BASE = f"http://127.0.0.1:{port}"


def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def complete(body):
    status, text = call("/v1/completions", body)
    assert status == 200, (status, text)
    return json.loads(text)


def generate_alone(prompt, n):
    out = subprocess.run([GPT2, "generate", "--model", MODEL, "--prompt", prompt,
                          "--max-new-tokens", str(n), "--temperature", "0"],
                         check=True, capture_output=True, text=True).stdout
    assert out.startswith(prompt), out
    return out[len(prompt):].rstrip("\n")


try:
    status, text = call("/health")
    assert status == 200 and json.loads(text)["status"] == "ok", text
    status, text = call("/v1/models")
    assert json.loads(text)["data"][0]["id"] == MODEL, text

    # Eight prompts of different lengths at once, from eight clients.
    prompts = ["Hi", "To be, or not to be", "The quick brown fox jumps over the lazy", "A",
               "Once upon a time", "It was the best of times, it was the worst", "Call me",
               "In the beginning"]
    results = [None] * len(prompts)

    def client(i):
        results[i] = complete({"prompt": prompts[i], "max_tokens": 12, "temperature": 0})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p, r in zip(prompts, results):
        want = generate_alone(p, 12)
        got = r["choices"][0]["text"]
        assert got == want, (p, got, want)
        assert r["choices"][0]["finish_reason"] == "length", r
        status, tok = call("/tokenize", {"content": p})
        n_prompt = len(json.loads(tok)["tokens"])
        assert r["usage"] == {"prompt_tokens": n_prompt, "completion_tokens": 12,
                              "total_tokens": n_prompt + 12}, r["usage"]
    print("8 concurrent greedy completions equal gpt2 generate of each prompt alone")

    # One request, two prompts: the same texts, in prompt order.
    both = complete({"prompt": prompts[:2], "max_tokens": 12, "temperature": 0})
    assert [c["text"] for c in both["choices"]] == [r["choices"][0]["text"] for r in results[:2]]

    # Streaming: the same text, piece by piece, then [DONE].
    req = urllib.request.Request(BASE + "/v1/completions", data=json.dumps(
        {"prompt": prompts[1], "max_tokens": 12, "temperature": 0, "stream": True}).encode())
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream"), r.headers
        events = [l[len("data: "):] for l in r.read().decode().split("\n\n") if l.startswith("data: ")]
    assert events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == results[1]["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length", chunks[-1]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    print(f"streamed the same text in {len(chunks)} events and [DONE]")

    # A seed repeats sampled text; n choices each have their own draws.
    body = {"prompt": "Once", "max_tokens": 10, "temperature": 1.0, "n": 2, "seed": 7}
    a, b = complete(body), complete(body)
    assert [c["text"] for c in a["choices"]] == [c["text"] for c in b["choices"]]
    assert a["choices"][0]["text"] != a["choices"][1]["text"], a

    # A stop string ends the text before it.
    k = max(range(len(prompts)), key=lambda i: len(set(results[i]["choices"][0]["text"])))
    full = results[k]["choices"][0]["text"]
    stop = full[len(full) // 2:len(full) // 2 + 3]
    cut = complete({"prompt": prompts[k], "max_tokens": 12, "temperature": 0, "stop": stop})
    assert cut["choices"][0]["text"] == full[:full.index(stop)], (cut, full, stop)
    assert cut["choices"][0]["finish_reason"] == "stop", cut
    print(f"stop {stop!r} cut {full!r} to {cut['choices'][0]['text']!r}")

    # A client that leaves mid-stream frees its place; the others go on.
    req = urllib.request.Request(BASE + "/v1/completions", data=json.dumps(
        {"prompt": "Hi", "max_tokens": 5000, "stream": True}).encode())
    r = urllib.request.urlopen(req, timeout=60)
    r.readline()
    r.close()
    again = complete({"prompt": prompts[1], "max_tokens": 12, "temperature": 0})
    assert again["choices"][0]["text"] == results[1]["choices"][0]["text"]
    for _ in range(100):
        if json.loads(call("/health")[1])["running"] == 0:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the stream's sequence was not freed")
    print("a client that left mid-stream freed its place")

    status, text = call("/v1/completions", {"prompt": "x" * (2 << 20)})
    assert status == 413, (status, text[:200])
    assert call("/health")[0] == 200

    status, text = call("/detokenize", {"tokens": [31373, 995]})
    assert json.loads(text) == {"content": "hello world"}, text

    for body, param in (({"prompt": "x", "max_tokens": -1}, "max_tokens"),
                        ({"prompt": "x", "temperature": "hot"}, "temperature"),
                        ({"prompt": "x", "logprobs": 3}, "logprobs"),
                        ({"prompt": [50257]}, "prompt"),
                        ({"prompt": "x", "n": 100}, "n")):
        status, text = call("/v1/completions", body)
        err = json.loads(text)["error"]
        assert status == 400 and err["param"] == param and err["type"] == "invalid_request_error", \
            (body, status, text)
        print(f"400 for {body}: {err['message']}")
    status, text = call("/v1/completions", "")
    assert status == 400, (status, text)
    req = urllib.request.Request(BASE + "/v1/completions", data=b"{not json")
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("bad JSON was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 400 and "not valid JSON" in json.loads(e.read())["error"]["message"]
finally:
    server.send_signal(signal.SIGTERM)
    rest, _ = server.communicate(timeout=30)
    print(rest, end="")
assert server.returncode == 0, server.returncode
assert re.search(r"^request   cmpl-\d+: \d+ prompt tokens, 12 completion tokens, first token", rest, re.M)

# An API key, and a server with room for one sequence: a second gets 503.
signalled = False
server = subprocess.Popen([GPT2, "serve", "--model", MODEL, "--port", "0", "--api-key", "k3y",
                           "--max-batch", "1", "--max-queue", "0", "--shutdown-grace", "0.5"],
                          stdout=subprocess.PIPE, text=True)
for line in server.stdout:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m:
        BASE = f"http://127.0.0.1:{m.group(1)}"
        break
try:
    status, text = call("/health")
    assert status == 401 and json.loads(text)["error"]["type"] == "invalid_api_key", (status, text)
    auth = {"Authorization": "Bearer k3y", "Content-Type": "application/json"}
    long = urllib.request.Request(BASE + "/v1/completions", headers=auth, data=json.dumps(
        {"prompt": "Hi", "max_tokens": 5000, "stream": True}).encode())
    r = urllib.request.urlopen(long, timeout=60)
    r.readline()
    try:
        urllib.request.urlopen(urllib.request.Request(BASE + "/v1/completions", headers=auth,
                                                      data=b'{"prompt": "x"}'), timeout=60)
        raise AssertionError("a request past the room was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 503 and e.headers["Retry-After"] == "1", (e.code, e.headers)
        print("503:", json.loads(e.read())["error"]["message"])
    # SIGTERM with the stream still running: after the grace it is
    # cancelled, and it still ends with a finish_reason and [DONE].
    server.send_signal(signal.SIGTERM)
    signalled = True
    events = [l for l in r.read().decode().split("\n\n") if l.startswith("data: ")]
    assert events[-1] == "data: [DONE]", events[-2:]
    assert json.loads(events[-2][len("data: "):])["choices"][0]["finish_reason"] == "stop", events[-2]
    print(f"SIGTERM: the running stream ended with [DONE] after {len(events)} events")
finally:
    if not signalled:  # a second signal ends the server at once
        server.send_signal(signal.SIGTERM)
    server.communicate(timeout=30)
assert server.returncode == 0, server.returncode
# A time limit per request, on int8 weights: a request for 5,000 tokens
# ends after 0.3 s with finish_reason "length" and fewer tokens.
server = subprocess.Popen([GPT2, "serve", "--model", MODEL, "--port", "0", "--weights", "int8",
                           "--request-timeout", "0.3"], stdout=subprocess.PIPE, text=True)
started = []
for line in server.stdout:
    started.append(line)
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m:
        BASE = f"http://127.0.0.1:{m.group(1)}"
        break
try:
    assert any(l.startswith("weights   int8: ") for l in started), started
    # Sampled from near-uniform logits, a completion may draw the
    # end-of-text token first (about 1 in 50,257 a token) and end "stop":
    # that says nothing of the limit, so such a draw is asked again.
    for _ in range(3):
        answer = complete({"prompt": "Hi", "max_tokens": 5000})
        if answer["choices"][0]["finish_reason"] != "stop":
            break
    assert answer["choices"][0]["finish_reason"] == "length", answer["choices"][0]
    assert 0 < answer["usage"]["completion_tokens"] < 5000, answer["usage"]
    print(f"time limit: {answer['usage']['completion_tokens']} of 5000 tokens in 0.3 s, int8 weights")
finally:
    server.send_signal(signal.SIGTERM)
    server.communicate(timeout=30)
assert server.returncode == 0, server.returncode
print("gpt2 serve answered every request as OpenAI's API does and stopped on SIGTERM")
