// SPDX-License-Identifier: MIT OR Apache-2.0
// classify_blocks on a 32k x 32k causal + window 4096 + chunk 8192 mask in
// 64 x 64 tiles, beside masked_softmax of 256 of the same rows
// (a [1, 1, 256, 32768] view whose query offset places it at rows
// 16384..16639 of the square tensor): the classification's cost per row
// against the softmax's per row. Names:
//   classify_blocks/C32k/<target>             all 32768 rows
//   masked_softmax/C32k/<target>/rows:256     256 rows of the same mask
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "hwy/aligned_allocator.h"
#include "rlx/block_mask.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

std::size_t Extent() { return SmokeMode() ? 2048 : 32768; }

MaskSpec Mask() {
  const std::size_t s = SmokeMode() ? 16 : 1;
  return MaskSpec::causal().with_window_keys(4096 / s).with_chunk(8192 / s);
}

void BM_Classify(benchmark::State& state, const std::string& target) {
  TargetScope scope(target);  // plain C++: the same code on every target
  const std::size_t n = Extent(), t = 64, blocks = n / t;
  std::vector<std::uint32_t> num(blocks), full_num(blocks),
      indices(blocks * blocks), full_indices(blocks * blocks);
  const BlockMaskView view{blocks,          blocks,
                           num.data(),      indices.data(),
                           full_num.data(), full_indices.data()};
  const MaskSpec mask = Mask();
  for (auto _ : state) {
    classify_blocks(mask, {1, 1, n, n}, 0, 0, t, t, view);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(n), 0.0, 0.0);  // items: rows
}

void BM_SoftmaxRows(benchmark::State& state, const std::string& target) {
  TargetScope scope(target);
  const std::size_t n = Extent(), rows = 256;
  static hwy::AlignedFreeUniquePtr<float[]> scores;
  static std::vector<float> pristine;
  if (pristine.size() != rows * n) {
    pristine.resize(rows * n);
    std::mt19937 random(1);
    std::uniform_real_distribution<float> uniform(-8.0f, 8.0f);
    for (float& x : pristine) x = uniform(random);
    scores = hwy::AllocateAligned<float>(rows * n);
  }
  std::copy(pristine.begin(), pristine.end(), scores.get());
  const std::int64_t offset = static_cast<std::int64_t>(n / 2);
  const MaskSpec mask = Mask().with_query_offsets(&offset);
  const ScoreView view = ScoreView::f32(scores.get(), {1, 1, rows, n});
  for (auto _ : state) {
    masked_softmax(view, mask);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(rows), 0.0, 0.0);  // items: rows
}

void Register() {
  for (const std::string& target : BenchTargets()) {
    Configure(
        RegisterTracked(BenchName({"classify_blocks", "C32k", target}).c_str(),
                        BM_Classify, target));
    Configure(RegisterTracked(
        BenchName({"masked_softmax", "C32k", target, "rows:256"}).c_str(),
        BM_SoftmaxRows, target));
  }
}

const bool kAdded = AddSuite({.rank = 50, .once = &Register});

}  // namespace
}  // namespace rlx::bench
