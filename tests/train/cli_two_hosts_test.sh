#!/bin/sh
# Data-parallel training across two hosts: two network namespaces made here,
# each with its own address on a veth pair (10.77.N.1 and .2, visible only
# inside them), torchrun's static rendezvous from each, 1 rank per host.
#   cli_two_hosts_test.sh GPT2 DATA WORKDIR equal|kill|stop|cut
# equal: 10 steps equal a 1-process run with --grad-accum 2 (the curve
#        within 1e-4, as in cli_dist_test.sh) and both ranks end with the
#        same weights.
# kill | stop | cut: once rank 0 has checkpointed, rank 1 is killed
#        (SIGKILL), stopped (SIGSTOP), or the link between the hosts is cut
#        (ip link set down). Rank 0's worker ends within 30 s (the 3 s
#        --dist-timeout and a margin) with its error naming the collective
#        that failed and the peer, and its last checkpoint loads; after the
#        cut, rank 1 ends the same way.
# Needs root (CAP_NET_ADMIN) for the namespaces; setup installs iproute2.
set -eu
gpt2=$1 data=$2 work=$3 mode=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/torchrun.sh"
tag=$$
a=g2a$tag b=g2b$tag net=$((tag % 250 + 1))
cleanup() {
  ip netns pids "$a" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$b" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" || {
  echo "FAIL: cannot make network namespaces (run as root: CAP_NET_ADMIN)"; exit 1; }
ip link add "${a}e" type veth peer name "${b}e"
ip link set "${a}e" netns "$a" && ip link set "${b}e" netns "$b"
ip -n "$a" addr add 10.77.$net.1/24 dev "${a}e" && ip -n "$b" addr add 10.77.$net.2/24 dev "${b}e"
for n in "$a" "$b"; do ip -n "$n" link set lo up; done
ip -n "$a" link set "${a}e" up && ip -n "$b" link set "${b}e" up
master=10.77.$net.1
port=$((29600 + tag % 300))

tiny="--n-layer 2 --n-head 4 --n-embd 32 --block-size 16 --batch-size 4 --eval-steps 4
      --eval-interval 5 --warmup-steps 2 --sample-tokens 0 --dropout 0"
steps=10 extra=""
[ "$mode" = equal ] || { steps=100000; extra="--checkpoint-interval 4 --eval-interval 4"; }
host() {  # host RANK NAMESPACE: one torchrun agent and its worker, in its own folder
  mkdir -p h$1
  (cd h$1 && ip netns exec "$2" env GLOO_SOCKET_IFNAME="${2}e" timeout 120 \
     $torchrun_cmd --nnodes 2 --node_rank $1 --nproc_per_node 1 --master_addr $master \
     --master_port $port --redirects 1 --tee 1 --no_python \
     "$gpt2" train $tiny $extra --data "$data" --out o --max-steps $steps --dist-timeout 3 \
     >../h$1.txt 2>&1; echo $? >../rc$1) &
}
host 0 "$a"
host 1 "$b"
weights() { sed -n 's/.*weights   rank [0-9]* of [0-9]*: crc32 \(0x[0-9a-f]*\).*/\1/p' "$1"; }

if [ "$mode" = equal ]; then
  wait
  grep "dist      world size" h0.txt h1.txt
  test "$(cat rc0)" -eq 0 && test "$(cat rc1)" -eq 0 || { cat h0.txt h1.txt; exit 1; }
  "$gpt2" train $tiny --data "$data" --out single --max-steps 10 --grad-accum 2 >single.txt
  /usr/bin/python3 - h0/o/log.csv single/log.csv <<'PY'
import csv, sys
a, b = ({(r[0], r[1]): float(r[2]) for r in csv.reader(open(p)) if r[1] in ("train", "val")}
        for p in sys.argv[1:])
assert sorted(a) == sorted(b), (a, b)
worst = max(abs(a[k] - b[k]) / abs(b[k]) for k in a)
assert worst <= 1e-4, worst
PY
  test -n "$(weights h0.txt)" && test "$(weights h0.txt)" = "$(weights h1.txt)"
  echo "equal: two hosts at $master trained the 1-process curve, weights $(weights h0.txt) on both"
  exit 0
fi

i=0
until [ -f h0/o/ckpt.pt ] && [ "$(grep -c ',train,' h0/o/log.csv 2>/dev/null)" -ge 6 ]; do
  i=$((i + 1)); [ $i -lt 600 ] || { cat h0.txt h1.txt; echo "FAIL: no checkpoint in 60 s"; exit 1; }
  sleep 0.1
done
# Each worker's pid: the gpt2 process whose environment says RANK=N and
# MASTER_PORT=$port (not from its output, which torchrun 2.6's tee shows
# only at the end).
pid_of() {
  for p in /proc/[0-9]*; do
    readlink "$p/exe" 2>/dev/null | grep -q gpt2 || continue
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "RANK=$1" || continue
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "MASTER_PORT=$port" && echo "${p#/proc/}"
  done | head -1
}
i=0
until [ -n "$(pid_of 0)" ] && [ -n "$(pid_of 1)" ]; do
  i=$((i + 1)); [ $i -lt 300 ] || { cat h0.txt h1.txt; echo "FAIL: no worker pids in 30 s"; exit 1; }
  sleep 0.1
done
worker=$(pid_of 1)
rank0=$(pid_of 0)
start=$(date +%s)
case $mode in
kill) kill -KILL "$worker" ;;
stop) kill -STOP "$worker" ;;
cut) ip -n "$a" link set "${a}e" down ;;
esac
# Rank 0's worker (not its torchrun agent, which waits on its own terms)
# must end, with its error, within the timeout and a margin.
while kill -0 "$rank0" 2>/dev/null; do
  [ $(( $(date +%s) - start )) -lt 30 ] || { echo "FAIL: rank 0 still running 30 s after the $mode"; exit 1; }
  sleep 0.2
done
took=$(( $(date +%s) - start ))
grep -E "gpt2: error" h0.txt | head -2
grep -Eq "gpt2: error: rank 0 of 2: (the|an) .* failed: .*; the peer \(rank 1\) has died" h0.txt || {
  cat h0.txt; echo "FAIL: no error naming the collective"; exit 1; }
if [ "$mode" = cut ]; then  # rank 1 is cut off too: it ends the same way
  while kill -0 "$worker" 2>/dev/null; do
    [ $(( $(date +%s) - start )) -lt 30 ] || { echo "FAIL: rank 1 still running 30 s after the cut"; exit 1; }
    sleep 0.2
  done
  grep -Eq "gpt2: error: rank 1 of 2: (the|an) .* failed: .*; the peer \(rank 0\) has died" h1.txt || {
    cat h1.txt; echo "FAIL: rank 1's error does not name the collective"; exit 1; }
fi
"$gpt2" inspect --checkpoint h0/o/ckpt.pt >inspect.txt || { cat inspect.txt; echo "FAIL: rank 0's checkpoint does not load"; exit 1; }
[ "$mode" = stop ] && kill -CONT "$worker" 2>/dev/null || true
echo "$mode: rank 0 stopped in $took s naming the collective; its checkpoint loads"
