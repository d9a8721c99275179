#!/usr/bin/env bash
# One row of the bad-input table (bad_inputs.tsv): runs `gpt2 ARGS...` in a
# fresh scratch folder (a copy of SCRATCH_ROOT/.template) and checks the exit
# code, a fragment of the message,
# and that no file in the folder changed (sha256 before and after) and none
# appeared. {dir} in an argument is the scratch folder, which holds:
#   ckpt.pt   a valid small checkpoint      text.txt  a short text file
#   fifo      a FIFO (reading it blocks)    loop      a symbolic link to itself
#   ids.txt   "31373 99999"
#   fifo.safetensors, fifo.bin   FIFOs named as weight files
#   hf_fifo/   a Hugging Face folder whose model.safetensors is a FIFO
#   hf_config_fifo/  one whose config.json is a FIFO (weights from ckpt.pt)
#   data_fifo/ a prepared-data folder whose meta.json is a FIFO
#   shards_bad/ a folder of llm.c shards whose train shard has magic 0
#   shared/    a.safetensors (from ckpt.pt) beside a config.json that says n_head 1
#   utf8.safetensors  a header whose one key is not UTF-8
#   chars/     text.txt prepared with the character tokenizer
#   huge_log.csv  a training log whose one loss is 1e308
# plus every file of BAD_CHECKPOINTS (make_bad_checkpoints: half.pt, nan.pt,
# nan.safetensors, nan.bin, torch_save.pt, code.pt). {empty} is an empty argument.
# Usage: bad_input.sh GPT2 SMALL_CHECKPOINT SCRATCH_ROOT TABLE ROW_NAME BAD_CHECKPOINTS
# ROW_NAME --setup makes the template once (it runs gpt2 convert twice and prepare once); each
# row then copies it (cp -a: FIFOs stay FIFOs, the link stays a link).
set -u
gpt2=$1 checkpoint=$2 root=$3 table=$4 name=$5 bad_checkpoints=$6
template=$root/.template
if [ "$name" = "--setup" ]; then
  dir=$template
  rm -rf "$dir" && mkdir -p "$dir" || exit 99
  cp "$checkpoint" "$dir/ckpt.pt" && cp "$bad_checkpoints"/* "$dir/" && printf 'hello world' >"$dir/text.txt" &&
    printf '31373 99999' >"$dir/ids.txt" &&
    printf '{"ctx": "a", "endings": ["b", "c"], "label": 0}\n{"ctx": "a",\n' >"$dir/choices-json.jsonl" &&
    printf '\n{"ctx": "a", "endings": ["b", "c"], "label": 2}\n' >"$dir/choices-label.jsonl" &&
    printf '{"ctx": "a", "endings": ["b"], "label": 0}\n' >"$dir/choices-one.jsonl" &&
    printf '{"ctx": "a", "endings": ["b", 7], "label": 0}\n' >"$dir/choices-type.jsonl" &&
    printf '[1, 2]\n' >"$dir/choices-array.jsonl" && printf '\n\n' >"$dir/choices-blank.jsonl" &&
    mkfifo "$dir/fifo" "$dir/fifo.safetensors" "$dir/fifo.bin" && ln -s loop "$dir/loop" &&
    mkdir "$dir/hf_fifo" "$dir/hf_config_fifo" "$dir/data_fifo" && mkfifo "$dir/hf_fifo/model.safetensors" &&
    "$gpt2" convert "$checkpoint" "$dir/hf_config_fifo/model.safetensors" >/dev/null &&
    rm "$dir/hf_config_fifo/config.json" && mkfifo "$dir/hf_config_fifo/config.json" &&
    mkfifo "$dir/data_fifo/meta.json" && mkdir "$dir/shards_bad" &&
    head -c 1032 /dev/zero >"$dir/shards_bad/x_train_000001.bin" &&
    head -c 1032 /dev/zero >"$dir/shards_bad/x_val_000000.bin" &&
    mkdir "$dir/shared" && "$gpt2" convert "$checkpoint" "$dir/shared/a.safetensors" >/dev/null &&
    printf '{"n_head": 1}' >"$dir/shared/config.json" &&
    "$gpt2" prepare --input "$dir/text.txt" --out "$dir/chars" --tokenizer char >/dev/null &&
    printf 'step,split,loss,lr,grad_norm,tokens_per_s,step_s\n1,train,1e308,0.001,1,1,1\n' \
      >"$dir/huge_log.csv" &&
    printf '\072\000\000\000\000\000\000\000{"\377\376":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}   ' \
      >"$dir/utf8.safetensors" || exit 99
  echo "bad-input scratch template made in $dir"
  exit 0
fi
dir=$root/$name
row=$(grep -P "^\Q$name\E\t" "$table") || { echo "no row '$name' in $table"; exit 99; }
IFS=$'\t' read -r -a fields <<<"$row"
code=${fields[1]} fragment=${fields[2]//\{dir\}/$dir}
set -- "${fields[@]:3}"
rm -rf "$dir" && cp -a "$template" "$dir" || exit 99
test -p "$dir/fifo" && test -L "$dir/loop" || { echo "the template's copy lost its FIFO or link"; exit 99; }
snapshot() { (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum; ls -A); }
before=$(snapshot)
args=()
for a in "$@"; do
  [ "$a" = "{empty}" ] && a=""
  args+=("${a//\{dir\}/$dir}")
done
out=$("$gpt2" "${args[@]}" 2>&1 </dev/null)
rc=$?
after=$(snapshot)
echo "$out"
echo "exit $rc"
status=0
[ "$rc" -eq "$code" ] || { echo "FAIL: expected exit $code"; status=1; }
case "$out" in *"$fragment"*) ;; *) echo "FAIL: message lacks: $fragment"; status=1 ;; esac
[ "$before" = "$after" ] || { echo "FAIL: files changed"; diff <(echo "$before") <(echo "$after"); status=1; }
exit $status
