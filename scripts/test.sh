#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/test.sh [--leg NAME]... [--jobs N] [--list] [--help]
#
# The whole test suite on every instruction set, from a fresh Debian 12 x86-64
# machine (root, or sudo, and Debian's package mirror): installs what it needs
# and runs each leg below, printing a banner per leg and a table of results at
# the end, then one line `N passed, N failed` (counting legs). Exits non-zero
# if any leg failed. A leg that cannot run (a tool is missing, qemu fails, the
# CPU lacks a target the leg expects) fails; nothing is skipped silently.
#
# Legs (all by default, in this order; --leg picks some, repeatable or
# comma-separated; "aarch64" means every aarch64 leg):
#   install         .ci/install-deps.sh (apt packages, arm64 multiarch)
#   native          Release build (preset release), ctest on this CPU: every
#                   x86 target it has (expected: derived from /proc/cpuinfo)
#   x86-avx2        the native Release test binaries under
#                   qemu-x86_64 -cpu Haswell-v4 (AVX2 SSE4 SCALAR, AVX2 active)
#   asan            Debug build with ASan+UBSan (preset asan), ctest natively
#   consumer        cmake --install of a static and a shared Release build,
#                   tests/consumer built against each with find_package
#   aarch64-build   cross build (preset aarch64, cmake/aarch64-linux-gnu.cmake)
#   aarch64-neon    its tests under qemu-aarch64, QEMU_CPU=cortex-a57 (NEON)
#   aarch64-sve256  QEMU_CPU=max,sve256=on (SVE_256 SVE2 SVE NEON, SVE_256)
#   aarch64-sve2    QEMU_CPU=max: 512-bit SVE2 (SVE2 SVE NEON, SVE2 active)
#   fuzz            clang ASan+UBSan build of tests/fuzz, run for
#                   RLX_FUZZ_SECONDS (default 60) from tests/fuzz/corpus:
#                   every kernel on every target against the oracle
#   rust            bindings/rust: cargo test --offline (the seed's own tests)
#
# Every leg states the targets it expects to targets_test through
# RLX_EXPECT_TARGETS (all must be supported) and RLX_EXPECT_ACTIVE (the best).
# Emulated legs scale randomized test iterations by RLX_TEST_SCALE (x86-avx2
# 0.25, aarch64-neon 0.5, aarch64-sve256 and -sve2 0.25; the environment
# variable RLX_EMULATED_TEST_SCALE overrides them all) and split each
# GoogleTest binary into shards run --jobs at a time (scripts/run-tests.sh).
# At the end, the lines that say why a leg failed are repeated above the
# table of results.
# Build trees: build-release, build-asan, build-shared, build-aarch64.
#
# Options:
#   --leg NAME   run this leg (or group); default: all
#   --jobs N     parallel build and test jobs (default: number of cores)
#   --list       print the leg names and exit
#   -h, --help   this text
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2

all_legs=(install native x86-avx2 asan consumer aarch64-build aarch64-neon
          aarch64-sve256 aarch64-sve2 fuzz rust)

# RLX_TEST_SCALE per emulated leg, measured to keep the whole command well
# under 30 minutes on 2 cores (12 on an idle Zen 4, packages installed): qemu
# runs AVX2 and SVE code ~30x slower than the host, NEON ~5x; exhaustive
# sweeps are never scaled.
declare -A scale=([x86-avx2]=0.25 [aarch64-neon]=0.5 [aarch64-sve256]=0.25
                  [aarch64-sve2]=0.25)
if [ -n "${RLX_EMULATED_TEST_SCALE:-}" ]; then
  for k in "${!scale[@]}"; do scale[$k]=$RLX_EMULATED_TEST_SCALE; done
fi

