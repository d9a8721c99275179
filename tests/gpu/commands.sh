# shellcheck shell=bash disable=SC2154 # run.sh sets build, pyenv, pfx, gpt2, root, py, here, deps
# The `gpt2` commands on CUDA as a user runs them, for tests/gpu/run.sh,
# which sources this and calls run_commands after the CUDA tests:
#   a. the README demo, `gpt2 train --overwrite` (the nano preset, 800 steps
#      on the shipped corpus), with --device cuda --dtype bfloat16, and the
#      same demo on the CPU at the same time in the background; their last
#      val losses at the same step agree within 2%; then `gpt2 inspect` and
#      `gpt2 export` of the GPU's checkpoint;
#   b. `generate`, `eval` and `serve` with --device cuda at each --dtype, all
#      at once (checks, not timings): eval scores a slice of the corpus with
#      the demo's checkpoint (its characters as tokens, from --data);
#      generate and serve speak GPT-2's BPE, so they load a model of GPT-2's
#      vocabulary with fresh weights (`gpt2 inspect --save`);
#   c. `serve --device cuda` streaming a completion to OpenAI's Python client,
#      installed from DEPS/wheels (tests/gpu/deps.sh) into BUILD/pyenv and on
#      PYTHONPATH for this step only;
#   d. data-parallel training through NCCL at world size 1, under torchrun;
#   e. `init-study frontier --profile gpt2-gpu` (tests/gpu/frontier.sh runs
#      it whole) cut to two runs of 20 steps at 12 blocks: 2n and zero.
# Needs from run.sh: gpt2, pfx, py, here, root, deps, build, and steps.sh.

# val_pair GPU_LOG CPU_LOG: "STEP GPU_LOSS CPU_LOSS" at the last val step
# that both runs' log.csv hold.
val_pair() {
  [[ -f $1 && -f $2 ]] || return 0
  awk -F, 'FNR == 1 { f++ }
           $2 == "val" { v[f, $1] = $3; if (f == 2 && ((1, $1) in v)) s = $1 }
           END { if (s != "") print s, v[1, s], v[2, s] }' "$1" "$2"
}

# compare_val GPU_DIR CPU_DIR: the row val-loss. 2% is the bar: both runs
# start from the same seed and read the same batches; they differ in
# bf16 autocast and the GPU's kernels against float32 on the CPU.
compare_val() {
  local pair s g c d
  pair=$(val_pair "$1/log.csv" "$2/log.csv")
  if [[ -z $pair ]]; then
    if [[ $(result_of train-cuda) == skipped || $(result_of train-cpu) == skipped ]]; then
      record val-loss skipped 0 "a training run did not start"
    else record val-loss FAIL 0 "no val loss at a step both logs hold"; fi
    return
  fi
  read -r s g c <<<"$pair"
  figure train-cuda "val loss $g at step $s"
  figure train-cpu "val loss $c at step $s"
  d=$(awk -v g="$g" -v c="$c" 'BEGIN { printf "%+.2f", 100 * (g - c) / c }')
  if awk -v d="$d" 'BEGIN { exit !(d >= -2 && d <= 2) }'; then
    record val-loss pass 0 "GPU $g, CPU $c at step $s: ${d}%"
  else
    record val-loss FAIL 0 "GPU $g, CPU $c at step $s: ${d}%, beyond 2%"
  fi
}

