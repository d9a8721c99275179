# shellcheck shell=bash disable=SC2154 # run.sh sets logs, deadline, budget, pfx
# The step machinery of tests/gpu/run.sh, which sources it: each check runs
# in its own process under coreutils' `timeout` (TERM at its cap, KILL 10 s
# later), its output in LOGS/NAME.log, and becomes one row of the table the
# summary ends with: pass, FAIL or skipped, its seconds, and its figures or
# why it failed. Needs from run.sh: logs, deadline (in $SECONDS), budget.

names=() results=() secs=() notes=()
declare -A row_of=() bg_pid=() bg_start=() bg_cap=()

log_of() { echo "$logs/${1//[^A-Za-z0-9_.-]/_}.log"; }  # log_of NAME

record() {  # record NAME RESULT SECONDS NOTE: a row of the table
  row_of[$1]=${#names[@]}
  names+=("$1") results+=("$2") secs+=("$3") notes+=("$4")
  echo "run: $1: $2 in $3 s${4:+ ($4)}"
}
figure() {  # figure NAME TEXT: adds TEXT to the row of NAME, if it has one
  local i=${row_of[$1]:-}
  [[ -n $i && -n $2 ]] && notes[i]=${notes[i]:+${notes[i]}; }$2
  return 0
}
fail_row() {  # fail_row NAME WHY: the row of NAME becomes a FAIL saying WHY
  local i=${row_of[$1]:-}
  [[ -z $i ]] && return 0
  results[i]=FAIL notes[i]=$2
  echo "run: $1: FAIL ($2)"
}
result_of() { local i=${row_of[$1]:-}; [[ -n $i ]] && echo "${results[i]}"; }  # result_of NAME

cap_of() {  # cap_of CAP_S [RESERVE_S]: CAP_S, or what the budget has left but RESERVE_S
  local left=$((deadline - SECONDS - ${2:-0}))
  echo $(($1 < left ? $1 : left))
}

conclude() {  # conclude NAME RC START CAP [END]: the row of a finished step
  local name=$1 rc=$2 s=$((${5:-$SECONDS} - $3)) log why
  log=$(log_of "$name")
  if ((rc == 0)); then record "$name" pass "$s" ""
  elif ((rc == 124 || rc == 137)); then record "$name" FAIL "$s" "timed out at $4 s"
  else  # the last line that names an error, else the last line
    why=$(grep -iE 'error|exception|not expected|unknown|fail|assert' "$log" | tail -n 1)
    why=$(cut -c1-160 <<<"${why:-$(tail -n 1 "$log")}")
    ((rc > 128 && rc < 160)) && why="killed by SIG$(kill -l $((rc - 128)))${why:+; $why}"
    record "$name" FAIL "$s" "exit $rc: $why"
  fi
}

# Each step leads a session of its own (setsid, where there is one), and
# what is left of that session when the step ends is killed: a program that
# runs its own commands under `timeout` (bench train's sides) puts them in
# process groups of their own, which the step's timeout cannot reach.
spawn=()
command -v setsid >/dev/null && command -v pkill >/dev/null && spawn=(setsid)
end_session() {  # end_session PID: kills what is left of the session PID led
  [[ ${#spawn[@]} -gt 0 && $1 =~ ^[1-9][0-9]*$ ]] && pkill -KILL -s "$1" 2>/dev/null
  return 0
}

# step NAME CAP_S CMD...: CMD under timeout (CAP_S, or what is left of the
# budget); returns CMD's status, 125 when the budget is spent.
step() {
  local name=$1 cap start=$SECONDS rc=0
  cap=$(cap_of "$2")
  shift 2
  if ((cap < 10)); then record "$name" skipped 0 "the $budget s budget is spent"; return 125; fi
  "${spawn[@]}" timeout -k 10 "$cap" "$@" >"$(log_of "$name")" 2>&1 &  # the trap ends it
  child=$!
  wait "$child" || rc=$?
  end_session "$child"
  child=""
  conclude "$name" "$rc" "$start" "$cap"
  return "$rc"
}

# step_bg NAME CAP_S CMD...: a step started in the background; step_wait
# NAME waits for it and records it, with the seconds it took.
step_bg() {
  local name=$1 cap log
  cap=$(cap_of "$2")
  shift 2
  bg_pid[$name]=""
  ((cap < 10)) && return 0
  log=$(log_of "$name")
  rm -f "$log.end"
  {  # a subshell that ends its timeout when told to, and notes when it ended
    trap 'kill "$t" 2>/dev/null; exit 143' TERM
    "${spawn[@]}" timeout -k 10 "$cap" "$@" >"$log" 2>&1 &
    t=$!
    wait "$t"
    echo "$? $SECONDS" >"$log.end"
    end_session "$t"
  } &
  bg_pid[$name]=$! bg_start[$name]=$SECONDS bg_cap[$name]=$cap
}
step_wait() {
  local name=$1 rc=1 end=$SECONDS log
  if [[ -z ${bg_pid[$name]:-} ]]; then record "$name" skipped 0 "the $budget s budget is spent"; return 125; fi
  log=$(log_of "$name")
  wait "${bg_pid[$name]}"
  bg_pid[$name]=""
  [[ -f $log.end ]] && read -r rc end <"$log.end" && rm -f "$log.end"
  conclude "$name" "$rc" "${bg_start[$name]}" "${bg_cap[$name]}" "$end"
  return "$rc"
}
trap 'kill ${child:-} ${bg_pid[*]} 2>/dev/null; exit 130' INT TERM

value() { awk -v k="$1" '$1 == k { print $2; exit }' "$(log_of "$2")" 2>/dev/null; }  # value KEY STEP
keep() {  # keep TITLE STEP [LINES]: the tail of a step's output, for the summary
  outputs+=("### $1" '```text' "$(tail -n "${3:-40}" "$(log_of "$2")" 2>/dev/null)" '```')
}

# run_each_test NAME CAP_S BINARY: each test of a GoogleTest BINARY in its
# own process (--gtest_filter), a row each, so that a crash is that test's
# row only. A test that skips counts as a FAIL: here a skip means no GPU.
# Returns 0 when every test passed.
run_each_test() {
  local name=$1 cap=$2 bin=$3 all=0 t tests=()
  step "$name-list" 60 "${pfx[@]}" "$bin" --gtest_list_tests || return 1
  mapfile -t tests < <(awk '/^[A-Za-z_][A-Za-z0-9_\/]*\.( |$)/ { suite = $1 }
                            /^  [A-Za-z_]/ { if (suite != "") print suite $1 }' "$(log_of "$name-list")")
  if ((${#tests[@]} == 0)); then fail_row "$name-list" "it lists no test"; return 1; fi
  figure "$name-list" "${#tests[@]} tests"
  for t in "${tests[@]}"; do
    if step "$name $t" "$cap" "${pfx[@]}" "$bin" --gtest_color=no --gtest_filter="$t"; then
      if grep -qE '^\[  SKIPPED \] [0-9]+ tests?' "$(log_of "$name $t")"; then
        fail_row "$name $t" "skipped: torch sees no CUDA GPU here"; all=1
      fi
    else all=1; fi
  done
  return "$all"
}

# write_python PATH PYTHON: a script that runs PYTHON with the machine's own
# LD_LIBRARY_PATH, PKG_CONFIG_PATH and TORCH_CUDA_ARCH_LIST (their values
# now, at run.sh's start), whatever the caller's: the gpt2 programs run with
# the carried prefix's, and a Python they start (the bench's peer) must not
# load Debian 12's libraries in place of the machine's.
write_python() {
  local var
  {
    echo "#!$BASH"
    echo "# Written by tests/gpu/run.sh: $2 with the machine's own library paths."
    for var in LD_LIBRARY_PATH PKG_CONFIG_PATH TORCH_CUDA_ARCH_LIST; do
      if [[ -v $var ]]; then printf 'export %s=%q\n' "$var" "${!var}"; else echo "unset $var"; fi
    done
    printf 'exec %q "$@"\n' "$2"
  } >"$1"
  chmod +x "$1"
}

table() {  # the table of every check
  local i
  echo "| check | result | seconds | figures, or why |"
  echo "| --- | --- | ---: | --- |"
  for i in "${!names[@]}"; do echo "| ${names[i]} | ${results[i]} | ${secs[i]} | ${notes[i]//|//} |"; done
}
