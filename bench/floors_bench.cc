// SPDX-License-Identifier: MIT OR Apache-2.0
// The floors, per workload and target: copy_floor/<workload>/<target> copies
// the workload's score bytes into a second buffer (load + store, what "a
// plain copy of the rows" costs); exp_floor/<workload>/<target> runs
// Highway's Exp over as many f32 elements as the workload's mask keeps.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/bench_util.h"
#include "bench/floors.h"
#include "bench/suites.h"
#include "bench/workloads.h"

namespace rlx::bench {
namespace {

void BM_CopyFloor(benchmark::State& state, const Workload* w,
                  const std::string& target) {
  TargetScope scope(target);
  const void* from = FreshScores(*w).data;
  void* to = Scratch(1, w->bytes());
  for (auto _ : state) {
    CopyFloor(from, to, w->bytes());
    benchmark::DoNotOptimize(to);
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

// Items and kept are both the kept elements here: the exp floor's
// kept_per_second is directly comparable to a softmax's.
void BM_ExpFloor(benchmark::State& state, const Workload* w,
                 const std::string& target) {
  TargetScope scope(target);
  const std::size_t n = Data(*w).kept;
  const float* in = ExpInputs(n);
  float* out = static_cast<float*>(Scratch(1, n * sizeof(float)));
  for (auto _ : state) {
    ExpFloor(in, out, n);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(n), sizeof(float),
              static_cast<double>(n));
}

void Register(const Workload& w, const std::string& target) {
  Configure(benchmark::RegisterBenchmark(
      BenchName({"copy_floor", w.name, target}).c_str(), BM_CopyFloor, &w,
      target));
  Configure(benchmark::RegisterBenchmark(
      BenchName({"exp_floor", w.name, target}).c_str(), BM_ExpFloor, &w,
      target));
}

const bool kAdded = AddSuite({.rank = 40, .per_target = &Register});

}  // namespace
}  // namespace rlx::bench
