#!/bin/sh
# `gpt2 train --init-from` as a user runs it, on a tiny char model trained
# here and saved in each of the three formats.
#   cli_finetune_test.sh GPT2 CORPUS WORKDIR
# - Step 0's val of a fine-tune from the checkpoint, the safetensors file and
#   the llm.c file equals the last val of the run that wrote them (same seed,
#   same eval settings), and the fine-tune beats as many steps from scratch.
# - `gpt2 eval --data` of each file scores the whole val split (every token
#   but the first) with one loss for all three.
# - --block-size below the file's crops it; above it, another architecture
#   flag, char data of another vocabulary, --resume with --init-from and the
#   finetune preset without a model are refused (exit 2; CLI11's 108 for the
#   flags that exclude each other) before OUT is made.
set -eu
gpt2=$1 corpus=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$gpt2" prepare --input "$corpus" --out data --tokenizer char >/dev/null
head -c 4000 "$corpus" >small.txt
"$gpt2" prepare --input small.txt --out bpe --tokenizer gpt2 >/dev/null
recipe="--data data --batch-size 4 --eval-steps 4 --eval-interval 5 --warmup-steps 2
        --sample-tokens 0 --lr 3e-3 --checkpoint-interval 0"
tiny="--n-layer 2 --n-head 4 --n-embd 32 --block-size 16"
val_at() { grep "^$2,val," "$1" | cut -d, -f3; }
last_val() { grep ',val,' "$1" | tail -1 | cut -d, -f3; }

"$gpt2" train $recipe $tiny --out pre --max-steps 40 >pre.txt
"$gpt2" convert pre/ckpt.pt pre.safetensors >/dev/null
"$gpt2" convert pre/ckpt.pt pre.bin >/dev/null
want=$(last_val pre/log.csv)
"$gpt2" train $recipe $tiny --out scratch --max-steps 10 >scratch.txt
scratch=$(last_val scratch/log.csv)

eval_loss=""
for model in pre/ckpt.pt pre.safetensors pre.bin; do
  out=ft-$(basename "$model" | tr . -)
  "$gpt2" train $recipe --init-from "$model" --preset nano --out "$out" --max-steps 10 >"$out.txt"
  grep -q "^init-from $model (" "$out.txt"
  got=$(val_at "$out/log.csv" 0)
  test "$got" = "$want" || { echo "$model: step 0 val $got, the pretraining run ended at $want"; exit 1; }
  tuned=$(last_val "$out/log.csv")
  awk -v t="$tuned" -v s="$scratch" 'BEGIN { exit !(t < s) }' ||
    { echo "$model: fine-tuned val $tuned does not beat scratch $scratch"; exit 1; }
  "$gpt2" eval --model "$model" --data data --split val >"$out.eval"
  val_tokens=$(sed -n 's/.*, val \([0-9]*\)$/\1/p' pre.txt)
  grep -q "^scored    $((val_tokens - 1)) tokens" "$out.eval"
  loss=$(sed -n 's/^loss *\([0-9.]*\) .*/\1/p' "$out.eval")
  test -z "$eval_loss" || test "$loss" = "$eval_loss"
  eval_loss=$loss
  echo "$model: step 0 val $got = pretraining's last; after 10 steps $tuned < scratch $scratch; whole val $loss"
done

"$gpt2" train $recipe --init-from pre.bin --preset nano --block-size 8 --out crop --max-steps 1 >crop.txt
grep -q "block_size cropped 16 -> 8" crop.txt
grep -q "^config    GPTConfig(block_size=8," crop.txt

refused() {  # refused WANT ARGS...: exit $code (2), WANT on stderr, no OUT folder made
  want=$1; shift
  rm -rf refused-out
  rc=0; "$gpt2" train "$@" --out refused-out >refused.txt 2>refused.err || rc=$?
  cat refused.err
  test $rc -eq "${code:-2}" && grep -qF -- "$want" refused.err && test ! -e refused-out
}
refused "--block-size 32 differs from pre.bin's block_size 16; its wpe has that many rows" \
  $recipe --init-from pre.bin --block-size 32
refused "--n-embd 64 differs from pre.bin's n_embd 32; --init-from takes the model from the file" \
  $recipe --init-from pre.bin --n-embd 64
refused "pre.bin's vocab_size 65 is smaller than the data's 50257 ids" \
  --data bpe --init-from pre.bin
"$gpt2" train $recipe --vocab-size 80 --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 \
  --out wide --max-steps 1 >/dev/null
refused "data is character-level data with 65 ids, but wide/ckpt.pt has vocab_size 80" \
  $recipe --init-from wide/ckpt.pt
code=108  # CLI11's code for flags that exclude each other
refused "--init-from excludes --resume" $recipe --init-from pre.bin --resume
code=2
refused "the finetune preset is a recipe for a model read from a file: give --init-from MODEL" \
  $recipe --preset finetune
echo "fine-tuning from all three formats starts at the pretrained val loss and beats scratch"
