#!/usr/bin/env bash
# The learning-rate frontier of each residual scheme at GPT-2's width on an
# NVIDIA GPU (docs/init-gpu.md), from the repository root of a
# machine with the GPU check's tools (docs/gpu-check.md: pip's PyTorch, CMake,
# ninja, g++, and gpu-deps/ from tests/gpu/deps.sh):
#
#   bash tests/gpu/frontier.sh [OUT [FLAG...]]
#
# OUT: the grid's folder (docs/init/frontier-gpu/); each FLAG goes to both
# invocations below (`--seeds 2`: a piece of the grid). In order:
#   1. the gpt2 command in BUILD_DIR: brought up to date where it was built
#      before, else built by run.sh's own steps (GPU_STAGE=build);
#   2. the cost probe, `gpt2 init-study frontier --profile gpt2-gpu
#      --cost-probe`: each depth's first cell of the grid, whose seconds give
#      OUT/frontier_cost.txt (seconds per run per depth, what is left);
#   3. the grid, `--profile gpt2-gpu --time-limit S` with S what BUDGET_S
#      leaves: it starts no run it expects to end later; the cells it does
#      not reach, the next call (same OUT) runs.
# Into OUT: frontier.csv, frontier_grid.txt, frontier_cost.txt,
# frontier_table.txt, frontier_log.txt (each call's output after a line with
# its date, commit and GPU) and, where the build has PLplot (run.sh's has
# not), the pictures; `gpt2 init-study frontier --profile gpt2-gpu --report
# --out OUT` on any build with PLplot draws them from the CSV.
#
# Environment: BUDGET_S (450: all of it, the build included, within one
# call of 8 minutes), DEPS_DIR (gpu-deps/), BUILD_DIR (build-gpu/), GPT2 (a
# built gpt2 command, used as it is), GPT2_COMMIT (the commit the log names
# when the tree has no .git). Exit 0 when the grid's invocation
# ended well, stopped at its time limit included.
set -uo pipefail
start=$SECONDS
deadline=$((start + ${BUDGET_S:-450}))
out=${1:-docs/init/frontier-gpu}
(($# > 0)) && shift
[[ $out == /* ]] || out=$PWD/$out
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
# shellcheck source=prefix.sh
. "$here/prefix.sh"
prefix_env "$build/prefix"

# --- 1. the command ----------------------------------------------------------
if [[ -n ${GPT2:-} ]]; then
  gpt2=$GPT2
else
  gpt2=$build/bin/gpt2
  if [[ -f $build/build.ninja && -d $build/prefix ]]; then
    "${pfx[@]}" cmake --build "$build" --target gpt2_cli ||
      { echo "frontier: the build in $build failed" >&2; exit 2; }
  else
    GPU_STAGE=build BUILD_DIR=$build bash "$here/run.sh" "${DEPS_DIR:-$root/gpu-deps}" ||
      { echo "frontier: the build failed; $build/summary.md says where" >&2; exit 2; }
  fi
fi
echo "frontier: built in $((SECONDS - start)) s; $((deadline - SECONDS)) s of BUDGET_S left"

# --- 2. the cost probe, 3. the grid ------------------------------------------
mkdir -p "$out" || exit 2
log=$out/frontier_log.txt
commit=${GPT2_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, GPU ${gpu:-none found}, flags: $*" >>"$log"
frontier() {  # frontier CAP_S FLAG...: the command under timeout, its output on the log too
  local cap=$1
  shift
  timeout -k 10 "$cap" "${pfx[@]}" "$gpt2" init-study frontier --profile gpt2-gpu --out "$out" \
    "$@" 2>&1 | tee -a "$log"
}
if ((deadline - SECONDS < 30)); then
  echo "frontier: under 30 s of BUDGET_S left after the build: raise BUDGET_S" >&2
  exit 1
fi
frontier $((deadline - SECONDS)) --cost-probe "$@" ||
  { echo "frontier: the cost probe failed (exit $?); $log has its output" >&2; exit 1; }
left=$((deadline - SECONDS))
if ((left < 30)); then
  echo "frontier: $left s of BUDGET_S left: no grid run this call; the same command continues"
  exit 0
fi
# 15 s for the table and the exit after the last run the limit allows.
frontier "$left" --time-limit $((left - 15)) "$@"
rc=$?
((rc == 124 || rc == 137)) && echo "frontier: stopped by timeout at $left s; its last row is cut off and rerun next call" >&2
echo "frontier: $((SECONDS - start)) s; $out holds the rows; the same command runs the cells left"
exit "$rc"
