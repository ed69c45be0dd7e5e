// SPDX-License-Identifier: MIT OR Apache-2.0
// Key lists (MaskSpec::with_key_indices) at the shape of top-k sparse
// attention: a decode step of 32 heads over 131,073 keys (TopK2048; smoke
// mode 1/16 of the keys), each row keeping 2,048 distinct random keys (1/16
// of them in smoke mode), f32, kept-only writes (zero_masked = false: what
// an executor that runs P x V over the listed keys wants), causal:
//   masked_softmax/TopK2048shared/<target>     one list for every head (as
//       DeepSeek-V3.2's indexer gives), sorted (as top-k indexers return)
//   masked_softmax/TopK2048sharedunsorted/...  the same keys shuffled (the
//       duplicate check fails, so duplicates are removed per row)
//   masked_softmax/TopK2048perhead/...         a sorted list per head
//   masked_softmax/TopK2048densekeep/...       the shared list's keys as a
//       dense u8 keep mask over all 131,073 keys (broadcast over heads)
//   kept_softmax_floor_contract/TopK2048contiguous/...  the contract floor
//       (bench/floors/floors.h ContractSoftmaxFloor) over 2,048 contiguous keys
//       of each row: the same softmax work with no gather
//   gather_floor/TopK2048shared/...            the gather alone: each row's
//       2,048 listed scores loaded (what the scattered lines cost);
//       gather_scatter_floor/... also stores each back (kept-only's
//       writes dirty the same lines)
// Each writes its own copy of the scores; the benchmark checks one call
// first (rows sum to 1 over the listed keys).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/floors/floors.h"
#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

constexpr std::size_t kHeads = 32;

std::size_t Keys() { return SmokeMode() ? 131072 / 16 + 1 : 131073; }
std::size_t Listed() { return SmokeMode() ? 2048 / 16 : 2048; }

// The problem: scores, and the listed keys per head (sorted unless
// shuffled), drawn once.
struct TopK {
  std::vector<float> scores;
  std::vector<std::int32_t> shared, shuffled, per_head;
  std::vector<std::uint8_t> keep;  // the shared list as a dense u8 mask
};

const TopK& Problem() {
  static const TopK p = [] {
    TopK t;
    const std::size_t n = Keys(), listed = Listed();
    std::mt19937_64 rng(2048);
    t.scores.resize(kHeads * n);
    for (auto& v : t.scores) {
      v = static_cast<float>(rng() % 2001) / 100.0f - 10.0f;
    }
    const auto draw = [&] {
      std::vector<std::int32_t> all(n);
      std::iota(all.begin(), all.end(), 0);
      for (std::size_t i = 0; i < listed; ++i) {
        std::swap(all[i], all[i + rng() % (n - i)]);
      }
      all.resize(listed);
      return all;
    };
    t.shuffled = draw();
    t.shared = t.shuffled;
    std::sort(t.shared.begin(), t.shared.end());
    for (std::size_t h = 0; h < kHeads; ++h) {
      std::vector<std::int32_t> row = draw();
      std::sort(row.begin(), row.end());
      t.per_head.insert(t.per_head.end(), row.begin(), row.end());
    }
    t.keep.assign(n, 0);
    for (const std::int32_t k : t.shared) t.keep[k] = 1;
    return t;
  }();
  return p;
}

enum class Case { kShared, kShuffled, kPerHead, kDenseKeep };

MaskSpec MaskOf(Case c) {
  const TopK& p = Problem();
  const std::size_t n = Keys(), listed = Listed();
  switch (c) {
    case Case::kShared:
      return MaskSpec::causal().with_key_indices(p.shared.data(),
                                                 {1, 1, 1, listed});
    case Case::kShuffled:
      return MaskSpec::causal().with_key_indices(p.shuffled.data(),
                                                 {1, 1, 1, listed});
    case Case::kPerHead:
      return MaskSpec::causal().with_key_indices(p.per_head.data(),
                                                 {1, kHeads, 1, listed});
    case Case::kDenseKeep:
      return MaskSpec::causal().with_keep(p.keep.data(), {1, 1, 1, n});
  }
  return {};
}

