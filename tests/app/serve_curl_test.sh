#!/bin/sh
# `gpt2 serve` with curl as the client: a greedy completion equals `gpt2
# generate`'s text, the same request streamed (server-sent events) gives the
# same text and ends with [DONE], and a bad field is a 400 naming it.
# Python parses the JSON that curl received.
# Usage: serve_curl_test.sh GPT2 CHECKPOINT SCRATCH
set -eu
gpt2=$1 model=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
"$gpt2" serve --model "$model" --port 0 >server.txt 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' server.txt | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat server.txt; echo "the server printed no address"; exit 1; }
url="http://127.0.0.1:$port/v1/completions"
body='{"prompt": "To be, or not", "max_tokens": 12, "temperature": 0}'
curl -sS -H 'Content-Type: application/json' -d "$body" "$url" >plain.json
curl -sSN -H 'Content-Type: application/json' \
  -d '{"prompt": "To be, or not", "max_tokens": 12, "temperature": 0, "stream": true}' "$url" >stream.txt
code=$(curl -s -o bad.json -w '%{http_code}' -d '{"prompt": "x", "max_tokens": "many"}' "$url")
"$gpt2" generate --model "$model" --prompt "To be, or not" --max-new-tokens 12 --temperature 0 \
  2>/dev/null >alone.txt
/usr/bin/python3 - "$code" <<'PY'
import json, sys
plain = json.load(open("plain.json"))["choices"][0]["text"]
alone = open("alone.txt").read()
assert "To be, or not" + plain + "\n" == alone, (plain, alone)
events = [l[6:] for l in open("stream.txt").read().splitlines() if l.startswith("data: ")]
assert events[-1] == "[DONE]", events[-1:]
streamed = "".join(c["text"] for e in events[:-1] for c in json.loads(e)["choices"])
assert streamed == plain, (streamed, plain)
bad = json.load(open("bad.json"))["error"]
assert sys.argv[1] == "400" and bad["param"] == "max_tokens", (sys.argv[1], bad)
print(f"curl: greedy text equals generate's, streamed in {len(events) - 1} events the same, "
      "a bad field 400 naming it")
PY
