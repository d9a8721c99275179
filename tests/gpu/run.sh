#!/usr/bin/env bash
# The GPU check: one command, from the repository root of a machine with an
# NVIDIA GPU, pip's PyTorch (python3), CMake, ninja, nvcc and g++, and no
# package registry (docs/gpu-check.md):
#
#   bash tests/gpu/run.sh [DEPS_DIR]     DEPS_DIR: what tests/gpu/deps.sh fetched (gpu-deps/)
#
# It unpacks the .debs into build-gpu/prefix (never into /), builds the
# `gpt2` command, gpt2-app-step and gpt2_cuda_tests against torch's LibTorch
# in build-gpu/, then runs each check in its own process under `timeout`
# (steps.sh), recording a failure and going on: each CUDA test alone; the
# commands as a user runs them on cuda (commands.sh: the README's training
# demo beside the CPU's, inspect, export, generate, eval and serve at each
# dtype, OpenAI's client, torchrun, two runs of the init study's GPU
# frontier); `gpt2 bench train` and `bench
# generate`; a bf16 matmul peak, Hugging Face's decoding and torch's levers (peer.py). Every
# Python runs through build-gpu/python, which restores the machine's own
# library paths. build-gpu/summary.md holds versions and outputs and ends
# with the table of every check (result, seconds, figures or why), as
# standard output does; build-gpu/logs/ holds each check's output. Exit 0
# only when the build and every CUDA test passed.
#
# The plan on an H200 (16 cores): everything, the build included, within
# BUDGET_S = 560 s. A cap is the most a step may take, never more than the
# budget has left; a step with under 10 s left is skipped.
#   versions, unpack, configure        ~20 s  caps 60, -, 120
#   build: gpt2, gpt2-app-step         ~76 s  BUILD_S, 180
#   build: gpt2_cuda_tests             ~10 s  90
#   the CUDA tests, a process each     ~75 s  TEST_S, 60 each
#   the commands (commands.sh)         ~75 s  train 120 (the CPU's, alongside, 240);
#                                             b's nine at once, 90 each; others 30-90;
#                                             the frontier's two runs ~15 s, 60
#   bench train, B 32, one round      ~175 s  at most 240, leaving 90 s; a side 75
#   bench generate, bf16, float32,
#     and bf16 drawn on host and GPU   ~40 s  60 each
#   serve_load.py: greedy with graphs
#     and op by op, and sampled        ~40 s  the 124M file 60, each run 60
#   the bf16 peak, HF's decoding       ~30 s  30, 90
#   torch's levers (peer.py levers)    ~10 s  40, skipped when the budget is spent
# That is about 555 s; the rest is slack for a slow compile or start.
#
# Environment: TORCH_PREFIX (LibTorch's CMake prefix; python3's
# torch.utils.cmake_prefix_path), TORCH_INCLUDE (its headers; a wheel's
# TORCH_PREFIX/../../include), PYTHON (python3), BUILD_DIR (build-gpu), JOBS
# (every core), BUDGET_S (560), BUILD_S (180), TEST_S (60), TRAIN_FLAGS
# (bench train's flags besides --device, --dtype, --batch-size and
# --peer-python), GEN_FLAGS (bench generate's besides --device, --dtype, --cuda-graphs
# and the sampled run's), GPT2_COMMIT (when the tree
# has no .git), GPU_STAGE=configure|build (stop after that step: what a
# machine without a GPU can check).
# shellcheck source-path=SCRIPTDIR
set -uo pipefail
deps=$(cd "${1:-$(dirname "$0")/../../gpu-deps}" 2>/dev/null && pwd) ||
  { echo "run: no folder ${1:-gpu-deps}: run 'sh tests/gpu/deps.sh' on Debian 12" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
root=$PWD here=$PWD/tests/gpu
build=${BUILD_DIR:-$root/build-gpu}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
budget=${BUDGET_S:-560}
deadline=$((SECONDS + budget))
prefix=$build/prefix logs=$build/logs pyenv=$build/pyenv py=$build/python
rm -rf "$logs" && mkdir -p "$logs"  # no figure from an earlier run
outputs=()
# shellcheck source=steps.sh
. "$here/steps.sh"
# shellcheck source=commands.sh
. "$here/commands.sh"
# shellcheck source=prefix.sh
. "$here/prefix.sh"

summary() {
  local commit=${GPT2_COMMIT:-}
  if [[ -z $commit ]] && commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
    git -C "$root" diff --quiet HEAD || commit+=" (with uncommitted changes)"
  fi
  {
    echo "# GPU check"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: ${commit:-unknown}"
    echo "- machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores"
    echo "- GPU: ${gpu:-none found}"
    echo "- versions: ${versions:-unknown}"
    echo "- build: ${notes_build:-}"
    echo
    echo "## Outputs"
    echo
    printf '%s\n' "${outputs[@]}"
    echo
    echo "## Checks"
    echo
    table
  } >"$build/summary.md"
  echo
  echo "run: wrote $build/summary.md; the checks, in $SECONDS s:"
  table
}

# --- the tools, the GPU and the versions -----------------------------------
for tool in cmake ninja g++ timeout "$python"; do
  command -v "$tool" >/dev/null || { echo "run: $tool not found" >&2; exit 2; }
done
write_python "$py" "$(command -v "$python")"  # before anything changes the environment
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
step versions 60 "$py" "$here/peer.py" versions
torch_prefix=${TORCH_PREFIX:-$(value torch_cmake_prefix versions)}
torch_include=${TORCH_INCLUDE:-$torch_prefix/../../include}
versions="torch $(value torch versions) (CUDA $(value torch_cuda versions), cxx11 ABI $(value torch_cxx11_abi versions)),"
versions+=" transformers $(value transformers versions), $(cmake --version | head -n 1), $(g++ --version | head -n 1),"
versions+=" nvcc ${nvcc:+$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')}"

# --- the carried packages, unpacked into a private prefix ------------------
start=$SECONDS
rm -rf "$prefix" "$build/debs" && mkdir -p "$prefix" "$build/debs"
debs=("$deps"/*.deb)
for deb in "${debs[@]}"; do
  if command -v dpkg >/dev/null; then dpkg -x "$deb" "$prefix"
  else (cd "$build/debs" && rm -f data.tar.* && ar x "$deb" && tar -xf data.tar.* -C "$prefix"); fi
done
libdir=$prefix/usr/lib/x86_64-linux-gnu
# Debian's .pc files name /usr: point them at the prefix; likewise absolute links.
sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\1=$prefix/usr#" \
  "$libdir"/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc
find "$prefix" -type l -lname '/*' | while read -r link; do ln -sfn "$prefix$(readlink "$link")" "$link"; done
# One Gloo: LibTorch's own headers when it has them (the version it was built with).
if [[ -f $torch_include/gloo/config.h ]]; then
  rm -rf "$prefix/usr/include/gloo"; notes_build="Gloo headers from LibTorch;"
else notes_build="Gloo headers from Debian's libgloo-dev;"; fi
# LibTorch's own fmt headers are shadowed by the carried ones (the libfmt the
# build links) by the build itself (gpt2_put_before_torch, cmake/Gpt2Build.cmake).
record unpack pass $((SECONDS - start)) "${#debs[@]} packages, $(du -sh "$deps" | cut -f1)"
# The prefix's libraries for CMake, the linker and the programs built here;
# never for Python, which runs through $py with the machine's own.
prefix_env "$prefix"

# --- configure and build ---------------------------------------------------
cuda_args=()
[[ -n $nvcc ]] && cuda_args=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")"
                            -DCMAKE_CUDA_ARCHITECTURES=90)
step configure 120 "${pfx[@]}" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGPT2_WITH_PLOT=OFF -DGPT2_WITH_ONEDNN=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$torch_prefix" -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf" \
  "${cuda_args[@]}"
configured=$?
if [[ ${GPU_STAGE:-} == configure ]]; then summary; exit "$configured"; fi
built=1
((configured == 0)) &&
  step build "${BUILD_S:-180}" "${pfx[@]}" cmake --build "$build" -j "$jobs" --target gpt2_cli gpt2_app_step && built=0
gpt2=$build/bin/gpt2
if ((built == 0)); then  # libtorch_cuda.so registers the CUDA ops: linked, or no kernel runs
  if readelf -d "$build/libexec/gpt2/gpt2-full" | grep -q libtorch_cuda; then
    notes_build+=" gpt2-full links libtorch_cuda.so."
  else notes_build+=" gpt2-full does not link libtorch_cuda.so."; fi
  step help 30 "${pfx[@]}" "$gpt2" --help  # the programs start: the prefix's libraries load
fi
if [[ ${GPU_STAGE:-} == build ]]; then summary; exit "$built"; fi

# --- the CUDA tests, each in its own process -------------------------------
tested=1
if ((configured)); then
  record cuda-tests skipped 0 "not configured"
elif ! grep -q '^gpt2_cuda_tests:' < <(ninja -C "$build" -t targets all 2>/dev/null); then
  record cuda-tests FAIL 0 "no target gpt2_cuda_tests in this tree"
elif step build-tests 90 "${pfx[@]}" cmake --build "$build" -j "$jobs" --target gpt2_cuda_tests; then
  run_each_test cuda "${TEST_S:-60}" "$(find "$build" -type f -name gpt2_cuda_tests -perm -u+x | head -n 1)" &&
    tested=0
fi

# --- the commands, as a user runs them on cuda ------------------------------
((built == 0)) && run_commands

# --- the benchmarks --------------------------------------------------------
if ((built == 0)); then
  # Every side on the GPU, alternating: the C++ step, a linking app with
  # default settings, nanoGPT's model eager and under torch.compile, each
  # side capped (--side-timeout), and the C++ step through nanoGPT's forward
  # (the logits made: what the fused head saves), and nanoGPT's model as its
  # bench.py ships it (vocabulary 50304, no biases), compiled. One round:
  # the budget holds two compiles.
  # Then 5 C++ steps under LibTorch's profiler: each kernel's device time.
  for b in 32 16 8; do
    # shellcheck disable=SC2086 # TRAIN_FLAGS is words
    step "bench-train B$b" "$(cap_of 240 90)" "${pfx[@]}" "$gpt2" bench train --device cuda \
      --dtype bfloat16 --batch-size "$b" --peer-python "$py" \
      ${TRAIN_FLAGS:---preset gpt2 --seq 1024 --steps 10 --warmup 3 --rounds 1 --peer-compile --peer-shipped --logits-side --torch-ops-side --side-timeout 75 --profile-steps 5} &&
      break
    grep -qi 'out of memory' "$(log_of "bench-train B$b")" || break  # only a smaller batch could help
  done
  log=$(log_of "bench-train B$b")
  figure "bench-train B$b" "$(sed -nE 's/^C\+\+ +([0-9]+) tokens\/s.* = ([0-9]+)% of .*/C++ \1 tokens\/s, MFU \2%/p' "$log")"
  figure "bench-train B$b" "$(sed -nE 's/^(app|Python|Py compile|Py shipped|C\+\+ logits|C\+\+ torch) +([0-9]+) tokens\/s.*/\1 \2/p' "$log" | paste -sd, - | sed 's/,/, /g')"
  figure "bench-train B$b" "$(sed -nE 's/^(app|Python|Py compile|Py shipped|C\+\+ logits|C\+\+ torch) .*: FAILED (in round [0-9]+: .*)/\1 FAILED \2/p' "$log" | cut -c1-120 | paste -sd';' -)"
  figure "bench-train B$b" "$(sed -nE 's/^kernels +device time ([0-9.]+) ms a step in ([0-9]+) launches.*/kernels \1 ms a step, \2 launches/p' "$log")"
  figure "bench-train B$b" "$(awk '$1 == "kind" { printf "%s%s %.1f ms%s", s, $2, $3 / 1000,
                                  ($7 == "floor" ? sprintf(" (floor %.1f)", $8 / 1000) : ""); s = ", " }' "$log")"
  keep "gpt2 bench train, B $b" "bench-train B$b" 70
  # Decoding at batch 1 and 32, each with its steps replayed from CUDA
  # graphs and op by op, alternating; bf16 weights (issue's goal), then
  # float32; then bf16 drawing at temperature 0.8, top-k 200, each token
  # drawn on the host and on the GPU.
  for run in bfloat16 float32 sampled; do
    dt=${run/sampled/bfloat16}
    more=(--cuda-graphs on,off)
    [[ $run == sampled ]] && more=(--cuda-graphs on --temperature 0.8 --top-k 200 --draw host,device)
    # shellcheck disable=SC2086 # GEN_FLAGS is words
    step "bench-generate $run" 60 "${pfx[@]}" "$gpt2" bench generate --device cuda --dtype "$dt" \
      ${GEN_FLAGS:---preset gpt2 --prompt-tokens 16 --new-tokens 128 --repeats 3 --batch 1,32} \
      "${more[@]}"
    log=$(log_of "bench-generate $run")
    figure "bench-generate $run" "$(awk '/^  [0-9]+ +(on|off) +[-a-z]+ +[0-9.]+ / {
                                          printf "%sB%s graphs %s%s %s", s, $1, $2, ($3 == "-" ? "" : " draw " $3), $4; s = ", " }
                                        END { if (s) printf " tokens/s" }' "$log")"
    figure "bench-generate $run" "$(sed -nE 's/^graphs +(not replayed: .{0,100}).*/\1/p' "$log")"
    keep "gpt2 bench generate, $run" "bench-generate $run" 25
  done
  # Serving GPT-2 124M's shapes (fresh weights) in bf16, a batch of 32: 1
  # and 32 concurrent streaming clients, greedy, each step replayed from a
  # CUDA graph; 32 clients with the steps op by op (what the graphs gain);
  # then 32 drawing at temperature 0.8 (on the GPU, Draw::kAuto).
  if step gpt2-124m 60 "${pfx[@]}" "$gpt2" inspect --preset gpt2 --save "$build/gpt2-124m.pt"; then
    for run in T0 T0-eager T0.8; do
      t=${run#T}; t=${t%-eager}; clients=32; extra=""
      [[ $run == T0 ]] && clients=1,32
      [[ $run == *-eager ]] && extra=" --no-cuda-graphs"
      step "serve-load $run" 60 "$py" "$root/apps/bench/serve_load.py" "$gpt2" "$build/gpt2-124m.pt" \
        --clients "$clients" --requests 2 --tokens 64 \
        --max-batch 32 --temperature "$t" --serve-flags "--device cuda --dtype bfloat16$extra" \
        --wrapper "$(printf '%q ' "${pfx[@]}")"
      figure "serve-load $run" "$(awk '$1 ~ /^[0-9]+$/ { printf "%s%s clients %s tok/s, TTFT %s", s, $1, $2, $3; s = "; " }' \
                                 "$(log_of "serve-load $run")")"
      keep "serve_load.py, GPT-2 124M bf16, $run" "serve-load $run" 6
    done
  fi
fi
step peak 30 "$py" "$here/peer.py" peak
figure peak "$(value peak_bf16_tflops peak | sed 's/.\+/bf16 & TFLOP\/s (8192^3, torch)/')"
step peer-generate 90 "$py" "$here/peer.py" generate --new-tokens 128
figure peer-generate "$(awk '/^hf_generate_/ { split($1, a, "_"); printf "%s%s %s %s", s, a[3], a[4], $2; s = ", " }
                             END { if (s) printf " tokens/s" }' "$(log_of peer-generate)")"
# Last, as the budget allows: what torch's attention kernels and cuBLASLt's
# GELU epilogue would gain one layer of the step (peer.py levers).
step levers 40 "$py" "$here/peer.py" levers
figure levers "$(sed -nE 's/^lever_(attention|gelu)_ms ([^(]*[^ (]) .*/\1 \2 ms/p' "$(log_of levers)" | paste -sd';' -)"

summary
((built == 0 && tested == 0))
