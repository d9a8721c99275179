"""`gpt2 serve` as a client sees it, for the GPU check (tests/gpu/run.sh).

Starts the server command given after `--` (it must say `--port 0`), reads
the address it prints, and asks for a greedy completion over HTTP with
Python's standard library. With --openai, also through OpenAI's Python
client (the `openai` package, from the wheels tests/gpu/deps.sh carries):
/v1/models, and the same completion streamed, whose chunks must concatenate
to the plain completion's text with the same finish_reason. Then SIGTERM:
the server must exit 0 within 30 s. One line per check; exit 1 at the first
that fails.

Usage: python3 serve_check.py [--openai] -- GPT2 serve --model M --port 0 ...
"""
import json
import re
import signal
import subprocess
import sys
import threading
import urllib.request

BODY = {"prompt": "The meaning of life is", "max_tokens": 16, "temperature": 0}


def start(command):
    """The server's process and port; its output is copied to ours."""
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    for line in server.stdout:
        print(line, end="", flush=True)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            # Go on copying, so that the server never blocks on a full pipe.
            threading.Thread(target=lambda: [print(l, end="", flush=True) for l in server.stdout],
                             daemon=True).start()
            return server, int(m.group(1))
    raise SystemExit(f"the server exited ({server.wait()}) without printing its address")


def plain_completion(base):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(BODY).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        reply = json.loads(r.read())
    choice, usage = reply["choices"][0], reply["usage"]
    if usage["completion_tokens"] < 1 or choice["finish_reason"] not in ("length", "stop"):
        raise SystemExit(f"a completion without tokens or reason: {reply}")
    print(f"check: completion of {usage['completion_tokens']} tokens, "
          f"finish_reason {choice['finish_reason']}: {choice['text']!r}")
    return choice


def openai_stream(base, plain):
    import openai

    client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=60)
    model = client.models.list().data[0].id
    chunks, finish = [], None
    for chunk in client.completions.create(model=model, stream=True, **BODY):
        if chunk.choices:
            chunks.append(chunk.choices[0].text or "")
            finish = chunk.choices[0].finish_reason or finish
    text = "".join(chunks)
    if (text, finish) != (plain["text"], plain["finish_reason"]):
        raise SystemExit(f"streamed {text!r} ({finish}), the plain completion {plain['text']!r} "
                         f"({plain['finish_reason']})")
    print(f"check: openai {openai.__version__} streamed the same text in {len(chunks)} chunks "
          f"from model {model!r}")


def main():
    args = sys.argv[1:]
    if "--" not in args or not args[args.index("--") + 1:]:
        raise SystemExit(__doc__)
    command = args[args.index("--") + 1:]
    server, port = start(command)
    try:
        base = f"http://127.0.0.1:{port}"
        plain = plain_completion(base)
        if "--openai" in args[:args.index("--")]:
            openai_stream(base, plain)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise SystemExit("the server did not stop within 30 s of SIGTERM")
    if code != 0:
        raise SystemExit(f"the server exited {code} after SIGTERM, not 0")
    print("check: SIGTERM stopped the server with exit 0")


if __name__ == "__main__":
    main()
