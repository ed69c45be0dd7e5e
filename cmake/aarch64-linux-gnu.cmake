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
# The guest runs on Debian's own arm64 runtime (libc6:arm64, libstdc++6:arm64,
# libhwy1:arm64, pulled in by the :arm64 -dev packages): its loader
# /lib/ld-linux-aarch64.so.1 finds them in /usr/lib/aarch64-linux-gnu, so
# neither LD_LIBRARY_PATH nor -L is needed. Do not add -L /usr/aarch64-linux-gnu
# (or QEMU_LD_PREFIX): the cross loader there (libc6-arm64-cross 2.36-8cross1)
# then reads the host's /etc/ld.so.cache and loads the multiarch libc.so.6
# (2.36-9+deb12u*), and with that mismatched pair under qemu-user 7.2 the
# first pthread_create spins forever (every std::thread hangs).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
