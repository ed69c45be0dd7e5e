#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/embed-test.sh add_subdirectory|fetchcontent|no-highway [BUILD_DIR]
#
# Embeds this source tree in a parent project (tests/embed) configured with
# CMAKE_BUILD_TYPE=Debug, the way the README says to, then checks that
# - the parent's cache still says Debug (no default forced on a parent),
# - the parent builds and its consumer (tests/consumer/main.cc) runs,
# - installing the parent installs nothing of rlx-attn-mask
#   (RLX_ATTN_MASK_INSTALL is off when embedded).
# no-highway: configuring where no Highway can be found fails at once with
# a message that says what to install.
# BUILD_DIR, a configured tree, lends its generator and compilers (ctest).
set -euo pipefail
mode=${1:-}
case "$mode" in
  add_subdirectory | fetchcontent | no-highway) ;;
  *) echo "usage: $0 add_subdirectory|fetchcontent|no-highway [BUILD_DIR]" >&2
     exit 2 ;;
esac
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
args=()
if [ -n "${2:-}" ]; then
  cache() { sed -n "s/^$1:[A-Z]*=//p" "$2/CMakeCache.txt" | head -n 1; }
  args+=(-G "$(cache CMAKE_GENERATOR "$2")"
         -DCMAKE_C_COMPILER="$(cache CMAKE_C_COMPILER "$2")"
         -DCMAKE_CXX_COMPILER="$(cache CMAKE_CXX_COMPILER "$2")")
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rlx-embed.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ "$mode" = no-highway ]; then
  if cmake -S "$src" -B "$work/build" -DCMAKE_DISABLE_FIND_PACKAGE_hwy=ON \
       ${args[@]+"${args[@]}"} >"$work/log" 2>&1; then
    echo "embed-test: configuring without Highway succeeded" >&2
    exit 1
  fi
  if ! grep -q "needs Google Highway" "$work/log" ||
     ! grep -q "apt install libhwy-dev" "$work/log"; then
    echo "embed-test: no clear message without Highway:" >&2
    cat "$work/log" >&2
    exit 1
  fi
  echo "embed-test: OK (no Highway: a configure error that says what to install)"
  exit 0
fi

echo "embed-test: $mode, parent in Debug"
cmake -S "$src/tests/embed" -B "$work/build" -DCMAKE_BUILD_TYPE=Debug \
  -DRLX_EMBED="$mode" -DRLX_SOURCE_DIR="$src" ${args[@]+"${args[@]}"}
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/build/CMakeCache.txt")
if [ "$type" != Debug ]; then
  echo "embed-test: the parent's CMAKE_BUILD_TYPE is '$type', not Debug" >&2
  exit 1
fi
cmake --build "$work/build"
ctest --test-dir "$work/build" --output-on-failure
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
leaked=$(cd "$work/prefix" && find . -path '*rlx*' -o -name '*rlx_attn_mask*')
if [ -n "$leaked" ]; then
  echo "embed-test: installing the parent installed rlx-attn-mask files:" >&2
  echo "$leaked" >&2
  exit 1
fi
[ -x "$work/prefix/bin/embed_consumer" ] ||
  { echo "embed-test: the parent's own install is missing" >&2; exit 1; }
echo "embed-test: OK ($mode; cache Debug; nothing of rlx installed)"
