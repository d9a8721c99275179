#!/bin/sh
# Builds libzip from its source, as a static library, with the fuzz preset's
# compiler and sanitizers (clang, ASan + UBSan, libFuzzer's coverage), so that a fuzz
# run sees libzip's branches and memory errors, not only the gate's: Debian's
# libzip.so is neither instrumented nor checked by ASan.
#
#   sh tests/fuzz/instrumented_libzip.sh SOURCE PREFIX
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cmake --preset fuzz
#
# SOURCE is libzip's source tree at the release Debian ships (1.7.3: `apt-get
# source libzip`, or the v1.7.3 tag of github.com/nih-at/libzip). Only what
# the gate reaches is built: no crypto, bzip2 or xz (the gate refuses those
# records before libzip reads them), no tools, tests or docs.
set -eu
[ $# -eq 2 ] || { echo "usage: sh tests/fuzz/instrumented_libzip.sh SOURCE PREFIX" >&2; exit 2; }
source=$1
prefix=$2
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize=vptr -fno-omit-frame-pointer -g -O1"
cmake -S "$source" -B "$prefix/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_C_FLAGS="$flags" \
  -DBUILD_SHARED_LIBS=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DENABLE_COMMONCRYPTO=OFF -DENABLE_GNUTLS=OFF -DENABLE_MBEDTLS=OFF -DENABLE_OPENSSL=OFF \
  -DENABLE_WINDOWS_CRYPTO=OFF -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF \
  -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF
cmake --build "$prefix/build"
cmake --install "$prefix/build"