# eval_agree: the half dtypes' perplexities are numbers within 2% of
# float32's (weights rounded once; the losses scored in float32).
eval_agree() {
  local f h dt bad="" got=""
  f=$(value perplexity "eval float32")
  if [[ ! $f =~ ^[0-9]+(\.[0-9]+)?$ ]]; then record eval-agree skipped 0 "no float32 perplexity"; return; fi
  for dt in bfloat16 float16; do
    h=$(value perplexity "eval $dt")
    got+="${got:+, }$dt ${h:-none}"
    if [[ ! $h =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
       ! awk -v h="$h" -v f="$f" 'BEGIN { d = (h - f) / f; exit !(d >= -0.02 && d <= 0.02) }'; then
      bad+=" $dt"
    fi
  done
  if [[ -z $bad ]]; then record eval-agree pass 0 "float32 $f, $got"
  else record eval-agree FAIL 0 "float32 $f, $got:$bad beyond 2% or not a number"; fi
}

# check_frontier CSV: the row frontier-gpu, with each run's losses and
# seconds, fails unless CSV holds two runs that trained: not diverged, a
# final val that is a number (not nan or inf) below the one at step 0.
check_frontier() {
  local rows bad
  [[ -f $1 ]] || { fail_row frontier-gpu "no $1"; return; }
  # Columns by their names in the header, wherever they stand.
  local by_name='NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }'
  figure frontier-gpu "$(awk -F, "$by_name"' { printf "%s%s val %.3f -> %.3f in %s s", s, $c["scheme"],
                                  $c["start_val"], $c["final_val"], $c["seconds"]; s = ", " }' "$1")"
  rows=$(awk 'END { print NR - 1 }' "$1")
  bad=$(awk -F, "$by_name"' { f = $c["final_val"]
                              if (!($c["diverged"] == 0 && f ~ /^[0-9.]+(e[-+]?[0-9]+)?$/ &&
                                    f + 0 < $c["start_val"] + 0)) n++ }
                            END { print n + 0 }' "$1")
  ((rows == 2 && bad == 0)) || fail_row frontier-gpu "$rows runs in $1, $bad of them did not train"
}

run_commands() {
  local work=$build/work dt cuda cpu bpe slice prompt="The meaning of life is"
  cuda=$work/train-cuda cpu=$work/train-cpu bpe=$work/gpt2-vocab.pt slice=$work/shakespeare-50k.txt
  rm -rf "$work" "$pyenv" && mkdir -p "$work"
  # a. The CPU's run gets all but 4 cores; those are the GPU steps'.
  step_bg train-cpu 240 "${pfx[@]}" OMP_NUM_THREADS=$(($(nproc) > 8 ? $(nproc) - 4 : $(nproc))) \
    "$gpt2" train --device cpu --overwrite --out "$cpu"
  step train-cuda 120 "${pfx[@]}" "$gpt2" train --device cuda --dtype bfloat16 --overwrite --out "$cuda"
  step inspect 30 "${pfx[@]}" "$gpt2" inspect --checkpoint "$cuda/ckpt.pt"
  step export 30 "${pfx[@]}" "$gpt2" export --checkpoint "$cuda/ckpt.pt" --out "$cuda/model.ts"

  # b. GPT-2's shapes with 2 blocks: 50,257 tokens, 1,024 positions.
  step gpt2-vocab-model 60 "${pfx[@]}" "$gpt2" inspect --preset gpt2 --n-layer 2 --save "$bpe"
  head -c 50000 "$root/apps/data/tinyshakespeare/input.txt" >"$slice"
  for dt in float32 bfloat16 float16; do
    step_bg "generate $dt" 90 "${pfx[@]}" "$gpt2" generate --model "$bpe" --device cuda --dtype "$dt" \
      --prompt "$prompt" --max-new-tokens 32 --temperature 0
    step_bg "eval $dt" 90 "${pfx[@]}" "$gpt2" eval --model "$cuda/ckpt.pt" --data "$cuda/data-char" \
      --text "$slice" --device cuda --dtype "$dt"
    step_bg "serve $dt" 90 "$py" "$here/serve_check.py" -- \
      "${pfx[@]}" "$gpt2" serve --model "$bpe" --device cuda --dtype "$dt" --port 0
  done
  for dt in float32 bfloat16 float16; do
    step_wait "generate $dt"
    step_wait "eval $dt" && figure "eval $dt" "perplexity $(value perplexity "eval $dt")"
    step_wait "serve $dt"
  done
  eval_agree

  # c. The client and its dependencies as wheels; nothing from a registry.
  if compgen -G "$deps/wheels/openai-*.whl" >/dev/null; then
    step openai-wheels 60 "$py" -m pip install --quiet --no-index --find-links "$deps/wheels" \
      --target "$pyenv" openai &&
      step serve-openai 60 env PYTHONPATH="$pyenv" "$py" "$here/serve_check.py" --openai -- \
        "${pfx[@]}" "$gpt2" serve --model "$bpe" --device cuda --port 0
  else
    record serve-openai skipped 0 "no openai wheel in $deps/wheels: run tests/gpu/deps.sh"
  fi

  # d. torchrun (its module, with the machine's Python) starts one rank, on
  # 127.0.0.1 (not the host's name, which a sandbox may not resolve); NCCL
  # says what went wrong, if anything does.
  step train-ddp 90 "$py" -m torch.distributed.run --standalone --nproc_per_node 1 --no_python \
    --local-addr 127.0.0.1 "${pfx[@]}" NCCL_DEBUG=WARN "$gpt2" train --device cuda --dtype bfloat16 --max-steps 20 --eval-interval 10 \
    --sample-tokens 0 --overwrite --out "$work/train-ddp"
  figure train-ddp "$(grep -m 1 -iE 'nccl' "$(log_of train-ddp)" | cut -c1-100)"

  # e. GPT-2's width in bfloat16 without clipping, as the whole grid runs.
  step frontier-gpu 60 "${pfx[@]}" "$gpt2" init-study frontier --profile gpt2-gpu --depths 12 \
    --schemes 2n,zero --lrs 0.001 --seeds 1 --steps 20 --warmup-steps 2 --eval-interval 10 \
    --out "$work/frontier-gpu" && check_frontier "$work/frontier-gpu/frontier.csv"

  step_wait train-cpu
  compare_val "$cuda" "$cpu"
}
