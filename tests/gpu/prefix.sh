# shellcheck shell=bash
# The environment the gpt2 programs built by tests/gpu/run.sh run in, for
# run.sh and tests/gpu/frontier.sh, which source this: the Debian 12
# libraries unpacked into BUILD/prefix (tests/gpu/deps.sh) first on the
# library path, for CMake, the linker and those programs; never for Python.

# prefix_env PREFIX: sets the array pfx, `env VAR=VALUE...`, to run a command with.
prefix_env() {
  local libdir=$1/usr/lib/x86_64-linux-gnu
  # shellcheck disable=SC2034 # the caller's
  pfx=(env "LD_LIBRARY_PATH=$libdir:$1/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
       "PKG_CONFIG_PATH=$libdir/pkgconfig:$1/usr/share/pkgconfig"
       TORCH_CUDA_ARCH_LIST=9.0)  # H100/H200; spares torch's CMake a device query
}
