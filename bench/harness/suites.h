// SPDX-License-Identifier: MIT OR Apache-2.0
// How the suites of rlx_attn_bench register: each suite file adds itself to
// a list at static initialisation; main.cc then registers every benchmark in
// one fixed order (per workload: baselines, peers, then per target kernels
// and floors), so that the report and the JSON read top to bottom.
#ifndef RLX_BENCH_HARNESS_SUITES_H_
#define RLX_BENCH_HARNESS_SUITES_H_

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/harness/workloads.h"

namespace rlx::bench {

// Called at the start of every run of a benchmark's function (each
// iteration-count probe of its first repetition, then one call per
// repetition): writes a line to the progress file when the call starts a
// repetition (bench/harness/progress.cc).
void NoteRun(std::size_t id, benchmark::IterationCount iterations);
std::size_t NewProgressId(const std::string& name);

// benchmark::RegisterBenchmark(name, fn, args...) with its runs counted for
// scripts/bench.sh's progress line (NoteRun).
template <class Fn, class... Args>
benchmark::internal::Benchmark* RegisterTracked(const char* name, Fn fn,
                                                Args... args) {
  const std::size_t id = NewProgressId(name);
  return benchmark::RegisterBenchmark(name, [=](benchmark::State& state) {
    if (state.thread_index() == 0) NoteRun(id, state.max_iterations);
    fn(state, args...);
  });
}

struct Suite {
  int rank = 0;  // suites register in increasing rank
  // Registers the suite's target-independent benchmarks of `w` (or nothing).
  void (*per_workload)(const Workload& w) = nullptr;
  // Registers the suite's benchmarks of `w` on `target` (or nothing).
  void (*per_target)(const Workload& w, const std::string& target) = nullptr;
  // Registers benchmarks of workloads of the suite's own (after every
  // standard workload's), or nothing.
  void (*once)() = nullptr;
  // Whether per_target also registers on the user's own problems
  // (bench/harness/problem.h): the kernels and the floors do.
  bool custom = false;
};

inline std::vector<Suite>& Suites() {
  static std::vector<Suite> suites;
  return suites;
}

// Use as `const bool kAdded = AddSuite({...});` at namespace scope.
inline bool AddSuite(const Suite& suite) {
  Suites().push_back(suite);
  return true;
}

// Every benchmark reports in microseconds. (Not UseRealTime(): it would
// append "/real_time" to the names. The JSON has real_time either way, and
// bench/report.py reads it; the threaded benchmarks' calling thread spins
// while its workers run, so its CPU time is its wall time.)
inline benchmark::internal::Benchmark* Configure(
    benchmark::internal::Benchmark* b) {
  return b->Unit(benchmark::kMicrosecond);
}

// Whether a benchmark's own check of its results failed (FailBenchmark):
// main() then exits non-zero, so that the smoke test fails too.
inline bool& BenchmarkFailed() {
  static bool failed = false;
  return failed;
}

// Skips the benchmark with `message` and fails the process.
inline void FailBenchmark(benchmark::State& state, const std::string& message) {
  BenchmarkFailed() = true;
  state.SkipWithError(message.c_str());
}

// Whether row r of a kernel's output sums to 1 within `tolerance`; if not
// (NaN included), the benchmark fails, naming `what`, the row and its sum.
inline bool RowSumsToOne(benchmark::State& state, const std::string& what,
                         std::size_t r, double sum, double tolerance) {
  if (std::abs(sum - 1.0) < tolerance) return true;
  FailBenchmark(state, what + ": row " + std::to_string(r) + " sums to " +
                           std::to_string(sum));
  return false;
}

// The counters of a benchmark that processes `items` elements of
// `bytes_per_item` bytes per iteration, `kept` of them kept by the mask:
// items_per_second, bytes_per_second and (if kept > 0) kept_per_second.
inline void SetCounters(benchmark::State& state, double items,
                        double bytes_per_item, double kept) {
  const double iterations = static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<std::int64_t>(items * iterations));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(items * bytes_per_item * iterations));
  if (kept > 0) {
    state.counters["kept_per_second"] =
        benchmark::Counter(kept * iterations, benchmark::Counter::kIsRate);
  }
}

// A score kernel's counters on workload `w`: items are score elements,
// bytes the score tensor's bytes, kept the elements the mask keeps. With
// `rows` (< all of w's), those of its first rows only, for a workload whose
// rows all keep the same keys (decode).
inline void SetScoreCounters(benchmark::State& state, const Workload& w,
                             std::size_t rows = 0) {
  const double share = rows == 0 ? 1.0
                                 : static_cast<double>(rows) /
                                       static_cast<double>(w.shape.rows());
  SetCounters(state, static_cast<double>(w.elements()) * share,
              static_cast<double>(w.element_bytes()),
              static_cast<double>(Data(w).kept) * share);
}

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_SUITES_H_
