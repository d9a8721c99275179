#!/bin/sh
# Data-parallel `gpt2 train` as users launch it, on 127.0.0.1 with a tiny
# model and the shipped corpus, prepared once (ctest's fixture) into DATA.
#   cli_dist_test.sh GPT2 DATA WORKDIR torchrun|static|equal|resume|kill|hang|signal|differ|port
# torchrun: Debian's torchrun (--standalone --no_python) starts 2 ranks; they
#           train, rank 0 writes the log and checkpoint. Where this Python
#           torch cannot serve a store with its defaults (Debian 13's 2.6,
#           built without libuv), torchrun must fail saying so, and every
#           mode here runs it through apps/torchrun_classic_store.py, as
#           docs/distributed.md tells such a user to.
# static:   torchrun's multi-machine form on one machine (static rendezvous:
#           torchrun serves the store, rank 0 is its client); trains.
# equal:    2 ranks started by hand, as a scheduler would, each in its own
#           folder: the loss curve (10 steps, val too) equals a 1-process
#           run with grad_accum 2 (the same batches), both ranks end with the
#           same weights (CRC-32), and rank 1 writes nothing.
# resume:   --nproc 2 for 3 steps, then --resume to 6 with 2 ranks equals 6
#           steps in one go bit for bit; --resume with 1 process and
#           grad_accum 2 from the same checkpoint follows the same curve.
# kill:     SIGKILL to rank 1 mid-run: the run ends non-zero within 25 s
#           (no timeout involved: the peer's sockets close), saying which
#           rank died.
# hang:     SIGSTOP to rank 1: rank 0 gives up after --dist-timeout 4 s, the
#           launcher kills rank 1 4 s later: done within 25 s.
# signal:   SIGTERM to the --nproc launcher: it forwards it, the ranks agree
#           on the step to stop after, rank 0 checkpoints it, exit 0.
# differ:   ranks started with different models: both exit 2 before the
#           first broadcast, the differing rank showing both configs.
# port:     rank 0 on a MASTER_PORT that another program listens on: exit 2
#           at once, naming the port, nothing trained or written.
set -eu
gpt2=$1 data=$2 work=$3 mode=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/torchrun.sh"
tiny="--n-layer 2 --n-head 4 --n-embd 32 --block-size 16 --batch-size 4 --eval-steps 4
      --eval-interval 5 --warmup-steps 2 --sample-tokens 0 --dropout 0"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Losses of two logs agree: steps and kinds equal, values within `tol`
# relative. Float sums in another order (two ranks' halves, then the
# allreduce) differ in the last bits, ~1e-7 relative per step; Adam's
# normalised steps keep that from growing much in 10 steps, and the log
# prints 6 digits. 1e-4 is far above both and far below a wrong batch or a
# missing average (which move the loss in the second digit).
same_curve() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import csv, sys
a, b = ({(r[0], r[1]): float(r[2]) for r in csv.reader(open(p)) if r[1] in ("train", "val")}
        for p in sys.argv[1:])
# Every train row in both; val rows where both evaluated (a run that ends
# and resumes evaluates once more at its end).
assert sorted(k for k in a if k[1] == "train") == sorted(k for k in b if k[1] == "train"), (a, b)
common = sorted(set(a) & set(b))
assert len(common) > 0
worst = max(abs(a[k] - b[k]) / abs(b[k]) for k in common)
print("curves: %d rows, largest relative difference %.2g" % (len(common), worst))
assert worst <= 1e-4, worst
EOF
}
weights() { sed -n 's/^weights   rank [0-9]* of [0-9]*: crc32 \(0x[0-9a-f]*\).*/\1/p' "$1"; }

case $mode in
torchrun)
  # --redirects 1 --tee 1: Debian 12's torchrun (torch 1.13 on Python 3.11)
  # dies before starting any worker with its defaults (0), whose enum value
  # Python 3.11's Flag iteration no longer yields; this tees stdout instead.
  if [ "$torchrun_form" = classic_store ]; then
    if $plain_torchrun --standalone --nproc_per_node 2 --no_python "$gpt2" train $tiny \
         --data "$data" --out u --max-steps 3 >u.txt 2>&1 || ! grep -q "use_libuv was requested" u.txt; then
      cat u.txt; echo "torchrun did not fail on libuv as docs/distributed.md says"; exit 1
    fi
  fi
  torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 --no_python \
    "$gpt2" train $tiny --data "$data" --out t --max-steps 3 >t.txt 2>&1 || { cat t.txt; exit 1; }
  grep "dist      world size" t.txt
  grep -q "world size 2, rank 0" t.txt && grep -q "world size 2, rank 1" t.txt
  test "$(grep -c ',train,' t/log.csv)" -eq 3 && test -s t/ckpt.pt
  echo "torchrun: 2 ranks trained 3 steps"
  ;;
static)
  torchrun --nnodes 1 --node_rank 0 --nproc_per_node 2 --master_addr 127.0.0.1 \
    --master_port "$(free_port)" --redirects 1 --tee 1 --no_python \
    "$gpt2" train $tiny --data "$data" --out s --max-steps 3 >s.txt 2>&1 || { cat s.txt; exit 1; }
  grep "dist      world size" s.txt
  test "$(grep -c "(the launcher's)" s.txt)" -eq 2
  test "$(grep -c ',train,' s/log.csv)" -eq 3
  echo "static: 2 ranks on torchrun's store trained 3 steps"
  ;;
equal)
  port=$(free_port)
  mkdir r0 r1
  for r in 0 1; do
    (cd r$r && env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
       MASTER_PORT=$port "$gpt2" train $tiny --data "$data" --out o --max-steps 10 --dist-timeout 30 \
       >../r$r.txt 2>&1) &
  done
  wait
  "$gpt2" train $tiny --data "$data" --out single --max-steps 10 --grad-accum 2 >single.txt
  cat r1.txt
  same_curve r0/o/log.csv single/log.csv
  test -n "$(weights r0.txt)" && test "$(weights r0.txt)" = "$(weights r1.txt)"
  test -z "$(ls -A r1)"
  echo "equal: 10 steps match the 1-process run, weights $(weights r0.txt) on both ranks, rank 1 wrote nothing"
  ;;
