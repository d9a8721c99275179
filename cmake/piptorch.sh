#!/bin/sh
# Builds and tests gpt2 against PyPI's torch wheel: a CUDA LibTorch, the
# kind GPU machines run (docs/gpu.md), on a machine with the CUDA toolkit
# (nvcc, cuBLAS, cuDNN, NCCL) and no GPU. The library, the command, the
# tests and the CUDA tests compile and link against it, and every test runs;
# the CUDA tests skip, saying that there is no GPU. Not yet a CI leg:
# docs/testing.md lists the tests that still fail against 2.11.
#
#   sh cmake/piptorch.sh            the packages, the wheel, build-pip/, ctest
#   sh cmake/piptorch.sh build      the same without the tests
#
# The wheel goes into build-pip/site with pip's --target (no virtual
# environment, no Python import: its torch/share/cmake is the CMake prefix
# that torch.utils.cmake_prefix_path names), with its three libraries that
# the CUDA toolkit does not carry (cuSPARSELt, NVSHMEM, cuFile); it is
# reused while build-pip/site/.complete names the same versions.
# GPT2_PIP_TORCH sets the torch version (2.11.0, the GPU machine's).
set -eu

version=${GPT2_PIP_TORCH:-2.11.0}
extras="nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 nvidia-cufile==1.15.1.6"
case "${1:-test}" in
  test|build) ;;
  *) echo "usage: sh cmake/piptorch.sh [build]" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
sh cmake/setup.sh deps

nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "piptorch: no nvcc on PATH or in /usr/local/cuda/bin: the wheel's CMake package needs the CUDA toolkit" >&2
  exit 2
fi

site=build-pip/site
want="torch==$version $extras"
if [ "$(cat "$site/.complete" 2>/dev/null)" != "$want" ]; then
  python=$(command -v python3)
  if ! "$python" -m pip --version >/dev/null 2>&1; then
    [ -x /usr/bin/python3 ] && /usr/bin/python3 -m pip --version >/dev/null 2>&1 && python=/usr/bin/python3
  fi
  echo "piptorch: pip installs $want into $site (once)"
  rm -rf "$site" && mkdir -p "$site"
  # shellcheck disable=SC2086 # the list is words
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$site" \
    "torch==$version" $extras
  echo "$want" >"$site/.complete"
fi

cmake --preset pip -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
cmake --build --preset pip
[ "${1:-test}" = build ] || ctest --preset pip
