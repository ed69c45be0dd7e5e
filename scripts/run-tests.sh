#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/run-tests.sh [--emulator "CMD ARGS"] [--shards N] [--jobs N]
#          [--timeout SECONDS] [-R REGEX] [-E REGEX] BUILD_DIR
#
# Runs the ctest tests of a built tree the way ctest would (same commands,
# arguments, working directories and ENVIRONMENT properties, read from
# `ctest --show-only=json-v1`), with two additions for the emulated legs of
# scripts/test.sh:
#   --emulator  runs each test binary of the tree through a prefix, e.g.
#               "qemu-x86_64 -cpu Haswell-v4". Tests that run no ELF binary of
#               the tree (scripts) are listed as not applicable.
#   --shards N  splits every GoogleTest binary into N GTEST_SHARD_INDEX shards
#               that run in parallel (qemu runs one test binary on one core).
# Jobs (test x shard) run --jobs at a time (default: the number of cores).
# A test's TIMEOUT property applies to each of its shards (as in ctest);
# --timeout is the limit for tests without one (default 1800 s).
# -R / -E select / exclude tests by name (bash regular expressions), as ctest.
# Prints each job's result and time, the full output of failed jobs, and the
# slowest GoogleTest cases; exits non-zero if any job failed or no test ran.
set -euo pipefail

emulator=""
shards=1
jobs=$(nproc 2>/dev/null || echo 2)
timeout_s=1800
include=""
exclude=""
usage() { sed -n '3,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --emulator) emulator=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -R) include=$2; shift 2 ;;
    -E) exclude=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run-tests: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
  echo "run-tests: need one built tree with tests (CTestTestfile.cmake)" >&2
  usage >&2
  exit 2
fi
build=$(cd "$1" && pwd)
read -r -a emu <<<"$emulator"