void BM_TopK(benchmark::State& state, Case c, const std::string& target) {
  TargetScope scope(target);
  const std::size_t n = Keys();
  const Shape4 shape{1, kHeads, 1, n};
  std::vector<float> scores = Problem().scores;
  const ScoreView view = ScoreView::f32(scores.data(), shape);
  const MaskSpec mask = MaskOf(c);
  SoftmaxOptions options;
  options.zero_masked = false;
  masked_softmax(view, mask, options);
  // The listed keys of each row sum to 1.
  for (std::size_t h = 0; h < kHeads; ++h) {
    const std::int32_t* list = c == Case::kPerHead
                                   ? Problem().per_head.data() + h * Listed()
                                   : Problem().shared.data();
    double sum = 0.0;
    for (std::size_t j = 0; j < Listed(); ++j) sum += scores[h * n + list[j]];
    if (!RowSumsToOne(state, "TopK2048", h, sum, 1e-5)) return;
  }
  std::copy(Problem().scores.begin(), Problem().scores.end(), scores.begin());
  for (auto _ : state) {
    masked_softmax(view, mask, options);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(kHeads * Listed()), sizeof(float),
              static_cast<double>(kHeads * Listed()));
}

// The contract floor over 2,048 contiguous keys of each row (at the middle
// of the row), in place at the problem's row stride.
void BM_ContiguousFloor(benchmark::State& state, const std::string& target) {
  TargetScope scope(target);
  const std::size_t n = Keys(), listed = Listed();
  std::vector<float> scores = Problem().scores;
  std::vector<std::size_t> begin(kHeads);
  std::vector<KeptKeys> kept(kHeads);
  for (std::size_t h = 0; h < kHeads; ++h) {
    begin[h] = h * n;
    kept[h].intervals[0] = {n / 2, n / 2 + listed};
    kept[h].count = 1;
  }
  for (auto _ : state) {
    ContractSoftmaxFloor(scores.data(), ScoreType::kF32, begin.data(),
                         kept.data(), kHeads, nullptr);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(kHeads * listed), sizeof(float),
              static_cast<double>(kHeads * listed));
}

// Each row's listed scores loaded (8 independent chains, so that the loads
// and not an add's latency bound it): the scattered lines alone, what any
// kernel that reads the listed keys pays. With `write`, each is also stored
// back negated (kept-only writes dirty the same lines).
void BM_GatherFloor(benchmark::State& state, const std::string& target,
                    bool write) {
  TargetScope scope(target);
  const std::size_t n = Keys(), listed = Listed();
  std::vector<float> scores = Problem().scores;
  const std::vector<std::int32_t>& list = Problem().shared;
  for (auto _ : state) {
    std::uint32_t acc[8] = {};
    for (std::size_t h = 0; h < kHeads; ++h) {
      float* row = scores.data() + h * n;
      for (std::size_t j = 0; j + 8 <= listed; j += 8) {
        for (std::size_t u = 0; u < 8; ++u) {
          float& x = row[list[j + u]];
          std::uint32_t bits;
          std::memcpy(&bits, &x, sizeof(bits));
          acc[u] ^= bits;
          if (write) x = -x;
        }
      }
    }
    benchmark::DoNotOptimize(acc);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(kHeads * listed), sizeof(float),
              static_cast<double>(kHeads * listed));
}

void RegisterTopK() {
  for (const std::string& target : BenchTargets()) {
    for (const auto& [name, c] :
         {std::pair{"TopK2048shared", Case::kShared},
          std::pair{"TopK2048sharedunsorted", Case::kShuffled},
          std::pair{"TopK2048perhead", Case::kPerHead},
          std::pair{"TopK2048densekeep", Case::kDenseKeep}}) {
      Configure(
          RegisterTracked(BenchName({"masked_softmax", name, target}).c_str(),
                          BM_TopK, c, target));
    }
    Configure(RegisterTracked(
        BenchName({"kept_softmax_floor_contract", "TopK2048contiguous", target})
            .c_str(),
        BM_ContiguousFloor, target));
    Configure(RegisterTracked(
        BenchName({"gather_floor", "TopK2048shared", target}).c_str(),
        BM_GatherFloor, target, false));
    Configure(RegisterTracked(
        BenchName({"gather_scatter_floor", "TopK2048shared", target}).c_str(),
        BM_GatherFloor, target, true));
  }
}

const bool kAdded = AddSuite({.rank = 36, .once = &RegisterTopK});

}  // namespace
}  // namespace rlx::bench
