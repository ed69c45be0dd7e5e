#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# The release tree's CMAKE_CROSSCOMPILING_EMULATOR (CMakePresets.json): runs
# a test binary natively, or under qemu-x86_64 -cpu $RLX_X86_EMULATED_CPU
# when that is set (the x86-avx2 test preset: Haswell-v4, an AVX2 CPU). One
# tree so serves both legs: the emulated one runs the native one's
# binaries instead of building the same tree again, as the aarch64 legs
# share one tree through QEMU_CPU.
if [ -n "${RLX_X86_EMULATED_CPU:-}" ]; then
  exec qemu-x86_64 -cpu "$RLX_X86_EMULATED_CPU" "$@"
fi
exec "$@"