usage() { sed -n '3,46s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

jobs=$(nproc 2>/dev/null || echo 2)
selected=()
while [ $# -gt 0 ]; do
  case "$1" in
    --leg) [ $# -ge 2 ] || { usage >&2; exit 2; }
           IFS=, read -r -a l <<<"$2"; selected+=("${l[@]}"); shift 2 ;;
    --leg=*) IFS=, read -r -a l <<<"${1#--leg=}"; selected+=("${l[@]}"); shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#--jobs=}; shift ;;
    --list) printf '%s\n' "${all_legs[@]}"; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

legs=()
if [ ${#selected[@]} -eq 0 ]; then
  legs=("${all_legs[@]}")
else
  for leg in "${all_legs[@]}"; do
    for s in "${selected[@]}"; do
      if [[ $leg == "$s" || $leg == "$s"-* ]]; then
        legs+=("$leg")
        break
      fi
    done
  done
  for s in "${selected[@]}"; do
    ok=0
    for leg in "${all_legs[@]}"; do
      [[ $leg == "$s" || $leg == "$s"-* ]] && ok=1
    done
    if [ $ok = 0 ]; then
      echo "test.sh: unknown leg: $s (legs: ${all_legs[*]})" >&2
      exit 2
    fi
  done
fi

# ---------------------------------------------------------------------------
# Helpers. Each leg runs in a subshell with `set -e`: the first failing
# command fails the leg.

say() { echo "test.sh: $*"; }
die() { echo "test.sh: ERROR: $*" >&2; exit 1; }

need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || die "$t not found (run the install leg)"
  done
}

# The x86 targets of this CPU, best first, from the kernel's view of CPUID
# (/proc/cpuinfo flags; "pni" is SSE3, "abm" is LZCNT) grouped as Highway
# groups them: 1.0.3's groups plus the bits later versions add (AVX3: CD;
# AVX3_DL: VBMI, GFNI), so that a CPU where versions disagree fails loudly
# instead of passing on a guess. The portable fallback is SCALAR with g++ 12
# (EMU128 needs 12.3+).
native_targets() {
  local flags t=()
  [ "$(uname -m)" = x86_64 ] || die "the native leg expects an x86-64 CPU"
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  has() {
    local f
    for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done
  }
  local sse4=(pni ssse3 sse4_1 sse4_2 pclmulqdq aes)
  local avx2=("${sse4[@]}" avx avx2 bmi1 bmi2 fma f16c abm)
  local avx3=("${avx2[@]}" avx512f avx512vl avx512dq avx512bw avx512cd)
  local avx3_dl=("${avx3[@]}" avx512_vnni vpclmulqdq avx512vbmi avx512_vbmi2
                 vaes avx512_vpopcntdq avx512_bitalg gfni)
  if has "${avx3_dl[@]}"; then t+=(AVX3_DL); fi
  if has "${avx3[@]}"; then t+=(AVX3); fi
  if has "${avx2[@]}"; then t+=(AVX2); fi
  if has "${sse4[@]}"; then t+=(SSE4); fi
  t+=(SCALAR)
  local IFS=,
  echo "${t[*]}"
}

# expect TARGETS: exports what targets_test and the consumer check.
expect() {
  export RLX_EXPECT_TARGETS=$1
  export RLX_EXPECT_ACTIVE=${1%%,*}
  say "expects targets $RLX_EXPECT_TARGETS, active $RLX_EXPECT_ACTIVE"
}

# build PRESET: configures (every time: cheap, and picks up new files) and
# builds one preset's tree.
build() {
  local start=$SECONDS
  cmake --preset "$1"
  cmake --build --preset "$1" --parallel "$jobs"
  say "built preset $1 in $((SECONDS - start)) s"
}

# report TREE [PREFIX...]: what Highway reports in a tree, under an emulator.
report() {
  local tree=$1
  shift
  "$@" "$tree/tests/targets_test" \
    --gtest_filter=TargetsTest.SupportedAreCompiledAndTheBestIsActive 2>&1 |
    grep -E '^(compiled|supported|active):' | sed 's/^/test.sh: highway /' ||
    die "targets_test did not run${*:+ under $*}"
}

# emulated LEG TREE [run-tests.sh options]: runs a tree's tests through
# scripts/run-tests.sh with the leg's RLX_TEST_SCALE. A shard that runs 15
# minutes is hung (the slowest take 2 under qemu on a busy machine).
emulated() {
  local leg=$1 tree=$2
  shift 2
  export RLX_TEST_SCALE=${scale[$leg]}
  say "RLX_TEST_SCALE=$RLX_TEST_SCALE"
  bash scripts/run-tests.sh --jobs "$jobs" --shards $((2 * jobs)) \
    --timeout 900 "$@" "$tree"
}

# ---------------------------------------------------------------------------
# Legs.

leg_install() {
  bash .ci/install-deps.sh
}

leg_native() {
  need cmake ninja ctest
  local targets
  targets=$(native_targets)
  expect "$targets"
  build release
  report build-release
  ctest --preset release --parallel "$jobs"
}

leg_x86-avx2() {
  need cmake ninja qemu-x86_64
  expect AVX2,SSE4,SCALAR
  build release
  local emu=(qemu-x86_64 -cpu Haswell-v4)
  report build-release "${emu[@]}"
  emulated x86-avx2 build-release --emulator "${emu[*]}"
}

leg_asan() {
  need cmake ninja ctest
  local targets
  targets=$(native_targets)
  expect "$targets"
  build asan
  report build-asan
  ctest --preset asan --parallel "$jobs"
}

leg_consumer() {
  need cmake ninja ctest
  local targets
  targets=$(native_targets)
  expect "$targets"
  say "static library: the Release tree"
  build release
  bash scripts/consumer-test.sh build-release
  say "shared library: build-shared (BUILD_SHARED_LIBS=ON)"
  cmake -S . -B build-shared -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DRLX_ATTN_MASK_BUILD_TESTS=OFF \
    -DRLX_ATTN_MASK_BUILD_BENCH=OFF -DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF
  cmake --build build-shared --parallel "$jobs"
  bash scripts/consumer-test.sh build-shared
}

leg_aarch64-build() {
  need cmake ninja aarch64-linux-gnu-g++ qemu-aarch64
  build aarch64
}

# aarch64 CPU TARGETS: the cross-built tests under qemu-aarch64 -cpu CPU.
aarch64() {
  local leg=$1 cpu=$2
  need cmake ninja aarch64-linux-gnu-g++ qemu-aarch64
  # The guest runs on Debian's arm64 runtime (libc6:arm64 and the :arm64
  # libraries in /usr/lib/aarch64-linux-gnu), with no -L prefix: see
  # cmake/aarch64-linux-gnu.cmake for why a prefix makes threads hang.
  [ -e /lib/ld-linux-aarch64.so.1 ] ||
    die "/lib/ld-linux-aarch64.so.1 is missing (libc6:arm64)"
  unset QEMU_LD_PREFIX
  expect "$3"
  build aarch64
  export QEMU_CPU=$cpu
  say "QEMU_CPU=$QEMU_CPU"
  report build-aarch64 qemu-aarch64
  emulated "$leg" build-aarch64
}

leg_aarch64-neon() { aarch64 aarch64-neon cortex-a57 NEON; }
leg_aarch64-sve256() {
  aarch64 aarch64-sve256 max,sve256=on SVE_256,SVE2,SVE,NEON
}
leg_aarch64-sve2() { aarch64 aarch64-sve2 max SVE2,SVE,NEON; }

leg_fuzz() {
  need cmake ninja clang++
  local targets
  targets=$(native_targets)
  expect "$targets"
  local start=$SECONDS
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DRLX_ATTN_MASK_SANITIZE=ON -DRLX_ATTN_MASK_FUZZ=ON \
    -DRLX_ATTN_MASK_BUILD_TESTS=OFF -DRLX_ATTN_MASK_BUILD_BENCH=OFF \
    -DRLX_ATTN_MASK_BUILD_EXAMPLES=OFF
  cmake --build build-fuzz --parallel "$jobs" --target score_kernels_fuzzer
  say "built the fuzzer in $((SECONDS - start)) s"
  # New inputs go to a scratch corpus; the committed one holds regressions.
  local scratch
  scratch=$(mktemp -d)
  build-fuzz/tests/fuzz/score_kernels_fuzzer -max_total_time="${RLX_FUZZ_SECONDS:-60}" \
    -max_len=4096 -artifact_prefix="$scratch/" -print_final_stats=1 \
    "$scratch" tests/fuzz/corpus
  rm -rf "$scratch"
}

leg_rust() {
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  need cargo cmake
  (cd bindings/rust && cargo test --offline)
}

# ---------------------------------------------------------------------------

declare -A result seconds
describe() {
  case "$1" in
    install) echo "install Debian packages (.ci/install-deps.sh)" ;;
    native) echo "Release build, ctest on this CPU" ;;
    x86-avx2) echo "Release tests under qemu-x86_64 -cpu Haswell-v4" ;;
    asan) echo "Debug ASan+UBSan build, ctest on this CPU" ;;
    consumer) echo "install + find_package consumer, static and shared" ;;
    aarch64-build) echo "aarch64 cross build" ;;
    aarch64-neon) echo "aarch64 tests, qemu cortex-a57 (NEON)" ;;
    aarch64-sve256) echo "aarch64 tests, qemu max,sve256=on (SVE_256)" ;;
    aarch64-sve2) echo "aarch64 tests, qemu max (SVE2, 512-bit)" ;;
    fuzz) echo "libFuzzer, clang ASan+UBSan, every target vs the oracle" ;;
    rust) echo "Rust crate: cargo test --offline (the seed's tests)" ;;
  esac
}

