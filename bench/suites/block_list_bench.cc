// SPDX-License-Identifier: MIT OR Apache-2.0
// Block lists (MaskSpec::with_block_list) against the same mask given as a
// dense keep mask:
//   block_list/NSA8k/<target>        causal + the block list
//   block_list/NSA8kkeptonly/<target>  the same, zero_masked = false
//   dense_keep/NSA8k/<target>        a u8 keep mask [1, heads, 8192, 8192]
//                                    holding exactly the same kept keys
//   dense_keep/NSA8kkeptonly/<target>  the same, zero_masked = false
// Workload (f32, one thread): a causal prefill, q_len = k_len = 8192, 2
// heads, 64 x 64 blocks; each query block lists 16 key blocks (NSA-like
// selection): its diagonal block partial (causal applies there), 15 random
// blocks before it full (all of them when it has fewer). Checked once: both
// masks give the same probabilities.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "hwy/aligned_allocator.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

struct BlockListWorkload {
  Shape4 shape;
  std::size_t block = 64, selected = 16;
  std::vector<std::int32_t> num, indices, full_num, full_indices;
  std::vector<std::uint8_t> keep;  // the same mask, dense u8
  std::vector<float> scores;       // pristine, uniform in [-8, 8]
  MaskSpec listed, dense;
  double kept = 0;  // kept keys per call
};

BlockListWorkload& Workload8k() {
  static BlockListWorkload w = [] {
    BlockListWorkload w;
    const std::size_t n = SmokeMode() ? 512 : 8192, heads = 2;
    w.shape = {1, heads, n, n};
    const std::size_t blocks = n / w.block;
    BlockList l;
    l.batch = 1;
    l.heads = heads;
    l.q_blocks = blocks;
    l.max_blocks = w.selected;
    l.q_block = l.k_block = w.block;
    const std::size_t rows = heads * blocks;
    w.num.assign(rows, 1);
    w.full_num.assign(rows, 0);
    w.indices.assign(rows * w.selected, -1);
    w.full_indices.assign(rows * w.selected, -1);
    w.keep.assign(heads * n * n, 0);
    std::mt19937_64 rng(16);
    std::vector<std::int32_t> before;
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t i = 0; i < blocks; ++i) {
        const std::size_t row = h * blocks + i;
        w.indices[row * w.selected] = static_cast<std::int32_t>(i);
        before.resize(i);
        std::iota(before.begin(), before.end(), 0);
        std::shuffle(before.begin(), before.end(), rng);
        const std::size_t full = std::min(i, w.selected - 1);
        for (std::size_t e = 0; e < full; ++e) {
          w.full_indices[row * w.selected + e] = before[e];
        }
        w.full_num[row] = static_cast<std::int32_t>(full);
        // The dense mask: the full blocks whole, the diagonal causal.
        for (std::size_t q = i * w.block; q < (i + 1) * w.block; ++q) {
          std::uint8_t* keep = w.keep.data() + (h * n + q) * n;
          for (std::size_t e = 0; e < full; ++e) {
            std::memset(keep + before[e] * w.block, 1, w.block);
          }
          std::memset(keep + i * w.block, 1, q - i * w.block + 1);
          w.kept += static_cast<double>(full * w.block + q - i * w.block + 1);
        }
      }
    }
    l.num_blocks = w.num.data();
    l.indices = w.indices.data();
    l.full_num_blocks = w.full_num.data();
    l.full_indices = w.full_indices.data();
    w.listed = MaskSpec::causal().with_block_list(l);
    w.dense = MaskSpec::keep(w.keep.data(), w.shape);
    w.scores.resize(w.shape.rows() * n);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    for (float& s : w.scores) s = u(rng);
    return w;
  }();
  return w;
}

ScoreView Fresh(const BlockListWorkload& w,
                hwy::AlignedFreeUniquePtr<float[]>& buffer) {
  buffer = hwy::AllocateAligned<float>(w.scores.size());
  std::memcpy(buffer.get(), w.scores.data(), w.scores.size() * sizeof(float));
  return ScoreView::f32(buffer.get(), w.shape);
}

// Once per process: both masks give the same probabilities (within 1e-6).
bool SameResults(benchmark::State& state, const BlockListWorkload& w) {
  static const bool same = [&] {
    hwy::AlignedFreeUniquePtr<float[]> a, b;
    const ScoreView va = Fresh(w, a), vb = Fresh(w, b);
    masked_softmax(va, w.listed);
    masked_softmax(vb, w.dense);
    for (std::size_t i = 0; i < w.scores.size(); ++i) {
      if (!(std::fabs(a[i] - b[i]) <= 1e-6f)) return false;
    }
    return true;
  }();
  if (!same) FailBenchmark(state, "the block list and the dense mask differ");
  return same;
}

void BM_Mask(benchmark::State& state, bool listed, bool kept_only,
             const std::string& target) {
  TargetScope scope(target);
  const BlockListWorkload& w = Workload8k();
  if (!SameResults(state, w)) return;
  hwy::AlignedFreeUniquePtr<float[]> buffer;
  const ScoreView view = Fresh(w, buffer);
  SoftmaxOptions options;
  options.zero_masked = !kept_only;
  const MaskSpec& mask = listed ? w.listed : w.dense;
  for (auto _ : state) {
    masked_softmax(view, mask, options);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(w.scores.size()), sizeof(float),
              w.kept);
}

void RegisterBlockList() {
  for (const std::string& target : BenchTargets()) {
    for (const bool kept_only : {false, true}) {
      const std::string name = kept_only ? "NSA8kkeptonly" : "NSA8k";
      Configure(RegisterTracked(BenchName({"block_list", name, target}).c_str(),
                                BM_Mask, true, kept_only, target));
      Configure(RegisterTracked(BenchName({"dense_keep", name, target}).c_str(),
                                BM_Mask, false, kept_only, target));
    }
  }
}

const bool kAdded = AddSuite({.rank = 45, .once = &RegisterBlockList});

}  // namespace
}  // namespace rlx::bench
