# SPDX-License-Identifier: MIT OR Apache-2.0
# Finds each dependency installed on the system (Debian 12: libhwy-dev,
# libgtest-dev, libbenchmark-dev). Highway must be installed (it is linked
# into the library and named by its installed package); GoogleTest and
# Google Benchmark, used only by this tree's tests and benchmarks, fall back
# to a pinned FetchContent where none is installed, for machines that have
# the internet. The pins are the Debian 12 versions.
include(FetchContent)

# Highway is the library's one link dependency, so it must be installed:
# a Highway fetched into the build would leave the installed package (and
# any static consumer) pointing at a library that is not installed.
find_package(hwy 1.0.3 CONFIG QUIET)
if(NOT hwy_FOUND)
  message(FATAL_ERROR
    "rlx-attn-mask needs Google Highway 1.0.3 or newer, installed with its "
    "CMake package (hwy-config.cmake), and found none. Install it: Debian "
    "and Ubuntu `apt install libhwy-dev`, Fedora `dnf install highway-devel`, "
    "Homebrew `brew install highway`; or build Highway and install it "
    "(cmake --install), then pass -DCMAKE_PREFIX_PATH=<its prefix>.")
endif()
message(STATUS "rlx-attn-mask: Highway ${hwy_VERSION} from the system")

if(RLX_ATTN_MASK_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND)
    find_package(GTest QUIET)
  endif()
  if(NOT GTest_FOUND)
    message(STATUS "rlx-attn-mask: GoogleTest not installed, fetching 1.12.1")
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(googletest
      GIT_REPOSITORY https://github.com/google/googletest.git
      GIT_TAG release-1.12.1 GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(googletest)
  endif()
endif()

if(RLX_ATTN_MASK_BUILD_BENCH)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    message(STATUS "rlx-attn-mask: Google Benchmark not installed, fetching 1.7.1")
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(benchmark
      GIT_REPOSITORY https://github.com/google/benchmark.git
      GIT_TAG v1.7.1 GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(benchmark)
  endif()
endif()
