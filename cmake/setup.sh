#!/bin/sh
# Installs whatever of the build's Debian packages is missing (as root, or
# through sudo), then configures and builds into build/. A second run finds
# everything installed and only rebuilds what changed. The same package names
# serve Debian 12 (LibTorch 1.13, clang 14) and Debian 13 (LibTorch 2.6,
# clang 19).
#
#   sh cmake/setup.sh        the library and the gpt2 command (the demo's needs)
#   sh cmake/setup.sh all    everything: also the tests, the header check, helpers
#   sh cmake/setup.sh deps   the packages only (cmake/piptorch.sh builds against pip's LibTorch)
#
# GPT2_CMAKE_ARGS adds settings to the configure step (-DGPT2_HEADER_CHECK=OFF).
set -eu

case "${1:-}" in
  "") targets="--target gpt2_cli" ;;
  all|deps) targets="" ;;
  *) echo "usage: sh cmake/setup.sh [all|deps]" >&2; exit 2 ;;
esac

packages="cmake ninja-build g++ libtorch-dev libfmt-dev libgtest-dev libgmock-dev
libcli11-dev libopenblas0-pthread python3-torch libpcre2-dev nlohmann-json3-dev libssl-dev
pkg-config libplplot-dev zlib1g-dev libdeflate-dev libzip-dev clang libclang-rt-dev libomp-dev libgloo-dev libdnnl-dev
ocl-icd-opencl-dev libcpp-httplib-dev curl iproute2"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  start=$(date +%s)
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing$missing"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
  echo "setup: packages installed in $(( $(date +%s) - start )) s"
fi

[ "${1:-}" = deps ] && exit 0
cd "$(dirname "$0")/.."
start=$(date +%s)
# shellcheck disable=SC2086 # GPT2_CMAKE_ARGS: extra -D settings, as words (CI's later legs)
cmake --preset default ${GPT2_CMAKE_ARGS:-} >/dev/null
cmake --build --preset default $targets
echo "setup: configure and build took $(( $(date +%s) - start )) s"
