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
# A nanoGPT file converted to nanoGPT keeps its run (iter_num, best loss,
# config, optimizer); to another format, the note names what it drops.
"$g" convert "$d/ckpt.pt" "$t/same.pt" --to nanogpt | grep -q "wrote .* (nanogpt, iter_num 5, AdamW state"
/usr/bin/python3 "$py" inspect "$t/same.pt" 5
"$g" convert "$d/ckpt.pt" "$t/weights.safetensors" |
  grep -q "note .*not carried into safetensors: iter_num 5, best_val_loss 4.25, the AdamW state"
# nanoGPT's own data folder (prepare.py's train.bin, val.bin, meta.pkl; no
# meta.json) in nanoGPT's working folder: the run resumes from out/ckpt.pt
# on data/<config['dataset']> as train.py would, goes back to nanoGPT, and
# nanoGPT's sample.py finds its meta.pkl through the config.
/usr/bin/python3 "$py" data "$t/nano" "$corpus" > /dev/null
mkdir -p "$t/nano/out"
cp "$d/ckpt.pt" "$t/nano/out/ckpt.pt"
(cd "$t/nano" && "$g" train --out out --resume --max-steps 7 --sample-tokens 0) > "$t/nano.txt"
grep -q "^data      data/shakespeare_char (char tokenizer, 96 ids, from nanoGPT's meta.pkl)" "$t/nano.txt"
grep -q "resumed .* (nanoGPT) at step 5" "$t/nano.txt"
"$g" convert "$t/nano/out/ckpt.pt" "$t/nano/out/back.pt" --to nanogpt > /dev/null
/usr/bin/python3 "$py" inspect "$t/nano/out/back.pt" 7
/usr/bin/python3 "$py" sample "$t/nano/out/back.pt" "$t/nano" | grep -q "dataset 'shakespeare_char', 96 characters"
"$g" eval --model "$t/nano/out/ckpt.pt" --data "$t/nano/data/shakespeare_char" |
  grep -q "^data .*from nanoGPT's meta.pkl"
"$g" train --init-from "$d/ckpt.pt" --data "$t/nano/data/shakespeare_char" --out "$t/ft" \
  --max-steps 2 --eval-interval 2 --sample-tokens 0 | grep -q "^data .*from nanoGPT's meta.pkl"
# A run already at its last step says so before anything starts.
if (cd "$t/nano" && "$g" train --out out --resume --max-steps 7) > "$t/past.txt" 2>&1; then exit 1; fi
grep -q "already at step 7, the last of --max-steps 7: nothing to train" "$t/past.txt"
# `gpt2 prepare --format nanogpt` writes nanoGPT's own files, meta.pkl included.
"$g" prepare --input "$corpus" --out "$t/ours" --tokenizer char --format nanogpt > /dev/null
/usr/bin/python3 "$py" prepared "$t/ours" "$corpus"
echo "nanogpt_cli: all commands ok"
