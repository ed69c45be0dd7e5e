#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The main job: installs what the benchmark needs (Debian, apt), builds
# rlx_attn_bench in Release, runs every benchmark (each kernel on every
# supported target, the scalar reference, the RLX-loop baseline, the peers
# oneDNN and XNNPACK when installed, and the floors) and writes a Markdown
# report. docs/BENCHMARKING.md says how to read, compare and extend it.
#
# Usage: scripts/bench.sh [OPTIONS] [-- BENCHMARK_ARGS...]
#   --quick         short run (about a minute after the build on 2 cores):
#                   0.01 s per benchmark, one repetition, f32 workloads
#                   only, AVX3/AVX2/NEON/SVE class targets
#                   (RLX_BENCH_TARGETS overrides), no reference on prefill
#   --no-install    no apt call: any Linux with a C++20 compiler, CMake,
#                   Highway and Google Benchmark (and Python 3 for the
#                   report); a missing peer leaves its columns out
#   --compare REV   also builds REV (a commit, tag or branch) in a git
#                   worktree and runs the old and this tree's binary in
#                   turns (old, new, old, new, ...) in one sitting, then
#                   compares them (report.py OLD.json NEW.json)
#   --rounds N      --compare: turns per side (default 4, of 3
#                   repetitions each)
#   --qemu-aarch64[=CPU]  cross-builds for aarch64 and runs under
#                   qemu-aarch64 -cpu CPU (default max: SVE2), to test the
#                   plumbing: the run is labelled emulated and its times
#                   mean nothing. Needs .ci/install-deps.sh's full list
#                   (qemu-user, g++-aarch64-linux-gnu, the :arm64
#                   packages); bench.sh never installs those.
#   --results DIR   where to write (default results, or
#                   results/qemu-aarch64 for an emulated run)
#   --machine LABEL names this machine in the report (default: CPU model)
#   BENCHMARK_ARGS go to rlx_attn_bench last, e.g.
#                   -- --benchmark_filter=masked_softmax/D2
#                   -- --shape=1,64,1,8192 --dtype=bf16 --mask=causal
# Writes DIR/bench.json (Google Benchmark JSON), DIR/bench.log (console),
# DIR/report.md, DIR/chart.png (with matplotlib); --compare writes
# DIR/compare/{old,new}.json and DIR/compare/report.md.
# Environment: RLX_BENCH_TARGETS=AVX3,AVX2 limits the targets;
# RLX_BENCH_BUILD_DIR (default build-bench) is relative to the repository.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
quick=0 install=1 compare="" rounds=4 qemu="" results="" machine=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-install) install=0 ;;
    --compare) [ $# -ge 2 ] || { echo "bench.sh: --compare needs a revision" >&2; exit 2; }
               compare=$2; shift ;;
    --compare=*) compare=${1#*=} ;;
    --rounds) [ $# -ge 2 ] || { echo "bench.sh: --rounds needs a number" >&2; exit 2; }
              rounds=$2; shift ;;
    --rounds=*) rounds=${1#*=} ;;
    --qemu-aarch64) qemu=max ;;
    --qemu-aarch64=*) qemu=${1#*=} ;;
    --results) [ $# -ge 2 ] || { echo "bench.sh: --results needs a directory" >&2; exit 2; }
               results=$2; shift ;;
    --results=*) results=${1#*=} ;;
    --machine) [ $# -ge 2 ] || { echo "bench.sh: --machine needs a label" >&2; exit 2; }
               machine=$2; shift ;;
    --machine=*) machine=${1#*=} ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '3,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $rounds in ''|*[!0-9]*|0) echo "bench.sh: --rounds wants a positive integer, not '$rounds'" >&2; exit 2 ;; esac
if [ -n "$compare" ] && [ -n "$qemu" ]; then
  echo "bench.sh: --compare and --qemu-aarch64 do not go together" >&2; exit 2
fi
build=${RLX_BENCH_BUILD_DIR:-build-bench}
emulator=()
if [ -n "$qemu" ]; then
  build=${RLX_BENCH_BUILD_DIR:-build-bench-aarch64}
  results=${results:-results/qemu-aarch64}
  emulator=(qemu-aarch64 -cpu "$qemu")
  export RLX_BENCH_EMULATOR="qemu-aarch64 -cpu $qemu"
  for tool in qemu-aarch64 aarch64-linux-gnu-g++; do
    command -v "$tool" >/dev/null || {
      echo "bench.sh: --qemu-aarch64 needs $tool: install .ci/install-deps.sh's full list (qemu-user, g++-aarch64-linux-gnu, the :arm64 packages)" >&2
      exit 2; }
  done
fi
results=${results:-results}
[ -z "$machine" ] || export RLX_BENCH_MACHINE=$machine

# 1. Packages: the benchmark's own (.ci/install-deps.sh --bench).
if [ "$install" = 1 ]; then
  bash .ci/install-deps.sh --bench
fi
for tool in cmake python3; do
  command -v "$tool" >/dev/null || {
    echo "bench.sh: $tool not found (install it, or run without --no-install on Debian)" >&2
    exit 2; }
done

# 2. Release builds of rlx_attn_bench alone (tests off: not needed here).
# build_bench SOURCE_DIR BUILD_DIR
build_bench() {
  local src=$1 dir=$2 args=()
  if command -v ninja >/dev/null; then args+=(-G Ninja); fi
  if [ -n "$qemu" ]; then
    args+=("-DCMAKE_TOOLCHAIN_FILE=$src/cmake/aarch64-linux-gnu.cmake")
  fi
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$dir" "${args[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DRLX_ATTN_MASK_BUILD_TESTS=OFF -DRLX_ATTN_MASK_BUILD_BENCH=ON \
      -DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF -DRLX_ATTN_MASK_BUILD_TOOLS=OFF
  else
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$dir" --target rlx_attn_bench
}

# The revision a tree is at, "+changes" when its tracked files differ.
revision() {
  local r
  r=$(git -C "$1" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
  if ! git -C "$1" diff --quiet HEAD -- 2>/dev/null; then r="$r+changes"; fi
  echo "$r"
}

build_bench "$root" "$build"
bin="$build/bench/rlx_attn_bench"
old_bin="" old_rev=""
if [ -n "$compare" ]; then
  sha=$(git rev-parse --verify --quiet "$compare^{commit}") || {
    echo "bench.sh: --compare: '$compare' is not a revision of this repository" >&2
    exit 2; }
  tree="$root/$build-compare/tree"
  if [ -e "$tree/.git" ]; then
    git -C "$tree" checkout -q --detach "$sha"
  else
    mkdir -p "$(dirname "$tree")"
    git worktree add -q --detach "$tree" "$sha"
  fi
  build_bench "$tree" "$tree/build-bench"
  old_bin="$tree/build-bench/bench/rlx_attn_bench"
  old_rev="$compare ($(git -C "$tree" rev-parse --short HEAD))"
fi
new_rev=$(revision "$root")

# 3. The arguments of every run.
args=()
if [ "$quick" = 1 ]; then
  args+=(--benchmark_min_time=0.01 --benchmark_repetitions=1
         "--benchmark_filter=-(bf16|f16|reference/P)")
  if [ -z "${RLX_BENCH_TARGETS:-}" ]; then
    supported=$(RLX_BENCH_TARGETS= "${emulator[@]}" "$bin" \
      --benchmark_list_tests --benchmark_filter='^copy_floor/D1/' |
      sed 's|.*/||')
    quick_targets=$(grep -xE 'AVX3|AVX2|NEON|SVE2?|SVE_256|SVE2_128' \
      <<<"$supported" | paste -sd, || true)
    export RLX_BENCH_TARGETS=${quick_targets:-$(head -n1 <<<"$supported")}
  fi
elif [ -n "$compare" ]; then
  # Three repetitions a turn, interleaved at random: with four turns a
  # side, twelve samples each for the U test, and the machine's slow
  # phases (minutes on a shared machine) shared by both sides.
  args+=(--benchmark_min_time=0.05 --benchmark_repetitions=3
         --benchmark_enable_random_interleaving=true)
else
  # Seven short repetitions, interleaved at random so that the slow drifts
  # of a shared machine spread over every benchmark instead of landing on a
  # few; the report shows each benchmark's fastest (least disturbed)
  # repetition (bench/report.py says why).
  args+=(--benchmark_min_time=0.05 --benchmark_repetitions=7
         --benchmark_enable_random_interleaving=true)
fi
# Repetitions per benchmark: the last flag wins, as in Google Benchmark.
reps=1
for a in "${args[@]}" "${extra[@]}"; do
  case $a in --benchmark_repetitions=*) reps=${a#*=} ;; esac
done

mkdir -p "$results"
echo
echo "bench.sh: CPU: $(grep -m1 -E '^model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)${RLX_BENCH_EMULATOR:+ (emulated: $RLX_BENCH_EMULATOR)}"
# (A toolchain file's compiler is not in the cache: the binary's context
# names every compiler anyway.)
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
compiler=${compiler:-${CXX:-c++}}
[ -z "$qemu" ] || compiler=aarch64-linux-gnu-g++
echo "bench.sh: compiler: $compiler $("$compiler" -dumpfullversion 2>/dev/null || true)"
if command -v dpkg-query >/dev/null; then
  for p in libhwy-dev libbenchmark-dev libdnnl-dev libxnnpack-dev; do
    version=$(dpkg-query -W -f='${Version}\n' "$p:$(dpkg --print-architecture)" \
      2>/dev/null || true)
    echo "bench.sh: $p ${version:-not installed}"
  done
fi
for peer in onednn xnnpack; do
  if ! "${emulator[@]}" "$bin" --benchmark_list_tests \
      --benchmark_filter="^${peer}_" 2>/dev/null | grep -q .; then
    echo "bench.sh: no $peer peer in this build (not installed): its columns are left out"
  fi
done

# The status line: repetitions started so far (from RLX_BENCH_PROGRESS:
# one line per repetition as it starts, "first" for a benchmark's first,
# which also probes for its iteration count) and the time left, estimated
# from the mean time of first and later repetitions so far.
# eta FILE BENCHMARKS REPETITIONS -> "<done> <seconds left or -1>"
eta() {
  awk -v nb="$2" -v reps="$3" -v now="$(date +%s.%N)" '
    { t[NR] = $1; kind[NR] = $2 }
    END {
      n = NR
      if (n == 0) { print 0, -1; exit }
      for (i = 1; i < n; i++) {
        d = t[i + 1] - t[i]
        if (kind[i] == "first") { sf += d; nf++ } else { sa += d; na++ }
      }
      mf = nf ? sf / nf : -1; ma = na ? sa / na : -1
      if (ma < 0 && mf > 0) ma = mf / 2
      if (mf < 0 && ma > 0) mf = ma * 2
      if (mf < 0) { print n - 1, -1; exit }
      for (i = 1; i <= n; i++) if (kind[i] == "first") cf++; else ca++
      left = (nb - cf) * mf + (nb * (reps - 1) - ca) * ma
      running = (kind[n] == "first" ? mf : ma) - (now - t[n])
      if (running > 0) left += running
      printf "%d %d\n", n - 1, left
    }' "$1"
}

# run_bench BINARY JSON LOG LABEL TURNS_AFTER: one run in the background
# with a status line (rewritten every second on a terminal, a plain line
# every 30 s otherwise); TURNS_AFTER more runs of about as long follow.
run_bench() {
  local bin=$1 json=$2 log=$3 label=$4 after=$5
  local names count total progress="$results/progress.txt"
  names=$("${emulator[@]}" "$bin" --benchmark_list_tests "${args[@]}" "${extra[@]}")
  count=$(grep -c . <<<"$names" || true)
  total=$(( count * reps ))
  echo "bench.sh: $label: $count benchmarks x $reps repetitions (${RLX_BENCH_TARGETS:-all supported targets}); console output in $log"
  : >"$progress"
  local start now elapsed done left status tty=0 last_print=0 columns
  start=$(date +%s)
  RLX_BENCH_PROGRESS=$progress "${emulator[@]}" "$bin" "${args[@]}" \
    "${extra[@]}" --benchmark_out="$json" --benchmark_out_format=json \
    >"$log" 2>&1 &
  bench_pid=$!
  # Background jobs of a script ignore SIGINT: stop the run on Ctrl-C.
  trap 'kill "$bench_pid" 2>/dev/null; exit 130' INT TERM
  if [ -t 1 ]; then tty=1; fi
  columns=$(tput cols 2>/dev/null || echo 100)
  while kill -0 "$bench_pid" 2>/dev/null; do
    read -r done left < <(eta "$progress" "$count" "$reps")
    now=$(date +%s)
    elapsed=$(( now - start ))
    if [ "$left" -ge 0 ] && [ "$after" -gt 0 ]; then
      left=$(( left + after * (elapsed + left) ))
    fi
    status=$(printf 'bench.sh: %s: %d/%d repetitions done, %dm%02ds' \
      "$label" "$done" "$total" $(( elapsed / 60 )) $(( elapsed % 60 )))
    if [ "$left" -ge 0 ]; then
      status+=$(printf ', about %dm%02ds left' $(( left / 60 )) $(( left % 60 )))
    fi
    if [ "$tty" = 1 ]; then
      printf '\r\033[K%s' "${status:0:$(( columns - 1 ))}"
    elif [ $(( now - last_print )) -ge 30 ]; then
      echo "$status"
      last_print=$now
    fi
    sleep 1
  done
  if [ "$tty" = 1 ]; then printf '\r\033[K'; fi
  local bench_status=0
  wait "$bench_pid" || bench_status=$?
  trap - INT TERM
  if [ "$bench_status" != 0 ]; then
    echo "bench.sh: rlx_attn_bench failed (exit $bench_status); tail of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  echo "bench.sh: $label: $total repetitions in $(( $(date +%s) - start )) s"
}

# 4. The runs and the report. Debian's matplotlib lives in the system
# python3, which a pyenv or venv python on PATH would not see.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
if [ -z "$compare" ]; then
  RLX_BENCH_REVISION=$new_rev run_bench "$bin" "$results/bench.json" \
    "$results/bench.log" "run" 0
  echo
  chart=()
  if "$python" -c 'import matplotlib' 2>/dev/null; then
    chart=(--chart "$results/chart.png")
  fi
  "$python" bench/report.py "$results/bench.json" \
    --markdown "$results/report.md" "${chart[@]}"
  echo
  echo "bench.sh: wrote $results/bench.json, $results/report.md${chart:+, $results/chart.png}"
  exit 0
fi
dir="$results/compare"
mkdir -p "$dir"
rm -f "$dir"/old-*.json "$dir"/new-*.json
for (( r = 1; r <= rounds; r++ )); do
  RLX_BENCH_REVISION=$old_rev run_bench "$old_bin" "$dir/old-$r.json" \
    "$dir/old-$r.log" "turn $r/$rounds, old $old_rev" $(( 2 * (rounds - r) + 1 ))
  RLX_BENCH_REVISION=$new_rev run_bench "$bin" "$dir/new-$r.json" \
    "$dir/new-$r.log" "turn $r/$rounds, new $new_rev" $(( 2 * (rounds - r) ))
done
old_files=() new_files=()
for (( r = 1; r <= rounds; r++ )); do
  old_files+=("$dir/old-$r.json"); new_files+=("$dir/new-$r.json")
done
"$python" bench/report.py --merge "$dir/old.json" "${old_files[@]}"
"$python" bench/report.py --merge "$dir/new.json" "${new_files[@]}"
echo
"$python" bench/report.py "$dir/old.json" "$dir/new.json" \
  --markdown "$dir/report.md"
echo
echo "bench.sh: wrote $dir/old.json, $dir/new.json, $dir/report.md"
