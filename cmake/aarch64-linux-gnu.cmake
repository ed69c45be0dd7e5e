# SPDX-License-Identifier: MIT OR Apache-2.0
# Cross build for 64-bit Arm with Debian's g++-aarch64-linux-gnu and the
# :arm64 multiarch packages (libhwy-dev:arm64, libgtest-dev:arm64). Tests run
# under qemu-aarch64; pick the emulated CPU with QEMU_CPU (cortex-a57: NEON;
# max: SVE2 at 512 bits; max,sve256=on: 256-bit SVE).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Packages are searched below these roots only (and below
# CMAKE_STAGING_PREFIX, which is how scripts/consumer-test.sh finds a
# temporary install).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# -L makes the guest's loader and libc those of libc6-dev-arm64-cross; the
# loader finds the :arm64 libhwy.so.1 and libstdc++ in
# /usr/lib/aarch64-linux-gnu, one of its default directories, so no
# LD_LIBRARY_PATH is needed.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
