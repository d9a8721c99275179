#!/bin/sh
# Training tokens/s of the nano preset: 1 process (this machine's default
# threads) against `gpt2 train --nproc 2` (C/2 threads each), and 1 process
# with grad_accum 2 (the same 32 x 64 tokens per step as the two ranks).
# The configurations alternate, ROUNDS times, so that load from elsewhere
# hits all of them alike; each figure is the median over the steps after
# the first 5 of a run, then the median and range over the rounds.
#   dist_tokens_per_s.sh GPT2 [ROUNDS=3] [STEPS=60] [WORKDIR=/tmp/gpt2-dist-bench]
set -eu
gpt2=$1 rounds=${2:-3} steps=${3:-60} work=${4:-/tmp/gpt2-dist-bench}
mkdir -p "$work" && cd "$work"
common="--preset nano --max-steps $steps --eval-interval 100000 --eval-steps 1 --sample-tokens 0
        --checkpoint-interval 0"
median_tps() {  # median tokens/s of log.csv's train rows after step 5
  grep ',train,' "$1" | awk -F, '$1 > 5 { print $6 }' | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
: >results.txt
for r in $(seq "$rounds"); do
  "$gpt2" train $common --out one >one.txt
  echo "1x2 $(median_tps one/log.csv)" >>results.txt
  "$gpt2" train $common --out two --nproc 2 >two.txt
  echo "2x1 $(median_tps two/log.csv) $(grep -o 'gradient allreduce [0-9.]* ms per step' two.txt | head -1)" >>results.txt
  "$gpt2" train $common --out acc --grad-accum 2 >acc.txt
  echo "1x2-accum2 $(median_tps acc/log.csv)" >>results.txt
done
grep '^runtime' one.txt two.txt | sort -u
for c in 1x2 2x1 1x2-accum2; do
  grep "^$c " results.txt | awk -v c="$c" '{ print $2 }' | sort -g |
    awk -v c="$c" '{ v[NR] = $1 } END { printf "%-11s median %.0f tokens/s, range %.0f-%.0f over %d rounds\n", c, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done
grep '^2x1' results.txt | sed 's/^2x1 [0-9.]* /2x1 /'
