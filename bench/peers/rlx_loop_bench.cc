// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_loop/<workload>: the RLX executor's scalar loop (bench/peers/rlx_loop.h)
// on the workload's scores and its materialised mask, the baseline every
// speedup in the report is relative to.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "bench/peers/rlx_loop.h"

namespace rlx::bench {
namespace {

void BM_RlxLoop(benchmark::State& state, const Workload* w) {
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  const std::size_t rows = w->shape.rows(), k_len = w->shape.k_len;
  for (auto _ : state) {
    switch (w->type) {
      case ScoreType::kF32:
        RlxLoop(static_cast<float*>(view.data), rows, k_len, data.rlx);
        break;
      case ScoreType::kBF16:
        RlxLoop(static_cast<bf16*>(view.data), rows, k_len, data.rlx);
        break;
      case ScoreType::kF16:
        RlxLoop(static_cast<f16*>(view.data), rows, k_len, data.rlx);
        break;
    }
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void Register(const Workload& w) {
  Configure(
      RegisterTracked(BenchName({"rlx_loop", w.name}).c_str(), BM_RlxLoop, &w));
}

const bool kAdded = AddSuite({.rank = 10, .per_workload = &Register});

}  // namespace
}  // namespace rlx::bench
