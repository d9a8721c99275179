#!/bin/sh
# Two trainers on one --out: the second is refused while the first runs,
# and the folder is free again once the first has gone.
# Usage: cli_out_lock_test.sh GPT2 DATA SCRATCH   (DATA: a prepared dataset)
set -u
gpt2=$1 data=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 99
"$gpt2" train --data "$data" --out "$dir/run" --preset nano --max-steps 100000 --sample-tokens 0 \
  >"$dir/first.txt" 2>&1 &
first=$!
for _ in $(seq 1 600); do  # up to 60 s for its first step
  grep -q '^step ' "$dir/first.txt" 2>/dev/null && break
  sleep 0.1
done
"$gpt2" train --data "$data" --out "$dir/run" --preset nano --max-steps 1 --sample-tokens 0 >"$dir/second.txt" 2>&1
second=$?
kill "$first"
wait "$first"
cat "$dir/second.txt"
[ "$second" -eq 2 ] && grep -q "is in use by another process" "$dir/second.txt" || {
  echo "FAIL: the second trainer was not refused (exit $second)"; exit 1; }
"$gpt2" train --data "$data" --out "$dir/run" --overwrite --preset nano --max-steps 1 --sample-tokens 0 \
  >/dev/null 2>&1 || {
  echo "FAIL: the folder stayed locked after the first trainer ended"; exit 1; }
[ -z "$(find "$dir/run" -name '.lock*')" ] || { echo "FAIL: a lock file was left"; exit 1; }
echo "second trainer refused while the first ran; free after"
