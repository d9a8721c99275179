#!/bin/sh
# Runs the whole suite (ctest --preset default, after the test command's
# build) under machine variants that any x86-64 machine can reproduce:
# OpenBLAS's kernels for another core, oneDNN held to AVX2, ATen's kernels
# held to AVX2 or to none, one or two threads. Each variant is its own ctest
# run; the script ends with one line per variant and exits 1 if any failed.
#
#   sh tests/variants.sh              every variant this CPU can run
#   sh tests/variants.sh prescott t1  the named ones
#   sh tests/variants.sh aten-default+t2   several at once, in one run
#
# SkylakeX's kernels (AVX-512) run only on a CPU with AVX-512: elsewhere
# that variant is left out and said so.
set -u
cd "$(dirname "$0")/.."

variant_env() {
  case $1 in
    prescott) echo "OPENBLAS_CORETYPE=Prescott" ;;
    haswell) echo "OPENBLAS_CORETYPE=Haswell" ;;
    skylakex) echo "OPENBLAS_CORETYPE=SkylakeX" ;;
    zen) echo "OPENBLAS_CORETYPE=Zen" ;;
    dnnl-avx2) echo "DNNL_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2" ;;
    aten-avx2) echo "ATEN_CPU_CAPABILITY=avx2" ;;
    aten-default) echo "ATEN_CPU_CAPABILITY=default" ;;
    t1) echo "OMP_NUM_THREADS=1" ;;
    t2) echo "OMP_NUM_THREADS=2" ;;
    *) return 1 ;;
  esac
}

all="prescott haswell skylakex zen dnnl-avx2 aten-avx2 aten-default t1 t2"
names=${*:-$all}
summary="" rc=0
for name in $names; do
  vars=""
  for part in $(echo "$name" | tr '+' ' '); do
    v=$(variant_env "$part") || { echo "variants: unknown variant '$part'; known: $all" >&2; exit 2; }
    vars="$vars${vars:+ }$v"
  done
  if echo "+$name+" | grep -q "+skylakex+" && ! grep -q avx512f /proc/cpuinfo; then
    summary="$summary\n$name: left out (this CPU has no AVX-512)"
    continue
  fi
  echo "variants: $name ($vars)"
  start=$(date +%s)
  # shellcheck disable=SC2086 # the assignments are words
  if env $vars ctest --preset default >"build/variant-$name.log" 2>&1; then
    result="passed"
  else
    result="FAILED: $(grep -A100 'tests FAILED:' "build/variant-$name.log" | tail -n +2 |
      grep -v 'Errors while running' | tr -s ' \n' ' ')"
    rc=1
  fi
  summary="$summary\n$name ($vars): $result in $(( $(date +%s) - start )) s (build/variant-$name.log)"
done
printf "variants:%b\n" "$summary"
exit $rc