resume)
  "$gpt2" train $tiny --data "$data" --nproc 2 --out a --max-steps 6 --lr-decay-steps 6 >a.txt
  "$gpt2" train $tiny --data "$data" --nproc 2 --out b --max-steps 3 --lr-decay-steps 6 >b1.txt
  cp -r b c
  "$gpt2" train --nproc 2 --out b --resume --max-steps 6 --sample-tokens 0 >b2.txt
  "$gpt2" train --out c --resume --max-steps 6 --grad-accum 2 --sample-tokens 0 >c2.txt
  grep -q "resumed   b/ckpt.pt at step 3" b2.txt
  grep ',train,' a/log.csv >a.rows && grep ',train,' b/log.csv | cut -d, -f1-5 >b.rows
  cut -d, -f1-5 a.rows | cmp - b.rows
  test "$(weights a.txt | head -1)" = "$(weights b2.txt | head -1)"
  same_curve c/log.csv a/log.csv
  echo "resume: 2 ranks resumed bit-identical; 1 process x grad_accum 2 resumed on the same curve"
  ;;
kill|hang|signal)
  timeout=$(if [ $mode = hang ]; then echo 4; else echo 60; fi)
  "$gpt2" train $tiny --data "$data" --nproc 2 --out k --max-steps 1000000 --eval-interval 1000000 \
    --dist-timeout $timeout >k.txt 2>&1 &
  launcher=$!
  i=0
  until grep -q ',train,' k/log.csv 2>/dev/null; do
    kill -0 $launcher 2>/dev/null || { cat k.txt; echo "exited before a step was logged"; exit 1; }
    i=$((i + 1)); test $i -lt 600 || { kill $launcher; echo "no step logged in 60 s"; exit 1; }
    sleep 0.1
  done
  rank1=$(sed -n 's/^dist .*rank 1 (local 1 of 2, pid \([0-9]*\)).*/\1/p' k.txt)
  start=$(date +%s)
  case $mode in kill) kill -KILL "$rank1" ;; hang) kill -STOP "$rank1" ;; signal) kill -TERM $launcher ;; esac
  rc=0; wait $launcher || rc=$?
  took=$(($(date +%s) - start))
  cat k.txt
  if [ $mode = signal ]; then
    test $rc -eq 0
    last=$(grep ',train,' k/log.csv | tail -1 | cut -d, -f1)
    grep -q "stopped   by a signal after step $last" k.txt
    test "$(grep -c "^weights   rank [01] of 2: crc32 " k.txt)" -eq 2
    echo "signal: both ranks stopped after step $last, exit 0"
    exit 0
  fi
  test $rc -ne 0 && test $took -le 25
  if [ $mode = kill ]; then
    grep -q "worker rank 1 (pid $rank1) was killed by signal 9" k.txt
  else
    # Gloo words the timeout two ways depending on where rank 0 waits
    # ("Timed out waiting 4000ms", "Application timeout caused pair
    # closure"); the library's own part of the message is the same.
    grep -q "rank 0 of 2: .* failed: .*did not answer within the 4 s timeout" k.txt
  fi
  echo "$mode: rank 1 $mode -> exit $rc after $took s"
  ;;
differ)
  # Rank 1 with a deeper model: both ranks stop before the first broadcast,
  # rank 1 showing both configs, rank 0 pointing at the other's error.
  port=$(free_port)
  mkdir r0 r1
  for r in 0 1; do
    layers=$(if [ $r = 0 ]; then echo 2; else echo 3; fi)
    (cd r$r && env RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$gpt2" train \
       $tiny --n-layer $layers --data "$data" --out o --max-steps 3 --dist-timeout 30 \
       >../r$r.txt 2>&1; echo $? >../rc$r) &
  done
  wait
  cat r0.txt r1.txt
  test "$(cat rc0)" -eq 2 && test "$(cat rc1)" -eq 2
  grep -q "rank 1 of 2: its model and recipe differs from rank 0's" r1.txt
  grep -q "rank 0: GPTConfig(.*n_layer=2" r1.txt && grep -q "rank 1: GPTConfig(.*n_layer=3" r1.txt
  grep -q "rank 0 of 2: another rank's model and recipe differs" r0.txt
  test ! -e r0/o/ckpt.pt
  echo "differ: both ranks refused before the broadcast, naming n_layer 2 and 3"
  ;;
port)
  /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >port.txt &
  holder=$!
  until test -s port.txt; do sleep 0.1; done
  port=$(cat port.txt)
  rc=0
  env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$gpt2" train $tiny --data "$data" \
    --out p --dist-timeout 10 >p.txt 2>&1 || rc=$?
  kill $holder
  cat p.txt
  test $rc -eq 2 && test ! -e p
  grep -q "rank 0 of 2 .* cannot serve the rendezvous store on port $port" p.txt
  echo "port: exit 2 naming port $port"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
