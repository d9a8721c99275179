#!/bin/sh
# A rank whose MASTER_PORT reaches some other program, not rank 0's store:
# it must end at once with exit 2 and a message naming the address, the port
# and the likely cause, never with an abort (the store client allocates the
# length a peer announces: 2^40 bytes was std::bad_alloc escaping).
#   cli_stranger_test.sh GPT2 WORKDIR huge|garbage
set -eu
gpt2=$1 work=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$here/stranger_store.py" port "$mode" &
stranger=$!
trap 'kill $stranger 2>/dev/null || true' EXIT
i=0
while [ ! -s port ]; do i=$((i + 1)); [ $i -lt 100 ] || { echo "FAIL: no port"; exit 1; }; sleep 0.1; done
port=$(cat port)
start=$(date +%s)
rc=0
WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  timeout 60 "$gpt2" train --out run --max-steps 2 --n-layer 1 --n-head 2 --n-embd 16 \
  --block-size 8 --dist-timeout 5 > out.txt 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
cat out.txt
[ "$rc" -eq 2 ] || { echo "FAIL: exit $rc, not 2"; exit 1; }
[ "$took" -le 20 ] || { echo "FAIL: took $took s"; exit 1; }
grep -q "the program at 127.0.0.1:$port answered as no rendezvous store does" out.txt ||
  { echo "FAIL: the message does not name the stranger"; exit 1; }
grep -q "MASTER_PORT $port" out.txt || { echo "FAIL: the message does not name the port"; exit 1; }
echo "$mode: refused in $took s naming 127.0.0.1:$port"
