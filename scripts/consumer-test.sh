#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Usage: scripts/consumer-test.sh BUILD_DIR
#
# Installs the library of an already built tree (`cmake --install`) into a
# fresh temporary prefix and builds and runs tests/consumer against it with
# find_package(rlx_attn_mask CONFIG REQUIRED). The consumer is configured like
# the tree it was installed from (generator, compiler, build type, toolchain
# file and emulator: a cross or emulated build runs the consumer under its
# emulator; a sanitized build links the sanitizer runtimes), so it also runs
# as a ctest in every build. Exits non-zero if anything fails.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: $0 BUILD_DIR  (a configured and built tree)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# cache NAME: the value of NAME in the tree's CMakeCache.txt ("" if unset).
cache() {
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1
}
generator=$(cache CMAKE_GENERATOR)
build_type=$(cache CMAKE_BUILD_TYPE)
cxx=$(cache CMAKE_CXX_COMPILER)
toolchain=$(cache CMAKE_TOOLCHAIN_FILE)
shared=$(cache BUILD_SHARED_LIBS)
sanitize=$(cache RLX_ATTN_MASK_SANITIZE)
emulator=$(cache CMAKE_CROSSCOMPILING_EMULATOR)

work=$(mktemp -d "$build/consumer-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

echo "consumer-test: installing $build into a temporary prefix"
cmake --install "$build" --prefix "$prefix" ${build_type:+--config "$build_type"}

# The installed library is the kind the tree built.
case "$shared" in
  ON | on | TRUE | true | 1 | YES | yes) lib=librlx_attn_mask.so ;;
  *) lib=librlx_attn_mask.a ;;
esac
if [ -z "$(find "$prefix" -name "$lib" -print -quit)" ]; then
  echo "consumer-test: $lib was not installed under the prefix" >&2
  find "$prefix" -type f >&2
  exit 1
fi
if [ -z "$(find "$prefix" -name rlx_attn_mask-config.cmake -print -quit)" ]; then
  echo "consumer-test: no rlx_attn_mask-config.cmake was installed" >&2
  exit 1
fi

args=(-S "$src/tests/consumer" -B "$work/build" -G "$generator"
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix")
[ -n "$build_type" ] && args+=(-DCMAKE_BUILD_TYPE="$build_type")
if [ -n "$toolchain" ]; then
  # A cross toolchain searches packages only below its root paths; the
  # staging prefix is searched too, so the temporary prefix is found there.
  args+=(-DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_STAGING_PREFIX="$prefix")
fi
[ -n "$emulator" ] && args+=(-DCMAKE_CROSSCOMPILING_EMULATOR="$emulator")
case "$sanitize" in
  ON | on | TRUE | true | 1 | YES | yes)
    # A static sanitized library needs the sanitizer runtimes in the link.
    args+=(-DCMAKE_CXX_FLAGS="-fsanitize=address,undefined"
           -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined") ;;
esac

echo "consumer-test: configuring tests/consumer (${generator}, ${build_type:-no build type}${toolchain:+, cross})"
cmake "${args[@]}"
cmake --build "$work/build"
ctest --test-dir "$work/build" --output-on-failure
# What the consumer printed (the target it ran on).
grep -h "^consumer:" "$work/build/Testing/Temporary/LastTest.log" || true
echo "consumer-test: OK ($lib)"
