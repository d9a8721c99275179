#!/bin/sh
# Builds and tests gpt2 against PyPI's torch wheel: a CUDA LibTorch, the
# kind GPU machines run (docs/gpu.md), on a machine with the CUDA toolkit
# (nvcc, cuBLAS, cuDNN, NCCL) and no GPU. The library, the command, the
# tests and the CUDA tests compile and link against it, and every test runs;
# the CUDA tests skip, saying that there is no GPU. CI's third leg (.ci/run).
#
#   sh cmake/piptorch.sh            the packages, the wheel, build-pip/, ctest
#   sh cmake/piptorch.sh build      the same without the tests
#   sh cmake/piptorch.sh fetch      the packages and the wheel only (CI fetches
#                                   it while the first leg builds)
#
# The wheel goes into build-pip/site with pip's --target (no virtual
# environment, no Python import: its torch/share/cmake is the CMake prefix
# that torch.utils.cmake_prefix_path names), with its three libraries that
# the CUDA toolkit does not carry (cuSPARSELt, NVSHMEM, cuFile) and its
# Python requirements (for torchrun); it is
# reused while build-pip/site/.complete names the same versions.
# GPT2_PIP_TORCH sets the torch version (2.11.0, the GPU machine's).
set -eu

version=${GPT2_PIP_TORCH:-2.11.0}
extras="nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 nvidia-cufile==1.15.1.6"
# torch's own Python requirements but the CUDA ones, which the toolkit
# provides: the data-parallel tests run this torch's torchrun, as a user of
# the wheel does, and Debian 12's typing_extensions is too old for it.
python_deps="typing_extensions==4.16.0 filelock==4.3.2 sympy==1.14.0 mpmath==1.4.1
networkx==3.6.1 jinja2==3.1.6 MarkupSafe==3.0.4 fsspec==2026.9.0"
case "${1:-test}" in
  test|build|fetch) ;;
  *) echo "usage: sh cmake/piptorch.sh [build|fetch]" >&2; exit 2 ;;
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
want=$(echo "torch==$version" $extras $python_deps)
if [ "$(cat "$site/.complete" 2>/dev/null)" != "$want" ]; then
  python=$(command -v python3)
  if ! "$python" -m pip --version >/dev/null 2>&1; then
    [ -x /usr/bin/python3 ] && /usr/bin/python3 -m pip --version >/dev/null 2>&1 && python=/usr/bin/python3
  fi
  # Wheels for the Python that runs the tests (Debian's), whichever pip fetches them.
  tests_python=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "piptorch: pip installs $want into $site (once)"
  rm -rf "$site" && mkdir -p "$site"
  # shellcheck disable=SC2086 # the list is words
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$site" \
    --python-version "$tests_python" --only-binary=:all: "torch==$version" $extras $python_deps
  echo "$want" >"$site/.complete"
fi
[ "${1:-test}" = fetch ] && exit 0

start=$(date +%s)
# shellcheck disable=SC2086 # GPT2_CMAKE_ARGS: extra -D settings, as words (as setup.sh's)
cmake --preset pip -DCMAKE_CUDA_COMPILER="$nvcc" ${GPT2_CMAKE_ARGS:-} >/dev/null
cmake --build --preset pip
echo "piptorch: configure and build took $(( $(date +%s) - start )) s"
[ "${1:-test}" = build ] && exit 0
start=$(date +%s)
rc=0
ctest --preset pip || rc=$?
echo "piptorch: ctest took $(( $(date +%s) - start )) s"
exit $rc
