#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Builds and runs a C consumer (tests/pkgconfig_consumer/main.c) against an
# installed rlx-attn-mask, using nothing but `pkg-config rlx-attn-mask`, and
# links it with the C compiler driver, so the .pc file must name the C++
# runtime and Highway for a static library (`pkg-config --static`).
#
#   scripts/consumer_pkgconfig.sh PREFIX
#       against a tree already installed (cmake --install BUILD --prefix PREFIX)
#   scripts/consumer_pkgconfig.sh --build BUILD_DIR
#       installs the built tree BUILD_DIR into a fresh temporary prefix first,
#       and compiles with that tree's C compiler and sanitizer flags (this is
#       the ctest `pkgconfig_consumer`)
#
# Environment: CC (default cc); CFLAGS and LDFLAGS are added to the compile
# and the link (a sanitized static library needs -fsanitize=... in both).
set -euo pipefail

usage() {
  echo "usage: $0 INSTALL_PREFIX | --build BUILD_DIR" >&2
  exit 2
}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rlx-pkgconfig.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ $# -eq 2 ] && [ "$1" = --build ]; then
  [ -f "$2/CMakeCache.txt" ] || usage
  build=$(cd "$2" && pwd)
  # cache NAME: the value of NAME in the tree's CMakeCache.txt ("" if unset).
  cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1; }
  prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix" >/dev/null
  CC=${CC:-$(cache CMAKE_C_COMPILER)}
  # An emulated tree (CMAKE_CROSSCOMPILING_EMULATOR, a ;-list) runs the
  # consumer under the same emulator as its tests.
  IFS=';' read -r -a emulator <<<"$(cache CMAKE_CROSSCOMPILING_EMULATOR)"
  case "$(cache RLX_ATTN_MASK_SANITIZE)" in
    ON | on | TRUE | true | 1 | YES | yes)
      CFLAGS="${CFLAGS:-} -fsanitize=address,undefined"
      LDFLAGS="${LDFLAGS:-} -fsanitize=address,undefined" ;;
  esac
elif [ $# -eq 1 ] && [ "${1#-}" = "$1" ]; then
  prefix=$(cd "$1" && pwd)
else
  usage
fi

pc=$(find "$prefix" -path '*/pkgconfig/rlx-attn-mask.pc' -print -quit)
if [ -z "$pc" ]; then
  echo "consumer_pkgconfig: no pkgconfig/rlx-attn-mask.pc under $prefix" >&2
  exit 1
fi
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

# A static library's dependencies (Highway, the C++ runtime) are its
# private ones: --static asks for them, as the .pc file says.
static=()
libdir=$(pkg-config --variable=libdir rlx-attn-mask)
[ -e "$libdir/librlx_attn_mask.so" ] || static=(--static)
read -r -a cflags <<<"$(pkg-config --cflags rlx-attn-mask)"
read -r -a libs <<<"$(pkg-config --libs ${static[@]+"${static[@]}"} rlx-attn-mask)"
read -r -a extra_cflags <<<"${CFLAGS:-}"
read -r -a extra_ldflags <<<"${LDFLAGS:-}"
echo "consumer_pkgconfig: $pc"
echo "  cflags: ${cflags[*]}"
echo "  libs:   ${libs[*]}"

cc=${CC:-cc}
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror "${extra_cflags[@]}" \
  "${cflags[@]}" -c "$repo/tests/pkgconfig_consumer/main.c" -o "$work/main.o"
"$cc" "$work/main.o" -o "$work/consumer" "${extra_ldflags[@]}" "${libs[@]}"
# A shared build's library is found at run time through its libdir.
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  ${emulator[@]+"${emulator[@]}"} "$work/consumer"
echo "consumer_pkgconfig: ok"
