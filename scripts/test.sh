#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/test.sh [LEG...]    (default: every leg, in this order)
#
# Every test on every instruction set, from a fresh Debian 12 x86-64 machine
# (root or sudo, Debian's package mirror): installs what is missing
# (.ci/install-deps.sh), then runs each leg's CMake workflow preset, which is
# also the one command to run that leg alone:
#   cmake --workflow --preset LEG
# Legs (CMakePresets.json says what each builds and expects):
#   release         Release, ctest on this CPU: every x86 target it supports
#   x86-avx2        the release tree under qemu-x86_64 -cpu Haswell-v4 (AVX2)
#   asan            Debug with ASan and UBSan, this CPU
#   tsan            ThreadSanitizer: the thread tests alone
#   shared          shared library; installed-package consumers (find_package)
#   aarch64-neon    aarch64 cross build under qemu -cpu cortex-a57 (NEON)
#   aarch64-sve256  the same tree under qemu -cpu max,sve256=on (SVE_256)
#   aarch64-sve2    the same tree under qemu -cpu max (512-bit SVE2)
#   fuzz            libFuzzer, clang ASan+UBSan: 30 s on both cores (-fork=2)
#   python          pip install into a venv, the pytest suite (NumPy, PyTorch)
#                   against the installed package, pip wheel
#   rust            the Rust crate: cargo test --offline (the seed's tests)
# Prints each leg's time and result, ctest's output of every failed test, and
# a last line `N passed, N failed` counting ctest's tests over all legs (a leg
# that fails before its tests run counts one failure). Exits non-zero if
# anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

all=(release x86-avx2 asan tsan shared aarch64-neon aarch64-sve256 aarch64-sve2
     fuzz python rust)
case "${1:-}" in
  -h | --help) sed -n '3,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
  --list) printf '%s\n' "${all[@]}"; exit 0 ;;
esac
legs=("$@")
[ $# -gt 0 ] || legs=("${all[@]}")
for leg in "${legs[@]}"; do
  [[ " ${all[*]} " == *" $leg "* ]] ||
    { echo "test.sh: unknown leg $leg (legs: ${all[*]})" >&2; exit 2; }
done

bash .ci/install-deps.sh || { echo "test.sh: installing failed" >&2; exit 1; }
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
# The guest runs on Debian's arm64 runtime; a loader prefix makes its threads
# hang (cmake/aarch64-linux-gnu.cmake says why).
unset QEMU_LD_PREFIX

logs=$(mktemp -d "${TMPDIR:-/tmp}/rlx-test.XXXXXX")
trap 'rm -rf "$logs"' EXIT
declare -A result seconds
passed=0 failed=0 skipped=0 total_start=$SECONDS
for leg in "${legs[@]}"; do
  echo "== $leg: cmake --workflow --preset $leg"
  start=$SECONDS
  cmake --workflow --preset "$leg" 2>&1 | tee "$logs/$leg.log"
  rc=${PIPESTATUS[0]}
  seconds[$leg]=$((SECONDS - start))
  # ctest's summary: "97% tests passed, 3 tests failed out of 100".
  summary=$(grep -aE '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' \
            "$logs/$leg.log" | tail -n 1)
  if [ -n "$summary" ]; then
    read -r bad all_tests <<<"$(sed -E 's/.*, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/' <<<"$summary")"
    skips=$(grep -acE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$logs/$leg.log")
    passed=$((passed + all_tests - bad - skips))
    failed=$((failed + bad))
    skipped=$((skipped + skips))
  fi
  if [ "$rc" = 0 ] && [ -n "$summary" ]; then
    result[$leg]=PASS
  else
    result[$leg]=FAIL
    [ -n "$summary" ] && [ "${bad:-0}" != 0 ] || failed=$((failed + 1))
  fi
  echo "== $leg: ${result[$leg]} (${seconds[$leg]} s)"
done

echo
printf '%-16s %-6s %8s\n' leg result seconds
for leg in "${legs[@]}"; do
  printf '%-16s %-6s %8s\n' "$leg" "${result[$leg]}" "${seconds[$leg]}"
done
printf '%-16s %-6s %8s\n' total "" $((SECONDS - total_start))
echo "skipped (targets an emulated CPU does not offer): $skipped"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
