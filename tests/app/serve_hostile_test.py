"""`gpt2 serve` against hostile clients, over HTTP on 127.0.0.1.

Each case sends what a careless or hostile client might, checks the answer
(a 400 or 413 with OpenAI's error object naming the field, never a library's
exception text; or a 200 for values at the edges of the API's ranges), and
then checks that the server still answers /health and a normal completion:

- bodies nested 100,000 levels deep in every field, a repeated key, numbers
  past double's range, n = 0, prompt lists of two kinds;
- temperature and top_p down to the denormals, plain, streamed and seeded;
- a chunked body past the 1 MiB limit;
- 16 clients sending headers slowly, 10 announcing a body and sending
  nothing, 64 idle connections, all open at once while /health is asked;
- 8 non-streamed requests whose clients go away: their decoding stops.

Usage: /usr/bin/python3 serve_hostile_test.py GPT2 CHECKPOINT
"""
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

GPT2, MODEL = sys.argv[1:3]

server = subprocess.Popen([GPT2, "serve", "--model", MODEL, "--port", "0", "--max-batch", "8"],
                          stdout=subprocess.PIPE, text=True)
port = None
for line in server.stdout:
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m:
        port = int(m.group(1))
        break
assert port, "the server printed no address"
# Keep reading the log so that the server never blocks on a full pipe.
threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()


def send(method, path, body=None, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        conn.close()


def still_serving(case):
    assert server.poll() is None, f"{case}: the server ended with {server.returncode}"
    t0 = time.time()
    status, text = send("GET", "/health", timeout=5)
    assert status == 200 and json.loads(text)["status"] == "ok", (case, status, text)
    assert time.time() - t0 < 3, f"{case}: /health took {time.time() - t0:.1f} s"
    status, text = send("POST", "/v1/completions",
                        {"prompt": "Hello", "max_tokens": 4, "temperature": 0})
    assert status == 200, (case, status, text)
    assert len(json.loads(text)["choices"]) == 1, (case, text)


def refused(case, body, status=400, param=None, path="/v1/completions", raw=False):
    got, text = send("POST", path, body if raw else json.dumps(body))
    assert got == status, (case, got, text[:300])
    err = json.loads(text)["error"]
    assert "json.exception" not in err["message"] and "c10" not in err["message"], (case, err)
    if param is not None:
        assert err["param"] == param, (case, err)
    still_serving(case)
    return err["message"]


def answered(case, body):
    got, text = send("POST", "/v1/completions", body)
    assert got == 200, (case, got, text[:300])
    if body.get("stream"):
        assert text.rstrip().endswith("data: [DONE]"), (case, text[-200:])
    else:
        assert len(json.loads(text)["choices"]) == body.get("n", 1), (case, text)
    still_serving(case)


try:
    still_serving("start")

    # Bodies the guarded parser refuses before any field is read.
    deep = "[" * 100000 + "]" * 100000
    for field in ["prompt", "max_tokens", "logprobs", "stop"]:
        msg = refused(f"deep {field}", f'{{"{field}": {deep}}}', raw=True)
        assert "deeper than 32 levels" in msg, msg
    msg = refused("deep tokens", f'{{"tokens": {deep}}}', path="/detokenize", raw=True)
    assert "deeper than 32 levels" in msg, msg
    refused("repeated key", '{"prompt": "x", "n": 1, "n": 2}', raw=True)
    for field in ["temperature", "top_p", "max_tokens"]:
        for v in ["1e400", "-1e400"]:
            refused(f"{field} {v}", f'{{"prompt": "x", "{field}": {v}}}', raw=True)
    refused("n 0", {"prompt": "x", "n": 0}, param="n")
    refused("mixed prompts", {"prompt": ["a", [1, 2]]}, param="prompt")
    refused("mixed prompts", {"prompt": [[1, 2], "a"]}, param="prompt")
    refused("temperature 3", {"prompt": "x", "temperature": 3}, param="temperature")

    # Values at the edges of the ranges sample, never fail.
    for t in [1e-39, 1e-45, 5e-324, 1e-300]:
        answered(f"temperature {t}", {"prompt": "x", "max_tokens": 3, "temperature": t})
        answered(f"temperature {t} seeded", {"prompt": "x", "max_tokens": 3, "temperature": t,
                                             "seed": 5, "n": 2})
        answered(f"temperature {t} streamed", {"prompt": "x", "max_tokens": 3, "temperature": t,
                                               "stream": True})
    for p in [1e-300, 5e-324]:
        answered(f"top_p {p}", {"prompt": "x", "max_tokens": 3, "top_p": p})
        answered(f"top_p {p} streamed", {"prompt": "x", "max_tokens": 3, "top_p": p, "stream": True})

    # A chunked body counts against the same limit as any other.
    def chunks():
        piece = b'{"prompt": "' + b"a" * 65536
        yield piece
        for _ in range(31):
            yield b"a" * 65536
        yield b'"}'
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/completions", body=chunks(), encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        r = conn.getresponse()
        assert r.status == 413, (r.status, r.read()[:200])
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed the connection once past the limit
    finally:
        conn.close()
    still_serving("chunked 2 MiB")

    # Slow, silent and idle connections, all open at once.
    held = []
    for i in range(16):  # headers a byte at a time
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        held.append(s)
    for i in range(10):  # a body announced and never sent
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{")
        held.append(s)
    for i in range(64):  # connected, nothing sent
        held.append(socket.create_connection(("127.0.0.1", port)))
    for second in range(4):
        for s in held[:16]:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        still_serving(f"slow and idle clients, second {second}")
        time.sleep(1)
    for s in held:
        s.close()

    # Non-streamed requests whose clients leave: their choices are cancelled.
    gone = []
    for i in range(8):
        s = socket.create_connection(("127.0.0.1", port))
        # Greedy: this model's greedy text repeats without <|endoftext|>.
        body = json.dumps({"prompt": "x", "max_tokens": 60000, "temperature": 0}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        gone.append(s)
    deadline = time.time() + 15
    while time.time() < deadline:  # each waits past the first second: the chunked answer
        status, text = send("GET", "/health")
        if json.loads(text)["running"] == 8:
            break
        time.sleep(0.2)
    assert json.loads(text)["running"] == 8, text
    time.sleep(1.5)
    for s in gone:
        s.close()
    deadline = time.time() + 15
    while time.time() < deadline:
        status, text = send("GET", "/health")
        if json.loads(text)["running"] == 0:
            break
        time.sleep(0.5)
    assert json.loads(text)["running"] == 0, f"the abandoned requests still decode: {text}"
    still_serving("abandoned requests")
    print(f"the server survived every hostile case and answered after each")
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
