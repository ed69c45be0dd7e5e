// SPDX-License-Identifier: MIT OR Apache-2.0
// The plain softmax peer the library is measured against ("masking for
// free"):
// XNNPACK's f32 softmax operator (its own microkernels for this CPU, chosen
// by XNNPACK at initialisation), one thread (no thread pool).
//   xnnpack_kept_softmax/<workload>  over only the kept keys of each row,
//                                    sliced out beforehand (what an executor
//                                    that gathered them would run: no
//                                    masking at all); workloads whose rows
//                                    all keep as many keys (decode, f32)
//   xnnpack_softmax/<workload>       over every key of every row, in place:
//                                    the unmasked softmax of the whole
//                                    bucket (f32 workloads)
// Which microkernels run is XNNPACK's choice and depends on its version:
// Debian 12's snapshot (2022-02) wires SSE2 ones for the f32 softmax on
// every x86 CPU (docs/PERFORMANCE.md). Compiled only when XNNPACK was found
// at configure time.
#include <benchmark/benchmark.h>
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"

namespace rlx::bench {
namespace {

// An f32 softmax operator over rows of `channels` values `stride` apart.
class XnnSoftmax {
 public:
  XnnSoftmax(std::size_t channels, std::size_t stride) {
    ok_ = xnn_create_softmax_nc_f32(channels, stride, stride, 0, &op_) ==
          xnn_status_success;
  }
  ~XnnSoftmax() {
    if (op_ != nullptr) xnn_delete_operator(op_);
  }
  XnnSoftmax(const XnnSoftmax&) = delete;
  XnnSoftmax& operator=(const XnnSoftmax&) = delete;

  // Sets up `rows` rows from `in` into `out` (may be `in`); false on error.
  bool Setup(std::size_t rows, const float* in, float* out) {
    return ok_ && xnn_setup_softmax_nc_f32(op_, rows, in, out, nullptr) ==
                      xnn_status_success;
  }
  bool Run() { return xnn_run_operator(op_, nullptr) == xnn_status_success; }

 private:
  xnn_operator_t op_ = nullptr;
  bool ok_ = false;
};

// Checks one softmax of the workload's rows (before the timing: the timed
// calls then run on their own results): fails the benchmark when a row is
// not a distribution (a broken setup), and reports how far XNNPACK's rows
// miss 1. It sums in f32: one pass over D3's kept keys misses by 4e-6, where
// masked_softmax's contract is 1e-6 (not failed here: 1e-3 is the check).
bool CheckOnePass(benchmark::State& state, const char* what,
                  XnnSoftmax& softmax, const float* p, std::size_t rows,
                  std::size_t len, std::size_t stride) {
  if (!softmax.Run()) {
    FailBenchmark(state, std::string(what) + ": xnn_run_operator failed");
    return false;
  }
  double worst = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (std::size_t k = 0; k < len; ++k) sum += p[r * stride + k];
    if (!RowSumsToOne(state, what, r, sum, 1e-3)) return false;
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  state.counters["row_sum_error"] = worst;
  return true;
}

void BM_XnnKept(benchmark::State& state, const Workload* w) {
  const KeptRows& kept = KeptRowsOf(*w, /*unaligned=*/false);
  const std::size_t rows = kept.begin.size();
  const std::size_t len = kept.len[0];
  const std::size_t stride = rows > 1 ? kept.begin[1] - kept.begin[0] : len;
  for (std::size_t r = 1; r < rows; ++r) {
    if (kept.len[r] != len || kept.begin[r] - kept.begin[r - 1] != stride) {
      return FailBenchmark(state, "rows keep different numbers of keys");
    }
  }
  auto* data =
      static_cast<float*>(Scratch(1, kept.pristine.size() * sizeof(float)));
  std::copy(kept.pristine.begin(), kept.pristine.end(), data);
  XnnSoftmax softmax(len, stride);
  float* first = data + kept.begin[0];
  if (!softmax.Setup(rows, first, first)) {
    return FailBenchmark(state, "xnn_setup_softmax_nc_f32 failed");
  }
  if (!CheckOnePass(state, "xnnpack_kept_softmax", softmax, first, rows, len,
                    stride)) {
    return;
  }
  std::copy(kept.pristine.begin(), kept.pristine.end(), data);
  for (auto _ : state) {
    softmax.Run();
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(Data(*w).kept), sizeof(float),
              static_cast<double>(Data(*w).kept));
}

void BM_XnnFull(benchmark::State& state, const Workload* w) {
  auto* data = static_cast<float*>(FreshScores(*w).data);
  const std::size_t rows = w->shape.rows(), n = w->shape.k_len;
  XnnSoftmax softmax(n, n);
  if (!softmax.Setup(rows, data, data)) {
    return FailBenchmark(state, "xnn_setup_softmax_nc_f32 failed");
  }
  if (!CheckOnePass(state, "xnnpack_softmax", softmax, data, rows, n, n)) {
    return;
  }
  FreshScores(*w);  // the same buffer, the pristine scores again
  for (auto _ : state) {
    softmax.Run();
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void Register(const Workload& w) {
  if (w.type != ScoreType::kF32) return;
  // Every row of a decode workload keeps the same keys (its heads share
  // the mask), so one operator runs them all.
  if (w.kind == MaskKind::kDecode) {
    Configure(RegisterTracked(
        BenchName({"xnnpack_kept_softmax", w.name}).c_str(), BM_XnnKept, &w));
  }
  Configure(RegisterTracked(BenchName({"xnnpack_softmax", w.name}).c_str(),
                            BM_XnnFull, &w));
}

bool AddXnnpack() {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr,
                 "rlx_attn_bench: xnn_initialize failed (CPU unsupported by "
                 "XNNPACK?): no xnnpack_* benchmarks\n");
    return false;
  }
  benchmark::AddCustomContext("xnnpack", "f32 softmax operator, one thread");
  return AddSuite({.rank = 21, .per_workload = &Register});
}

const bool kAdded = AddXnnpack();

}  // namespace
}  // namespace rlx::bench
