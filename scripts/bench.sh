#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The main job: installs what the benchmarks need (Debian 12, apt), builds
# Release, runs every benchmark of rlx_attn_bench once (each kernel on every
# supported target, the scalar reference, the RLX-loop baseline, the peers
# oneDNN and XNNPACK, and the floors, side by side in one run) and prints a
# Markdown table per workload. Writes results/bench.json (Google Benchmark
# JSON), results/bench.log (console output), results/report.md and
# results/chart.png. While the benchmarks run, a status line on the
# terminal says how many are done of how many, the time so far and the one
# running (the last finished when repetitions interleave at random).
#
# Usage: scripts/bench.sh [--quick] [--no-install] [-- BENCHMARK_ARGS...]
#   --quick       short run (under a minute after the build): 0.01 s per
#                 benchmark, one repetition, f32 workloads only, AVX3/AVX2
#                 class targets (RLX_BENCH_TARGETS overrides), no reference
#                 on prefill. The full run takes ~12 minutes on 2 cores.
#   --no-install  skip apt (for machines without root; needs the packages)
#   BENCHMARK_ARGS are passed to rlx_attn_bench last, e.g.
#                 -- --benchmark_filter=masked_softmax/D2
# Environment: RLX_BENCH_TARGETS=AVX3,AVX2 limits the targets;
# RLX_BENCH_BUILD_DIR (default build-bench) and RLX_BENCH_RESULTS (default
# results) are relative to the repository.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
quick=0
install=1
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-install) install=0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build=${RLX_BENCH_BUILD_DIR:-build-bench}
results=${RLX_BENCH_RESULTS:-results}

# 1. Packages: the project's list (compilers, Highway, Google Benchmark, ...)
# plus the benchmark-only ones: the peers oneDNN and XNNPACK, and matplotlib.
if [ "$install" = 1 ]; then
  bash .ci/install-deps.sh
  missing=()
  for p in libdnnl-dev libxnnpack-dev libpthreadpool-dev python3-matplotlib; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    echo "bench.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

# 2. Release build of the benchmark binary (tests off: not needed here).
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DRLX_ATTN_MASK_BUILD_TESTS=OFF -DRLX_ATTN_MASK_BUILD_BENCH=ON
else
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target rlx_attn_bench

# 3. One run of everything.
mkdir -p "$results"
args=()
if [ "$quick" = 1 ]; then
  args+=(--benchmark_min_time=0.01 --benchmark_repetitions=1
         "--benchmark_filter=-(bf16|f16|reference/P)")
  if [ -z "${RLX_BENCH_TARGETS:-}" ]; then
    supported=$(RLX_BENCH_TARGETS= "$build/bench/rlx_attn_bench" \
      --benchmark_list_tests --benchmark_filter='^copy_floor/D1/' |
      sed 's|.*/||')
    quick_targets=$(grep -xE 'AVX3|AVX2|NEON|SVE2?|SVE_256|SVE2_128' \
      <<<"$supported" | paste -sd, || true)
    export RLX_BENCH_TARGETS=${quick_targets:-$(head -n1 <<<"$supported")}
  fi
else
  # Seven short repetitions, interleaved at random so that the slow drifts
  # of a shared machine spread over every benchmark instead of landing on a
  # few; the report shows each benchmark's fastest (least disturbed)
  # repetition (bench/report.py says why).
  args+=(--benchmark_min_time=0.05 --benchmark_repetitions=7
         --benchmark_enable_random_interleaving=true)
fi
# The benchmarks in the order they run when repetitions are not interleaved.
names=$("$build/bench/rlx_attn_bench" --benchmark_list_tests \
  "${args[@]}" "${extra[@]}")
count=$(grep -c . <<<"$names" || true)
# Whether the run interleaves repetitions at random (the last flag wins, as
# in Google Benchmark): then the order in which benchmarks run is unknown.
interleaved=0
for a in "${args[@]}" "${extra[@]}"; do
  case $a in
    --benchmark_enable_random_interleaving|--benchmark_enable_random_interleaving=true) interleaved=1 ;;
    --benchmark_enable_random_interleaving=false) interleaved=0 ;;
  esac
