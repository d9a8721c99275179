#!/bin/sh
# Downloads the Debian 12 packages that building gpt2 needs beyond a C++
# compiler, CMake, ninja and a LibTorch (pip's PyTorch), for a GPU machine
# that has no package registry: tests/gpu/run.sh unpacks them there into a
# private prefix. Also OpenAI's Python client (`openai`) and its
# dependencies as wheels for CPython 3.12 on x86-64 Linux, into DIR/wheels:
# run.sh installs them into build-gpu/pyenv for its `serve` check. Run it on
# a Debian 12 machine with apt (root or not) and pip; the folder travels
# with the working tree.
#
#   sh tests/gpu/deps.sh [DIR]     DIR: default gpu-deps/ at the repository root
#
# PLplot is not among them (its -dev package pulls in Qt, wxWidgets and
# Fortran): run.sh builds with GPT2_WITH_PLOT=OFF. Nor is oneDNN: pip's torch
# keeps its own inside, so run.sh builds with GPT2_WITH_ONEDNN=OFF.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/gpu-deps}

# Headers, CMake and pkg-config files and the .so links of what the library,
# the command and the tests find (CMakeLists.txt, gpt2/, apps/, tests/):
# fmt, nlohmann-json, zlib, libzip, libdeflate, Gloo's headers (used only
# where LibTorch has none), CLI11, cpp-httplib (with the OpenSSL and Brotli
# headers and .pc files its own .pc requires), PCRE2, OpenSSL's libcrypto,
# GoogleTest and gmock.
dev="libfmt-dev nlohmann-json3-dev zlib1g-dev libzip-dev libdeflate-dev libgloo-dev
libcli11-dev libcpp-httplib-dev libbrotli-dev libssl-dev libpcre2-dev libgtest-dev libgmock-dev"
# The shared libraries those link, which a machine with only a compiler may
# lack (run.sh puts them on LD_LIBRARY_PATH).
runtime="libfmt9 libzip4 libdeflate0 libcpp-httplib0.11 libbrotli1 libssl3 libpcre2-8-0
zlib1g libbz2-1.0"
# pkg-config, for libzip, libdeflate, PCRE2 and cpp-httplib.
tools="pkgconf pkgconf-bin libpkgconf3"

# shellcheck source=/dev/null
. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
  echo "deps: these package names are Debian 12's (bookworm); this is ${PRETTY_NAME:-unknown}" >&2
  exit 2
fi
if ! apt-cache show libzip-dev >/dev/null 2>&1; then
  echo "deps: apt knows no libzip-dev: run 'apt-get update' (as root) first" >&2
  exit 2
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "deps: python3 has no pip, which fetches the openai wheels: install python3-pip" >&2
  exit 2
fi

mkdir -p "$dir"
rm -f "$dir"/*.deb  # run.sh unpacks every .deb here: no stale versions
# shellcheck disable=SC2086 # the lists are words
(cd "$dir" && apt-get download -q $dev $runtime $tools)
count=$(find "$dir" -maxdepth 1 -name '*.deb' | wc -l)
# The wheels of the GPU machine's Python (3.12), whatever this one is.
rm -rf "$dir/wheels"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$dir/wheels" openai
wheels=$(find "$dir/wheels" -name '*.whl' | wc -l)
echo "deps: $count packages and $wheels wheels in $dir, $(du -sh "$dir" | cut -f1)"