work=$(mktemp -d "${TMPDIR:-/tmp}/rlx-run-tests.XXXXXX")
cleanup() {
  local f
  for f in "$work"/*.pid; do
    [ -e "$f" ] && [ ! -e "${f%.pid}.rc" ] && kill "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
# set -e stops the runner at a failing command of its own: say which.
trap 'echo "run-tests: ERROR: a command of the runner failed at line $LINENO (exit $?)" >&2' ERR
trap 'exit 130' INT TERM

# The test list as one line per test, fields separated by tabs:
# name, working directory, WILL_FAIL, DISABLED, unsupported properties,
# TIMEOUT ("-" if none), number of ENVIRONMENT entries, those entries, the
# command words.
ctest --test-dir "$build" --show-only=json-v1 >"$work/tests.json"
cat >"$work/list.cmake" <<'EOF'
file(READ "${JSON}" json)
string(JSON n LENGTH "${json}" tests)
file(WRITE "${OUT}" "")
if(n EQUAL 0)
  return()
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  set(wd "-")
  set(timeout "-")
  set(will_fail 0)
  set(disabled 0)
  set(unsupported "")
  set(env "")
  set(nenv 0)
  string(JSON np ERROR_VARIABLE err LENGTH "${json}" tests ${i} properties)
  if(err)
    set(np 0)
  endif()
  if(np GREATER 0)
    math(EXPR plast "${np} - 1")
    foreach(p RANGE ${plast})
      string(JSON pname GET "${json}" tests ${i} properties ${p} name)
      if(pname STREQUAL "WORKING_DIRECTORY")
        string(JSON wd GET "${json}" tests ${i} properties ${p} value)
      elseif(pname STREQUAL "TIMEOUT")
        string(JSON timeout GET "${json}" tests ${i} properties ${p} value)
      elseif(pname STREQUAL "WILL_FAIL")
        string(JSON v GET "${json}" tests ${i} properties ${p} value)
        if(v)
          set(will_fail 1)
        endif()
      elseif(pname STREQUAL "DISABLED")
        string(JSON v GET "${json}" tests ${i} properties ${p} value)
        if(v)
          set(disabled 1)
        endif()
      elseif(pname STREQUAL "ENVIRONMENT")
        string(JSON ne LENGTH "${json}" tests ${i} properties ${p} value)
        math(EXPR elast "${ne} - 1")
        foreach(e RANGE ${elast})
          string(JSON v GET "${json}" tests ${i} properties ${p} value ${e})
          string(APPEND env "\t${v}")
          math(EXPR nenv "${nenv} + 1")
        endforeach()
      elseif(pname MATCHES "REGULAR_EXPRESSION|SKIP_RETURN_CODE|FIXTURES|_TEST_ENVIRONMENT_MODIFICATION|ENVIRONMENT_MODIFICATION")
        string(APPEND unsupported "${pname},")
      endif()
    endforeach()
  endif()
  set(line "${name}\t${wd}\t${will_fail}\t${disabled}\t${unsupported}-\t${timeout}\t${nenv}${env}")
  string(JSON nc LENGTH "${json}" tests ${i} command)
  math(EXPR clast "${nc} - 1")
  foreach(c RANGE ${clast})
    string(JSON w GET "${json}" tests ${i} command ${c})
    string(APPEND line "\t${w}")
  endforeach()
  file(APPEND "${OUT}" "${line}\n")
endforeach()
EOF
cmake -DJSON="$work/tests.json" -DOUT="$work/tests.tsv" -P "$work/list.cmake"

is_elf() {
  [ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' \n')" = '177ELF' ]
}

# Jobs: one line each in jobs.tsv: id, shard, shards, then the test's line.
njobs=0
not_applicable=()
disabled=()
: >"$work/jobs.tsv"
while IFS= read -r line; do
  IFS=$'\t' read -r -a f <<<"$line"
  name=${f[0]}
  if [ -n "$include" ] && ! [[ $name =~ $include ]]; then continue; fi
  if [ -n "$exclude" ] && [[ $name =~ $exclude ]]; then continue; fi
  if [ "${f[3]}" = 1 ]; then disabled+=("$name"); continue; fi
  nenv=${f[6]}
  cmd=("${f[@]:$((7 + nenv))}")
  # The tree's own binary in the command (after an emulator, if any).
  bin=""
  for w in "${cmd[@]}"; do
    case "$w" in "$build"/*) if is_elf "$w"; then bin=$w; break; fi ;; esac
  done
  if [ ${#emu[@]} -gt 0 ] && [ "$bin" != "${cmd[0]}" ]; then
    not_applicable+=("$name")
    continue
  fi
  n=1
  if [ -n "$bin" ] && grep -qa GTEST_SHARD_INDEX "$bin"; then n=$shards; fi
  for ((s = 0; s < n; s++)); do
    printf '%s\t%s\t%s\t%s\n' "$njobs" "$s" "$n" "$line" >>"$work/jobs.tsv"
    njobs=$((njobs + 1))
  done
done <"$work/tests.tsv"

if [ "$njobs" -eq 0 ]; then
  echo "run-tests: no test to run in $build" >&2
  exit 1
fi
echo "run-tests: $njobs jobs from $(wc -l <"$work/tests.tsv") tests, $jobs at a time${emulator:+, under $emulator}"

# run_job LINE: runs one job, writes $work/<id>.log, .rc and .sec.
run_job() {
  local -a f cmd envs
  IFS=$'\t' read -r -a f <<<"$1"
  local id=${f[0]} shard=${f[1]} nshards=${f[2]}
  local wd=${f[4]} limit=${f[8]} nenv=${f[9]}
  envs=("${f[@]:10:$nenv}")
  cmd=("${f[@]:$((10 + nenv))}")
  [ "$limit" = "-" ] && limit=$timeout_s
  [ ${#emu[@]} -gt 0 ] && cmd=("${emu[@]}" "${cmd[@]}")
  [ "$wd" = "-" ] && wd=$build
  if [ "$nshards" -gt 1 ]; then
    envs+=("GTEST_TOTAL_SHARDS=$nshards" "GTEST_SHARD_INDEX=$shard")
  fi
  local start=$SECONDS rc=0 pid
  # timeout runs the test in a process group of its own: its pid is kept so
  # that an interrupted run can stop it (timeout passes the signal on).
  (cd "$wd" && exec env "${envs[@]}" timeout "$limit" "${cmd[@]}") \
    >"$work/$id.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$work/$id.pid"
  wait "$pid" || rc=$?
  echo $((SECONDS - start)) >"$work/$id.sec"
  echo "$rc" >"$work/$id.rc"
  local label=${f[3]}
  [ "$nshards" -gt 1 ] && label="$label [shard $((shard + 1))/$nshards]"
  printf '  ...   %-50s %5ss  exit %s\n' "$label" $((SECONDS - start)) "$rc"
}

# Longest jobs first would need timings; the file order (tests as registered,
# shards together) is good enough with sharding.
running=0
while IFS= read -r job; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_job "$job" &
  running=$((running + 1))
done <"$work/jobs.tsv"
wait || true

# qemu-x86_64 warns about CPU model features TCG lacks (pcid, x2apic, ...).
filter() { grep -v "TCG doesn't support requested feature" || true; }

echo "run-tests: results"
failed=0
while IFS= read -r job; do
  IFS=$'\t' read -r -a f <<<"$job"
  id=${f[0]} shard=${f[1]} nshards=${f[2]} name=${f[3]} will_fail=${f[5]}
  unsupported=${f[7]%-}
  limit=${f[8]}
  [ "$limit" = "-" ] && limit=$timeout_s
  label=$name
  [ "$nshards" -gt 1 ] && label="$name [shard $((shard + 1))/$nshards]"
  rc=$(cat "$work/$id.rc" 2>/dev/null || echo 255)
  sec=$(cat "$work/$id.sec" 2>/dev/null || echo 0)
  ok=0
  if [ "$will_fail" = 1 ]; then [ "$rc" != 0 ] && ok=1; else [ "$rc" = 0 ] && ok=1; fi
  if [ -n "$unsupported" ]; then
    echo "run-tests: $name uses test properties this runner does not apply: ${unsupported%,}" >>"$work/$id.log"
    ok=0
  fi
  if [ "$ok" = 1 ]; then
    printf '  PASS  %-50s %5ss\n' "$label" "$sec"
  else
    failed=$((failed + 1))
    [ "$rc" = 124 ] && echo "run-tests: timed out after ${limit}s" >>"$work/$id.log"
    printf '  FAIL  %-50s %5ss  (exit %s)\n' "$label" "$sec" "$rc"
    echo "----- output of $label -----"
    filter <"$work/$id.log"
    echo "----- end of $label -----"
  fi
done <"$work/jobs.tsv"
for t in "${not_applicable[@]}"; do
  printf '  n/a   %-50s (runs no binary of this tree under the emulator)\n' "$t"
done
for t in "${disabled[@]}"; do
  printf '  DISABLED %s\n' "$t"
done

# awk, not head, takes the first 8: head exits after 8 lines, and under
# pipefail sort's next write then dies of SIGPIPE (exit 141), which failed
# whole legs after every test had passed.
echo "run-tests: slowest GoogleTest cases:"
cat "$work"/*.log | sed -n 's/^\[ *OK *\] \(.*\) (\([0-9]*\) ms)$/\2 \1/p' |
  sort -rn | awk 'NR <= 8 { printf "  %8.1fs  %s\n", $1 / 1000, $2 }'

if [ "$failed" -gt 0 ]; then
  echo "run-tests: $failed of $njobs jobs FAILED"
  exit 1
fi
echo "run-tests: all $njobs jobs passed"
