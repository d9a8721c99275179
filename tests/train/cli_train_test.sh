#!/bin/sh
# `gpt2 train` as a user runs it, on a tiny model and the shipped corpus.
#   cli_train_test.sh GPT2 CORPUS WORKDIR resume|resume_flags|nan|signal|sample_signal
# resume: 6 steps in one process == 3 steps, exit, --resume, 3 more (losses
#         in log.csv and every weight, bit for bit; weights compared by
#         Debian's python3-torch).
# resume_flags: the first run's command with --resume appended resumes
#         (model flags equal to the checkpoint's, one spelled otherwise:
#         --dropout 1e-1 for 0.1), the recipe readable from Python; a model
#         flag or --preset that differs exits 2 naming the flag and both
#         values, and leaves the checkpoint alone.
# nan:    steps 5-7 get a NaN loss, --max-skips 3: exit 3, the checkpoint is
#         still step 4's, the log shows the skipped steps.
# signal: SIGTERM once the log shows a step: exit 0, a checkpoint of the last
#         logged step, a message saying how to resume, and the resume works.
# sample_signal: SIGTERM while the closing sample is printed ends it: exit 0,
#         the checkpoint whole.
set -eu
gpt2=$1 corpus=$2 work=$3 mode=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$gpt2" prepare --input "$corpus" --out data --tokenizer char >/dev/null
tiny="--data data --n-layer 2 --n-head 4 --n-embd 32 --block-size 16 --batch-size 4
      --eval-steps 2 --eval-interval 2 --warmup-steps 2 --sample-tokens 20 --dropout 0.1"
train_rows() { grep ',train,' "$1" | cut -d, -f1-5; }
ckpt_step() { "$gpt2" inspect --checkpoint "$1" | sed -n 's/.*(trained \([0-9]*\) steps).*/\1/p'; }

case $mode in
resume)
  "$gpt2" train $tiny --out a --max-steps 6 --lr-decay-steps 6 >a.txt
  "$gpt2" train $tiny --out b --max-steps 3 --lr-decay-steps 6 >b1.txt
  "$gpt2" train --out b --resume --max-steps 6 >b2.txt
  grep -q "resumed   b/ckpt.pt at step 3" b2.txt
  train_rows a/log.csv >a.rows && train_rows b/log.csv >b.rows
  test "$(wc -l <a.rows)" -eq 6
  cmp a.rows b.rows
  /usr/bin/python3 -c '
import sys, torch
a, b = (torch.jit.load(p).state_dict() for p in ("a/ckpt.pt", "b/ckpt.pt"))
assert a.keys() == b.keys()
bad = [k for k in a if not torch.equal(a[k], b[k])]
assert not bad, bad
print("weights: %d tensors bit-identical" % len(a))'
  echo "resume: 6 losses and all weights bit-identical"
  ;;
resume_flags)
  "$gpt2" train $tiny --out r --max-steps 2 --lr-decay-steps 4 >r1.txt
  "$gpt2" train $tiny --out r --max-steps 4 --lr-decay-steps 4 --dropout 1e-1 --resume >r2.txt
  grep -q "resumed   r/ckpt.pt at step 2" r2.txt
  test "$(ckpt_step r/ckpt.pt)" -eq 4
  # Python reads the recipe where the config is: typed attributes of the metadata.
  /usr/bin/python3 -c '
import torch
meta = torch.jit.load("r/ckpt.pt").gpt2
assert (meta.n_layer, meta.dropout, meta.train_options.max_steps) == (2, 0.1, 4), meta.train_options'
  refused() {  # refused WANT ARGS...: exit 2, WANT on stderr, the checkpoint unchanged
    want=$1; shift
    rc=0; "$gpt2" train "$@" >refused.txt 2>refused.err || rc=$?
    cat refused.err
    test $rc -eq 2 && grep -qF -- "$want" refused.err && test "$(ckpt_step r/ckpt.pt)" -eq 4
  }
  refused "--n-layer 3 differs from the checkpoint's n_layer 2 (r/ckpt.pt); a resumed run keeps its model" \
    $tiny --out r --max-steps 6 --n-layer 3 --resume
  refused "--no-bias differs from the checkpoint's bias true (r/ckpt.pt)" --out r --resume --no-bias
  refused "--preset gpt2 (its block_size 1024) differs from the checkpoint's block_size 16" \
    --out r --resume --preset gpt2
  echo "resume_flags: equal model flags resumed; differing ones refused naming flag and both values"
  ;;
nan)
  rc=0
  "$gpt2" train $tiny --out n --max-steps 10 --checkpoint-interval 2 --max-skips 3 \
    --inject-nan-at 5 6 7 >n.txt 2>n.err || rc=$?
  cat n.err
  test $rc -eq 3
  grep -q "3 non-finite steps in a row up to step 7" n.err
  test "$(grep -c ',skipped,nan,' n/log.csv)" -eq 3
  test "$(ckpt_step n/ckpt.pt)" -eq 4
  echo "nan: exit 3, 3 skipped steps logged, checkpoint still at step 4"
  ;;
signal)
  "$gpt2" train $tiny --out s --max-steps 1000000 --eval-interval 1000000 >s.txt 2>&1 &
  pid=$!
  i=0
  until grep -q ',train,' s/log.csv 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { cat s.txt; echo "train exited before a step was logged"; exit 1; }
    i=$((i + 1)); test $i -lt 1200 || { kill -9 $pid; echo "no step logged in 120 s"; exit 1; }
    sleep 0.1
  done
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  tail -4 s.txt
  test $rc -eq 0
  grep -q "gpt2 train --out s --resume" s.txt
  last=$(grep ',train,' s/log.csv | tail -1 | cut -d, -f1)
  test "$(ckpt_step s/ckpt.pt)" -eq "$last"
  "$gpt2" train --out s --resume --max-steps $((last + 2)) --sample-tokens 0 >s2.txt
  test "$(grep -c ',train,' s/log.csv)" -eq $((last + 2))
  echo "signal: exit 0 after step $last, checkpoint at step $last, resumed to $((last + 2))"
  ;;
sample_signal)
  long_sample=$(echo $tiny | sed 's/--sample-tokens 20/--sample-tokens 1000000/')
  "$gpt2" train $long_sample --out p --max-steps 2 >p.txt 2>&1 &
  pid=$!
  i=0
  until grep -q '^sample ' p.txt 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { cat p.txt; echo "train exited before its sample"; exit 1; }
    i=$((i + 1)); test $i -lt 1200 || { kill -9 $pid; echo "no sample in 120 s"; exit 1; }
    sleep 0.1
  done
  sleep 0.5
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  tail -2 p.txt
  test $rc -eq 0 && grep -q "stopped   by a signal during the sample" p.txt
  test "$(ckpt_step p/ckpt.pt)" -eq 2
  echo "sample_signal: SIGTERM during the sample: exit 0, checkpoint at step 2"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
