// SPDX-License-Identifier: MIT OR Apache-2.0
// The score kernels (rlx/score_kernels.h) on every standard workload, per
// target, and the scalar oracle they are tested against:
//   apply_mask/<workload>/<target>      fill -inf (Bias: add the bias)
//   masked_softmax/<workload>/<target>  the fused kernel, in place
//   masked_softmax/<workload>/<target>/threads:<n>
//       the row-range entry point split over n std::threads (the calling
//       thread and n - 1 workers), for the threaded workloads (D2, P2)
//   masked_softmax/<workload>/<target>/rows:<n>
//       the first n rows only (a row range), for the workloads with
//       resident_rows (D2, D2full): rows that stay in L1 between
//       iterations, so the time is the kernel's compute (and one call's
//       overhead) without the memory traffic of the whole workload
//   masked_softmax/<workload>/<target>/rows:<first>-<end>
//       the same for rows [first, end) (P4: rows in L2 whose kept count
//       averages the workload's)
//   reference/<workload>                rlx::reference::masked_softmax: the
//       double-precision oracle, written for clarity, not speed
// On a problem of the user's own (bench/harness/problem.h) apply_mask and
// masked_softmax run, the latter with the problem's softmax options.
// Every run starts from the workload's pristine scores; iterations then run
// in place on the previous iteration's output (softmax of a softmax and a
// repeated fill do the same work as the first).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/splitter.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "rlx/score_kernels.h"
#include "tests/reference/reference.h"

namespace rlx::bench {
namespace {

// One kernel call per iteration, in place on the workload's scores.
using InPlaceKernel = void (*)(const ScoreView&, const WorkloadData&);

void BM_InPlace(benchmark::State& state, const Workload* w,
                const std::string& target, InPlaceKernel kernel) {
  TargetScope scope(target);
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  for (auto _ : state) {
    kernel(view, data);
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void ApplyMaskKernel(const ScoreView& view, const WorkloadData& data) {
  apply_mask(view, data.mask);
}

// The workload's options: the defaults, or those of a problem of the
// user's own (bench/harness/problem.h).
void MaskedSoftmaxKernel(const ScoreView& view, const WorkloadData& data) {
  masked_softmax(view, data.mask, data.options);
}

void BM_MaskedSoftmaxThreads(benchmark::State& state, const Workload* w,
                             const std::string& target, std::size_t threads) {
  TargetScope scope(target);
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  const std::size_t rows = w->shape.rows();
  Splitter splitter(threads, [&](std::size_t part) {
    const RowRange range{rows * part / threads, rows * (part + 1) / threads};
    masked_softmax(view, data.mask, SoftmaxOptions{}, range);
  });
  for (auto _ : state) {
    splitter.Run();
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void BM_ResidentRows(benchmark::State& state, const Workload* w,
                     const std::string& target, std::size_t rows) {
  TargetScope scope(target);
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  const RowRange range{w->resident_first, w->resident_first + rows};
  for (auto _ : state) {
    masked_softmax(view, data.mask, SoftmaxOptions{}, range);
    benchmark::ClobberMemory();
  }
  // Decode: every row keeps the same keys; P4's rows keep the workload's
  // average.
  SetScoreCounters(state, *w, rows);
}

void BM_Reference(benchmark::State& state, const Workload* w) {
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  for (auto _ : state) {
    reference::masked_softmax(view, view, data.mask, SoftmaxOptions{},
                              RowRange::all(w->shape));
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void RegisterReference(const Workload& w) {
  Configure(RegisterTracked(BenchName({"reference", w.name}).c_str(),
                            BM_Reference, &w));
}

void RegisterKernels(const Workload& w, const std::string& target) {
  Configure(RegisterTracked(BenchName({"apply_mask", w.name, target}).c_str(),
                            BM_InPlace, &w, target, &ApplyMaskKernel));
  Configure(
      RegisterTracked(BenchName({"masked_softmax", w.name, target}).c_str(),
                      BM_InPlace, &w, target, &MaskedSoftmaxKernel));
  if (w.resident_rows > 0) {
    const std::size_t first = w.resident_first;
    const std::string suffix =
        "rows:" + (first == 0 ? std::to_string(w.resident_rows)
                              : std::to_string(first) + "-" +
                                    std::to_string(first + w.resident_rows));
    Configure(RegisterTracked(
        BenchName({"masked_softmax", w.name, target, suffix}).c_str(),
        BM_ResidentRows, &w, target, w.resident_rows));
  }
  if (!w.threaded) return;
  for (std::size_t threads : {1, 2}) {
    const std::string suffix = "threads:" + std::to_string(threads);
    Configure(RegisterTracked(
        BenchName({"masked_softmax", w.name, target, suffix}).c_str(),
        BM_MaskedSoftmaxThreads, &w, target, threads));
  }
}

const bool kAdded =
    AddSuite({.rank = 0, .per_workload = &RegisterReference}) &&
    AddSuite({.rank = 30, .per_target = &RegisterKernels, .custom = true});

}  // namespace
}  // namespace rlx::bench
