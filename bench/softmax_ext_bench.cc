// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax extensions (DESIGN.md, "Softmax extensions (v2)") on the
// standard workloads they are measured against, per target:
//   masked_softmax/D2sink/<target>       D2 with a sink logit per head
//   masked_softmax/D2keptonly/<target>   D2 with zero_masked = false
//   masked_softmax/D2fullkeptonly/<target>  D2full likewise
//   masked_softmax/P4alibi/<target>      P4's scores under causal + ALiBi
//       from slopes (P4 itself adds the same terms as a materialised bias)
// Each compares with masked_softmax/<workload>/<target> in the same run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/suites.h"
#include "bench/workloads.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

void BM_WithOptions(benchmark::State& state, const Workload* w,
                    const std::string& target, MaskSpec mask,
                    SoftmaxOptions options) {
  TargetScope scope(target);
  const ScoreView view = FreshScores(*w);
  for (auto _ : state) {
    masked_softmax(view, mask, options);
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

// Per head, for the whole process (the options point into them).
const std::vector<float>& Sinks() {
  static const std::vector<float> sinks(64, 0.5f);
  return sinks;
}

// P4's slopes: head h adds -2^-(h+1) * distance (bench/workloads.cc).
const std::vector<float>& P4Slopes() {
  static const std::vector<float> slopes = [] {
    std::vector<float> s(64);
    for (std::size_t h = 0; h < s.size(); ++h) {
      s[h] = std::ldexp(1.0f, -static_cast<int>(h + 1));
    }
    return s;
  }();
  return slopes;
}

void Add(const Workload& w, const std::string& target, const char* name,
         const MaskSpec& mask, const SoftmaxOptions& options) {
  Configure(benchmark::RegisterBenchmark(
      BenchName({"masked_softmax", name, target}).c_str(), BM_WithOptions, &w,
      target, mask, options));
}

void Register(const Workload& w, const std::string& target) {
  SoftmaxOptions kept_only;
  kept_only.zero_masked = false;
  if (w.name == "D2") {
    SoftmaxOptions sinks;
    sinks.sink_logits = Sinks().data();
    Add(w, target, "D2sink", Data(w).mask, sinks);
    Add(w, target, "D2keptonly", Data(w).mask, kept_only);
  } else if (w.name == "D2full") {
    Add(w, target, "D2fullkeptonly", Data(w).mask, kept_only);
  } else if (w.name == "P4") {
    SoftmaxOptions alibi;
    alibi.alibi_slopes = P4Slopes().data();
    Add(w, target, "P4alibi", MaskSpec::causal(), alibi);
  }
}

const bool kAdded = AddSuite({.rank = 35, .per_target = &Register});

}  // namespace
}  // namespace rlx::bench
