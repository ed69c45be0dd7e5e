// SPDX-License-Identifier: MIT OR Apache-2.0
// fill_bucket_decode_mask against the scalar reference, per target. Names:
// fill_decode_mask/U<upper>/<target> and fill_decode_mask_reference/U<upper>.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "rlx/attn_mask.h"
#include "tests/reference/reference.h"

namespace rlx::bench {
namespace {

constexpr std::size_t kUppers[] = {64, 512, 4096, 32768};

// Past at ~half the bucket, window 0: the decode shape of a bucket in use.
void SetCounters(benchmark::State& state, std::size_t width) {
  const double items = static_cast<double>(width) * state.iterations();
  state.SetItemsProcessed(static_cast<std::int64_t>(items));
  state.SetBytesProcessed(static_cast<std::int64_t>(items * sizeof(float)));
}

void BM_FillDecodeMask(benchmark::State& state, std::string target,
                       std::size_t upper) {
  TargetScope scope(target);
  std::vector<float> out(upper + 1);
  for (auto _ : state) {
    fill_bucket_decode_mask(out, upper / 2 + 1, upper, 0);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, out.size());
}

void BM_FillDecodeMaskReference(benchmark::State& state, std::size_t upper) {
  std::vector<float> out(upper + 1);
  for (auto _ : state) {
    reference::decode_mask(out.data(), upper / 2 + 1, upper, 0);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, out.size());
}

void Register() {
  for (std::size_t upper : kUppers) {
    const std::string workload = "U" + std::to_string(upper);
    for (const std::string& target : BenchTargets()) {
      RegisterTracked(BenchName({"fill_decode_mask", workload, target}).c_str(),
                      BM_FillDecodeMask, target, upper);
    }
    RegisterTracked(BenchName({"fill_decode_mask_reference", workload}).c_str(),
                    BM_FillDecodeMaskReference, upper);
  }
}

// With the suites' own workloads, after the standard ones (not on the
// user's problems).
const bool kAdded = AddSuite({.rank = -1, .once = &Register});

}  // namespace
}  // namespace rlx::bench