# Each leg's output is also kept, so that the end of the run can repeat why a
# leg failed: a CI log is often shown by its last lines only.
logs=$(mktemp -d "${TMPDIR:-/tmp}/rlx-test-logs.XXXXXX")
trap 'rm -rf "$logs"' EXIT

# digest LEG: the lines of a failed leg's log that say what failed (test
# failures, assertion details, signals, timeouts, errors), then its last lines.
digest() {
  local log=$logs/$1.log
  echo "------------------------------------------------------------------------------"
  echo "-- $1: what failed (from its output above)"
  grep -a -A 8 -E ': Failure$|FAILED|FAIL |signal|Segmentation|Abort|timed out|terminate called|ERROR|[Ee]rror|panicked' "$log" |
    grep -v -E '^(--|\[ +(OK|RUN) +\].*)$' | awk '!seen[$0]++ && ++n <= 40'
  echo "-- last lines of $1:"
  tail -n 15 "$log"
}

total_start=$SECONDS
i=0
for leg in "${legs[@]}"; do
  i=$((i + 1))
  echo
  echo "=============================================================================="
  echo "== [$i/${#legs[@]}] $leg: $(describe "$leg")"
  echo "=============================================================================="
  start=$SECONDS
  ( set -e; "leg_$leg" ) 2>&1 | tee "$logs/$leg.log"
  rc=${PIPESTATUS[0]}
  seconds[$leg]=$((SECONDS - start))
  if [ $rc = 0 ]; then result[$leg]=PASS; else result[$leg]=FAIL; fi
  echo "== $leg: ${result[$leg]} (${seconds[$leg]} s)"
done

for leg in "${legs[@]}"; do
  [ "${result[$leg]}" = PASS ] || digest "$leg"
done

passed=0
failed=0
echo
echo "=============================================================================="
printf '%-16s %-6s %8s\n' leg result seconds
for leg in "${legs[@]}"; do
  printf '%-16s %-6s %8s\n' "$leg" "${result[$leg]}" "${seconds[$leg]}"
  if [ "${result[$leg]}" = PASS ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
printf '%-16s %-6s %8s\n' total "" $((SECONDS - total_start))
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