done
args+=(--benchmark_out="$results/bench.json" --benchmark_out_format=json)
echo
echo "bench.sh: running $count benchmarks (${RLX_BENCH_TARGETS:-all supported targets}); console output in $results/bench.log"
echo "bench.sh: CPU: $(grep -m1 -E '^(model name|Model)' /proc/cpuinfo | sed 's/.*: //')"
echo "bench.sh: compiler: $(grep -E '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" | sed 's/.*=//') $(
  "$(grep -E '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" | sed 's/.*=//')" \
    -dumpfullversion 2>/dev/null || true)"
for p in libhwy-dev libbenchmark-dev libdnnl-dev libxnnpack-dev; do
  version=$(dpkg-query -W -f='${Version}\n' "$p:$(dpkg --print-architecture)" \
    2>/dev/null || true)
  echo "bench.sh: $p ${version:-not installed}"
done

# Benchmarks finished so far and the last of them, read from the console log.
# A finished benchmark prints "<name> <time> <unit> ..." per repetition (or
# "<name> ERROR OCCURRED: ..."), then <name>_mean, _median, _stddev and _cv
# when it has repetitions; Google Benchmark writes a benchmark's lines when
# all its repetitions are done and flushes them at once.
finished() {
  awk '($2 ~ /^[0-9.]+$/ && $3 ~ /^[mun]?s$/) || $2 == "ERROR" {
         name = $1
         sub(/_(mean|median|stddev|cv)$/, "", name)
         if (!(name in seen)) { seen[name] = 1; n++; last = name }
       }
       END { printf "%d %s\n", n, last }' "$results/bench.log"
}

# The run goes to the log in the background while a status line says how far
# it is: rewritten in place every second on a terminal, a plain line every 30
# seconds otherwise (CI logs).
start=$(date +%s)
"$build/bench/rlx_attn_bench" "${args[@]}" "${extra[@]}" >"$results/bench.log" 2>&1 &
bench_pid=$!
# Background jobs of a script ignore SIGINT: stop the run on Ctrl-C.
trap 'kill "$bench_pid" 2>/dev/null; exit 130' INT TERM
tty=0
if [ -t 1 ]; then tty=1; fi
columns=$(tput cols 2>/dev/null || echo 100)
last_print=0
while kill -0 "$bench_pid" 2>/dev/null; do
  read -r n_done last < <(finished)
  now=$(date +%s)
  elapsed=$(( now - start ))
  if [ "$interleaved" = 0 ]; then
    # Without interleaving benchmarks run one after the other in list order.
    what="running $(sed -n "$(( n_done + 1 ))p" <<<"$names")"
  else
    # Repetitions run in a random order and a benchmark is written when its
    # last one is done, so most finish in the last third of the run.
    what="repetitions interleaved at random${last:+, last finished $last}"
  fi
  status=$(printf 'bench.sh: %d/%d benchmarks done, %dm%02ds, %s' \
    "$n_done" "$count" $(( elapsed / 60 )) $(( elapsed % 60 )) "$what")
  if [ "$tty" = 1 ]; then
    printf '\r\033[K%s' "${status:0:$(( columns - 1 ))}"
  elif [ $(( now - last_print )) -ge 30 ]; then
    echo "$status"
    last_print=$now
  fi
  sleep 1
done
if [ "$tty" = 1 ]; then printf '\r\033[K'; fi
bench_status=0
wait "$bench_pid" || bench_status=$?
trap - INT TERM
if [ "$bench_status" != 0 ]; then
  echo "bench.sh: rlx_attn_bench failed (exit $bench_status); tail of $results/bench.log:" >&2
  tail -n 20 "$results/bench.log" >&2
  exit 1
fi
echo "bench.sh: ran $count benchmarks in $(( $(date +%s) - start )) s"
echo

# 4. Report: tables on stdout and in report.md, chart.png. Debian's
# matplotlib lives in the system python3, which a pyenv or venv python on
# PATH would not see.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
"$python" bench/report.py "$results/bench.json" \
  --markdown "$results/report.md" --chart "$results/chart.png"
echo
echo "bench.sh: wrote $results/bench.json, $results/report.md, $results/chart.png"
