// SPDX-License-Identifier: MIT OR Apache-2.0
// The floors, per workload and target: copy_floor/<workload>/<target> copies
// the workload's score bytes into a second buffer (load + store, what "a
// plain copy of the rows" costs); exp_floor/<workload>/<target> runs
// Highway's Exp over as many f32 elements as the workload's mask keeps;
// touch_floor/<workload>/<target> makes, in place, the memory accesses that
// a fused in-place softmax cannot avoid: each row's kept keys (rlx::kept_keys:
// the whole row for None and dense masks) loaded and stored back, its other
// keys stored zero, with no arithmetic. masked_softmax runs in place on the
// same rows, so its time over touch_floor's is what its passes and arithmetic
// add to that traffic. zero_fill_floor/<workload>/<target> stores the same
// zeros and leaves the kept keys alone: what the default mode's fill adds
// to the kept-only rows' accesses. kept_softmax_floor/<workload>/<target>
// is the plain softmax (the fastest public recipe) of exactly the kept keys
// of each row, sliced out beforehand: what masking costs is masked_softmax's
// time over it. kept_softmax_floor_unaligned/<workload>/<target> is the same
// with each row's kept keys at the workload's offset modulo 64 bytes instead of
// on a 64-byte boundary (KeptSoftmaxFloorUnaligned: long rows align their loops
// as the kernels' do): what the floor pays for the rows' alignment.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "bench/floors/floors.h"
#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "bench/peers/rlx_loop.h"
#include "rlx/score_kernels.h"

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

// touch_floor (TouchRowFloor) or zero_fill_floor (ZeroFillRowFloor): the
// same rows and spans.
using RowFloor = void (*)(void*, std::size_t, const std::size_t*,
                          const std::size_t*, std::size_t, std::uint8_t);

void BM_RowFloor(benchmark::State& state, const Workload* w,
                 const std::string& target, RowFloor floor) {
  TargetScope scope(target);
  const ScoreView view = FreshScores(*w);
  const Shape4& shape = w->shape;
  const std::size_t es = w->element_bytes();
  // Each row's kept spans in bytes, computed once: the floor times accesses.
  struct Spans {
    std::size_t begin[2], end[2], count;
  };
  std::vector<Spans> rows(shape.rows());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::size_t q = r % shape.q_len;
    const std::size_t b = r / shape.q_len / shape.heads;
    const KeptKeys kept =
        kept_keys(Data(*w).mask, b, q, shape.q_len, shape.k_len);
    rows[r].count = kept.count;
    for (std::size_t i = 0; i < kept.count; ++i) {
      rows[r].begin[i] = kept.intervals[i].begin * es;
      rows[r].end[i] = kept.intervals[i].end * es;
    }
  }
  auto* data = static_cast<std::uint8_t*>(view.data);
  std::uint8_t zero = 0;
  benchmark::DoNotOptimize(zero);
  const std::size_t row_bytes = shape.k_len * es;
  const auto run = [&] {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      floor(data + r * row_bytes, row_bytes, rows[r].begin, rows[r].end,
            rows[r].count, zero);
    }
  };
  // One call checked first, so that the floor times the stores it stands
  // for: each row's kept bytes are the input's, every other byte is 0.
  const auto* scores = static_cast<const std::uint8_t*>(Data(*w).scores);
  run();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::size_t span = 0;
    for (std::size_t k = 0; k < row_bytes; ++k) {
      while (span < rows[r].count && rows[r].end[span] <= k) ++span;
      const bool kept = span < rows[r].count && rows[r].begin[span] <= k;
      const std::size_t at = r * row_bytes + k;
      if (data[at] != (kept ? scores[at] : 0)) {
        FailBenchmark(state, "row floor/" + w->name + ": row " +
                                 std::to_string(r) + " byte " +
                                 std::to_string(k) + " is wrong");
        return;
      }
    }
  }
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

// The plain softmax of exactly the kept keys of each row, sliced out (no
// mask logic at all): what an executor that gathered them would run, and
// the bar for masked_softmax on the same workload ("masking for free"). f32
// for every row type: the rows are converted when sliced, outside the
// timing.
void BM_KeptSoftmaxFloor(benchmark::State& state, const Workload* w,
                         const std::string& target, bool unaligned) {
  TargetScope scope(target);
  const KeptRows& kept = KeptRowsOf(*w, unaligned);
  auto* rows =
      static_cast<float*>(Scratch(1, kept.pristine.size() * sizeof(float)));
  std::copy(kept.pristine.begin(), kept.pristine.end(), rows);
  const auto floor = unaligned ? &KeptSoftmaxFloorUnaligned : &KeptSoftmaxFloor;
  for (auto _ : state) {
    floor(rows, kept.begin.data(), kept.len.data(), kept.begin.size());
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(Data(*w).kept), sizeof(float),
              static_cast<double>(Data(*w).kept));
}

void Register(const Workload& w, const std::string& target) {
  Configure(RegisterTracked(BenchName({"copy_floor", w.name, target}).c_str(),
                            BM_CopyFloor, &w, target));
  Configure(RegisterTracked(BenchName({"exp_floor", w.name, target}).c_str(),
                            BM_ExpFloor, &w, target));
  Configure(RegisterTracked(BenchName({"touch_floor", w.name, target}).c_str(),
                            BM_RowFloor, &w, target, &TouchRowFloor));
  Configure(
      RegisterTracked(BenchName({"zero_fill_floor", w.name, target}).c_str(),
                      BM_RowFloor, &w, target, &ZeroFillRowFloor));
  Configure(
      RegisterTracked(BenchName({"kept_softmax_floor", w.name, target}).c_str(),
                      BM_KeptSoftmaxFloor, &w, target, false));
  Configure(RegisterTracked(
      BenchName({"kept_softmax_floor_unaligned", w.name, target}).c_str(),
      BM_KeptSoftmaxFloor, &w, target, true));
}

const bool kAdded =
    AddSuite({.rank = 40, .per_target = &Register, .custom = true});

}  // namespace
}  // namespace rlx::bench
