#!/bin/sh
# nanoGPT's ckpt.pt through the commands a user runs, on the files
# nanogpt_ckpt.py wrote: inspect, convert both ways, export, a hostile file
# (exit 2, nothing written, nothing run), and `train --resume` of the
# nanoGPT run, whose checkpoint then goes back to nanoGPT with its state.
#   nanogpt_cli.sh GPT2 FIXTURES CORPUS SCRIPT
set -eu
g=$1 d=$2/nanogpt corpus=$3 py=$4
t=$2/nanogpt-cli
rm -rf "$t"
mkdir -p "$t"
"$g" inspect --checkpoint "$d/ckpt.pt" | grep -q "nanoGPT's ckpt.pt, iter_num 5"
"$g" convert "$d/ckpt_compiled.pt" "$t/m.safetensors" | grep -q "(nanogpt)"
"$g" convert "$t/m.safetensors" "$t/back.pt" --to nanogpt | grep -q "wrote .* (nanogpt)"
/usr/bin/python3 "$py" inspect "$t/back.pt" 0
"$g" export --model "$d/ckpt.pt" --out "$t/m.ts" > /dev/null
if "$g" convert "$d/hostile_reduce.pt" "$t/never.pt" 2> "$t/err"; then exit 1; fi
grep -q "global posix.system is not allowed" "$t/err"
test ! -e "$t/never.pt" && test ! -e "$d/pwned"
# train --resume of nanoGPT's out/ckpt.pt, on a character corpus of its vocabulary.
"$g" prepare --input "$corpus" --out "$t/data" --tokenizer char > /dev/null
mkdir -p "$t/out"
cp "$d/ckpt.pt" "$t/out/ckpt.pt"
"$g" train --out "$t/out" --resume --data "$t/data" --max-steps 8 --sample-tokens 0 > "$t/train.txt"
grep -q "recipe from its config: learning_rate 0.01 -> lr" "$t/train.txt"
grep -q "random batch order does not carry over" "$t/train.txt"
grep -q "resumed .* (nanoGPT) at step 5" "$t/train.txt"
"$g" convert "$t/out/ckpt.pt" "$t/resumed.pt" --to nanogpt | grep -q "iter_num 8, AdamW state"
/usr/bin/python3 "$py" inspect "$t/resumed.pt" 8
echo "nanogpt_cli: all commands ok"
