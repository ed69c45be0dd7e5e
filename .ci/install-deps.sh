#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs every Debian 12 package the build, the tests (native, emulated x86,
# aarch64 under qemu, sanitizers) and the benchmarks need. Idempotent: packages
# already present are left alone, so a second run costs one dpkg query.
# With --bench, only what scripts/bench.sh needs (see the block below).
#
# A native package counts as present only in the native (or "all")
# architecture: once the :arm64 twin of a Multi-Arch: same package
# (libhwy-dev, libgtest-dev) is installed, a bare name matches both.
set -euo pipefail

arch=$(dpkg --print-architecture)
native=(cmake ninja-build g++ clang clang-format libclang-rt-14-dev libhwy-dev libgtest-dev
        libgmock-dev libbenchmark-dev pkg-config qemu-user
        g++-aarch64-linux-gnu libc6-dev-arm64-cross cargo
        python3-dev pybind11-dev python3-pybind11 python3-numpy python3-torch
        python3-pytest python3-venv python3-pip python3-setuptools python3-wheel)
# cargo (Debian's, rustc 1.63) is for the rust leg (bindings/rust).
# python3-dev, pybind11-dev, python3-pybind11, python3-numpy, python3-torch
# and python3-pytest are the Python module's (bindings/python), built and
# tested (pytest under ctest) by the python leg; they install into Debian's
# system python3, which bindings/python/CMakeLists.txt prefers.
# gmock is its own package (the tests link GTest::gmock); the aarch64 build
# builds the benchmarks too, so that they are known to compile for SVE.
# libc6:arm64 (a dependency anyway) is the runtime the tests run on under
# qemu-aarch64 (see cmake/aarch64-linux-gnu.cmake).
arm64=(libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
       libbenchmark-dev:arm64 libc6:arm64)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# installed PACKAGE ARCH...: true if PACKAGE is fully installed for one ARCH.
installed() {
  local pkg=$1 status a
  shift
  status=$(dpkg-query -W -f='${db:Status-Abbrev}|${Architecture}\n' "$pkg" \
           2>/dev/null || true)
  for a in "$@"; do
    grep -qx "ii |$a" <<<"$status" && return 0
  done
  return 1
}

# --bench: the benchmark's packages alone: compiler, CMake, ninja, Highway,
# Google Benchmark and Python, plus the peers oneDNN and XNNPACK and
# matplotlib (the chart) where the archive has them. No qemu, cross
# compiler, arm64 architecture, cargo or torch.
if [ "${1:-}" = "--bench" ]; then
  missing=()
  for p in cmake ninja-build g++ libhwy-dev libbenchmark-dev python3; do
    installed "$p" "$arch" all || missing+=("$p")
  done
  optional=()
  for p in libdnnl-dev libxnnpack-dev libpthreadpool-dev python3-matplotlib; do
    installed "$p" "$arch" all || optional+=("$p")
  done
  export DEBIAN_FRONTEND=noninteractive
  # The package lists are refreshed only for a missing required package;
  # an optional one is taken when the lists at hand have it.
  if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  fi
  for p in "${optional[@]}"; do
    # Read whole, then matched: grep -q closing the pipe early would fail
    # the pipeline under pipefail even when the package is there.
    policy=$(apt-cache policy "$p" 2>/dev/null || true)
    if grep -q 'Candidate: [^(]' <<<"$policy"; then
      missing+=("$p")
    else
      echo "install-deps: $p is not in the package lists: left out"
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: the benchmark's packages are present"
    exit 0
  fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q \
    --no-install-recommends "${missing[@]}"
  exit 0
fi

missing=()
for p in "${native[@]}"; do
  installed "$p" "$arch" all || missing+=("$p")
done
for p in "${arm64[@]}"; do
  installed "${p%:arm64}" arm64 || missing+=("$p")
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
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
