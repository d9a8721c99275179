#!/usr/bin/env bash
# The GPU check: one command, from the repository root of a machine with an
# NVIDIA GPU, pip's PyTorch (python3), CMake, ninja, nvcc and g++, and no
# package registry (docs/gpu.md):
#
#   bash tests/gpu/run.sh [DEPS_DIR]     DEPS_DIR: the .debs of tests/gpu/deps.sh (gpu-deps/)
#
# It unpacks the .debs into build-gpu/prefix (never into /), builds the
# `gpt2` command, gpt2-app-step and gpt2_cuda_tests against torch's LibTorch
# in build-gpu/, then runs each step capped by `timeout`, recording a failure
# and going on: the CUDA tests, `gpt2 bench train` (the largest batch of 32,
# 16, 8 that runs) and `bench generate` on cuda, a bf16 matmul peak and the
# Python reference (tests/gpu/peer.py). build-gpu/summary.md gets versions,
# each step's result and seconds, the figures and the failed tests' names;
# build-gpu/logs/ each step's output. Exit 0 only when the build and the
# CUDA tests passed.
#
# Environment: TORCH_PREFIX (LibTorch's CMake prefix; python3's
# torch.utils.cmake_prefix_path), TORCH_INCLUDE (its headers; a wheel's
# TORCH_PREFIX/../../include), PYTHON (python3), BUILD_DIR (build-gpu), JOBS
# (every core), BUDGET_S (seconds for all steps, 500), BUILD_S (the build's
# cap, 360), GEN_FLAGS (bench generate's flags), GPT2_COMMIT (when the tree
# has no .git), GPU_STAGE=configure|build (stop after that step: what a
# machine without a GPU can check).
set -uo pipefail
deps=$(cd "${1:-$(dirname "$0")/../../gpu-deps}" 2>/dev/null && pwd) ||
  { echo "run: no folder ${1:-gpu-deps}: run 'sh tests/gpu/deps.sh' on Debian 12" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
build=${BUILD_DIR:-$root/build-gpu}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
budget=${BUDGET_S:-500}
deadline=$((SECONDS + budget))
prefix=$build/prefix
logs=$build/logs
mkdir -p "$logs"

rows=() figures=() outputs=()
record() {  # record STEP RESULT SECONDS NOTE: a row of the summary's table
  rows+=("| $1 | $2 | $3 | ${4//|//} |")
  echo "run: $1: $2 in $3 s${4:+ ($4)}"
}
# step NAME CAP_S CMD...: CMD under timeout (CAP_S, or what is left of the
# budget), its output in logs/NAME.log; returns CMD's status.
step() {
  local name=$1 cap=$2 left=$((deadline - SECONDS)) start=$SECONDS rc=0
  shift 2
  ((cap > left)) && cap=$left
  if ((cap < 10)); then record "$name" skipped 0 "the $budget s budget is spent"; return 125; fi
  timeout -k 10 "$cap" "$@" >"$logs/$name.log" 2>&1 &  # its own process group: the trap ends it
  child=$!
  wait "$child" || rc=$?
  if ((rc == 0)); then record "$name" pass $((SECONDS - start)) ""
  elif ((rc == 124 || rc == 137)); then record "$name" FAIL $((SECONDS - start)) "timed out at $cap s"
  else  # the last line that names an error, else the last line
    local why
    why=$(grep -iE 'error|exception|not expected|unknown|fail' "$logs/$name.log" | tail -n 1)
    record "$name" FAIL $((SECONDS - start)) "exit $rc: $(cut -c1-160 <<<"${why:-$(tail -n 1 "$logs/$name.log")}")"
  fi
  return "$rc"
}
trap 'kill "${child:-}" 2>/dev/null; exit 130' INT TERM
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$logs/$2.log" 2>/dev/null; }  # value KEY STEP
keep() { outputs+=("### $1" '```text' "$(tail -n "${3:-40}" "$logs/$2.log" 2>/dev/null)" '```'); }  # keep TITLE STEP [LINES]

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
    echo "- build: ${notes:-}"
    echo
    echo "| step | result | seconds | note |"
    echo "| --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "## Figures"
    echo
    if ((${#figures[@]})); then printf -- '- %s\n' "${figures[@]}"; else echo "none"; fi
    echo
    echo "## Failed CUDA tests"
    echo
    echo "${failed_tests:-none listed (the table says whether they ran)}"
    echo
    echo "## Outputs"
    echo
    printf '%s\n' "${outputs[@]}"
  } >"$build/summary.md"
  echo "run: wrote $build/summary.md"
}

# --- the tools, the GPU and the versions -----------------------------------
for tool in cmake ninja g++ "$python"; do
  command -v "$tool" >/dev/null || { echo "run: $tool not found" >&2; exit 2; }
done
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
step versions 60 "$python" tests/gpu/peer.py versions
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
  rm -rf "$prefix/usr/include/gloo"; notes="Gloo headers from LibTorch;"
else notes="Gloo headers from Debian's libgloo-dev;"; fi
# LibTorch's include folder comes first on the compile line; when it holds fmt
# headers, a copy of the carried ones (the libfmt the build links) goes
# before it (-I; GCC drops an -I that repeats an -isystem folder, hence a copy).
cxx_flags=""
if [[ -d $torch_include/fmt ]]; then
  mkdir -p "$build/fmt-first" && rm -rf "$build/fmt-first/fmt" && cp -rp "$prefix/usr/include/fmt" "$build/fmt-first/"
  cxx_flags="-I$build/fmt-first"; notes+=" LibTorch has fmt headers: Debian's fmt 9 put first;"
fi
record unpack pass $((SECONDS - start)) "${#debs[@]} packages, $(du -sh "$deps" | cut -f1)"
# The prefix's libraries for CMake, the linker and the programs built here;
# not for Python, which keeps the machine's own.
pfx=(env "LD_LIBRARY_PATH=$libdir:$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
     "PKG_CONFIG_PATH=$libdir/pkgconfig:$prefix/usr/share/pkgconfig"
     TORCH_CUDA_ARCH_LIST=9.0)  # H100/H200; spares torch's CMake a device query

# --- configure and build ---------------------------------------------------
cuda_args=()
[[ -n $nvcc ]] && cuda_args=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")"
                            -DCMAKE_CUDA_ARCHITECTURES=90)
step configure 120 "${pfx[@]}" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGPT2_WITH_PLOT=OFF -DGPT2_WITH_ONEDNN=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$torch_prefix" -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf" \
  -DCMAKE_CXX_FLAGS="$cxx_flags" "${cuda_args[@]}"
configured=$?
if [[ ${GPU_STAGE:-} == configure ]]; then summary; exit "$configured"; fi
built=1
((configured == 0)) &&
  step build "${BUILD_S:-360}" "${pfx[@]}" cmake --build "$build" -j "$jobs" --target gpt2_cli gpt2_app_step && built=0
gpt2=$build/bin/gpt2
if ((built == 0)); then  # libtorch_cuda.so registers the CUDA ops: linked, or no kernel runs
  if readelf -d "$build/libexec/gpt2/gpt2-full" | grep -q libtorch_cuda; then
    notes+=" gpt2-full links libtorch_cuda.so."
  else notes+=" gpt2-full does not link libtorch_cuda.so."; fi
  step help 30 "${pfx[@]}" "$gpt2" --help  # the programs start: the prefix's libraries load
fi
if [[ ${GPU_STAGE:-} == build ]]; then summary; exit "$built"; fi

# --- the CUDA tests --------------------------------------------------------
tested=1
if ((configured)); then
  record cuda-tests skipped 0 "not configured"
elif ! ninja -C "$build" -t targets all 2>/dev/null | grep -q '^gpt2_cuda_tests:'; then
  record cuda-tests FAIL 0 "no target gpt2_cuda_tests in this tree"
elif step build-tests 180 "${pfx[@]}" cmake --build "$build" -j "$jobs" --target gpt2_cuda_tests; then
  tests_bin=$(find "$build" -type f -name gpt2_cuda_tests -perm -u+x | head -n 1)
  step cuda-tests 150 "${pfx[@]}" "$tests_bin" --gtest_color=no && tested=0
  # A test that skips found no GPU: the check did not happen, so it is no pass.
  if grep -qE '^\[  SKIPPED \] [0-9]+ tests?, listed below' "$logs/cuda-tests.log"; then
    unset "rows[-1]"; record cuda-tests FAIL 0 "every test skipped: torch sees no CUDA GPU here"; tested=1
  fi
  failed_tests=$(grep -oE '^\[  FAILED  \] [A-Za-z0-9_/]+\.[A-Za-z0-9_/]+' "$logs/cuda-tests.log" | awk '{print "- " $4}' | sort -u)
  keep "gpt2_cuda_tests (its summary)" cuda-tests 12
fi

# --- the benchmarks --------------------------------------------------------
batch=""
if ((built == 0)); then
  # Every side on the GPU, alternating in one run: the C++ step, a linking
  # app with default settings, nanoGPT's model eager and under torch.compile.
  for b in 32 16 8; do
    step "bench-train-B$b" 300 "${pfx[@]}" "$gpt2" bench train --device cuda --dtype bfloat16 --preset gpt2 \
      --seq 1024 --batch-size "$b" --steps 10 --warmup 3 --rounds 2 --peer-python "$(command -v "$python")" \
      --peer-compile && { batch=$b; break; }
  done
  if [[ -n $batch ]]; then keep "gpt2 bench train, B $batch" "bench-train-B$batch" 25
  else keep "gpt2 bench train, B 32 (failed)" bench-train-B32 25; fi
  # shellcheck disable=SC2086 # GEN_FLAGS is words
  step bench-generate 120 "${pfx[@]}" "$gpt2" bench generate --device cuda \
    ${GEN_FLAGS:---preset gpt2 --prompt-tokens 16 --new-tokens 128 --repeats 3 --batch 1,32}
  keep "gpt2 bench generate" bench-generate 25
fi
step peak 60 "$python" tests/gpu/peer.py peak
peak=$(value peak_bf16_tflops peak)
per_token=$(value flops_per_token peak)
[[ -n $peak ]] && figures+=("bf16 matmul peak (8192^3, torch): $peak TFLOP/s")
cpp=$([[ -n $batch ]] && awk '/^C\+\+ +[0-9]/ { print $2; exit }' "$logs/bench-train-B$batch.log")
if [[ -n $cpp ]]; then
  mfu=$([[ -n $peak && -n $per_token ]] && awk -v r="$cpp" -v f="$per_token" -v p="$peak" 'BEGIN { printf ", MFU %.1f%%", 100 * r * f / (p * 1e12) }')
  figures+=("C++ bench train, B $batch T 1024, bf16 autocast: $cpp tokens/s$mfu")
fi
step peer-generate 150 "$python" tests/gpu/peer.py generate --new-tokens 128
while read -r line; do figures+=("$line"); done < <(grep -E '^hf_' "$logs/peer-generate.log" 2>/dev/null)

summary
((built == 0 && tested == 0))
