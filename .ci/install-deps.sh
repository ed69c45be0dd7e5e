#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs every Debian 12 package the build, the tests (native, emulated x86,
# aarch64 under qemu, sanitizers) and the benchmarks need. Idempotent: packages
# already present are left alone, so a second run costs one `dpkg -s` each.
set -euo pipefail

native=(cmake ninja-build g++ clang libclang-rt-14-dev libhwy-dev libgtest-dev
        libbenchmark-dev pkg-config qemu-user g++-aarch64-linux-gnu
        libc6-dev-arm64-cross)
arm64=(libhwy-dev:arm64 libgtest-dev:arm64)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${native[@]}" "${arm64[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
