# SPDX-License-Identifier: MIT OR Apache-2.0
# Finds each dependency installed on the system first (Debian 12: libhwy-dev,
# libgtest-dev, libbenchmark-dev) and only where none is found falls back to a
# pinned FetchContent, for machines that have the internet. The pins are the
# Debian 12 versions, so both paths build the same code.
include(FetchContent)

find_package(hwy 1.0.3 CONFIG QUIET)
if(NOT hwy_FOUND)
  message(STATUS "rlx-attn-mask: Highway not installed, fetching 1.0.3")
  set(HWY_ENABLE_TESTS OFF CACHE BOOL "" FORCE)
  set(HWY_ENABLE_EXAMPLES OFF CACHE BOOL "" FORCE)
  set(HWY_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
  FetchContent_Declare(highway
    GIT_REPOSITORY https://github.com/google/highway.git
    GIT_TAG 1.0.3 GIT_SHALLOW TRUE)
  FetchContent_MakeAvailable(highway)
  if(NOT TARGET hwy::hwy)
    add_library(hwy::hwy ALIAS hwy)
    add_library(hwy::hwy_contrib ALIAS hwy_contrib)
  endif()
else()
  message(STATUS "rlx-attn-mask: Highway ${hwy_VERSION} from the system")
endif()

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
