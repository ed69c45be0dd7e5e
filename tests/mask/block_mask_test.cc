// SPDX-License-Identifier: MIT OR Apache-2.0
// classify_blocks against the per-element oracle (reference::is_kept) on
// every rule combination: no kept element in an empty tile, no masked one
// in a full tile, partial exactly where both occur (or, with a bias, where
// any key is kept); lists ascending and disjoint.
#include "rlx/block_mask.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/mask/rule_masks.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::testing::HasSubstr;

struct Blocks {
  std::vector<std::uint32_t> num, indices, full_num, full_indices;
  BlockMaskView view;
  Blocks(std::size_t q_blocks, std::size_t k_blocks)
      : num(q_blocks, 7),
        indices(q_blocks * k_blocks, 7),
        full_num(q_blocks, 7),
        full_indices(q_blocks * k_blocks, 7) {
    view = {q_blocks,       k_blocks,        num.data(),
            indices.data(), full_num.data(), full_indices.data()};
  }
};

std::size_t Ceil(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

bool HasBias(const MaskSpec& m) {
  return m.kind == MaskKind::kBias || m.dense == DenseKind::kBias;
}

// The expected kind of every tile of (b, h): 0 empty, 1 partial, 2 full.
std::string Mismatch(const MaskSpec& mask, const Shape4& s, std::size_t b,
                     std::size_t h, std::size_t tq, std::size_t tk,
                     const Blocks& got) {
  const std::size_t qbs = Ceil(s.q_len, tq), kbs = Ceil(s.k_len, tk);
  for (std::size_t qb = 0; qb < qbs; ++qb) {
    std::vector<int> kind(kbs, 0);
    for (std::size_t kb = 0; kb < kbs; ++kb) {
      bool any = false, all = true;
      for (std::size_t q = qb * tq; q < std::min(s.q_len, (qb + 1) * tq); ++q) {
        for (std::size_t k = kb * tk; k < std::min(s.k_len, (kb + 1) * tk);
             ++k) {
          const bool kept = reference::is_kept(mask, s, b, h, q, k);
          any = any || kept;
          all = all && kept;
        }
      }
      kind[kb] = !any ? 0 : (all && !HasBias(mask)) ? 2 : 1;
    }
    std::vector<int> listed(kbs, 0);
    const auto read = [&](const std::vector<std::uint32_t>& num,
                          const std::vector<std::uint32_t>& indices, int k,
                          const char* what) -> std::string {
      if (num[qb] > kbs) return std::string(what) + " count too large";
      for (std::uint32_t j = 0; j < num[qb]; ++j) {
        const std::uint32_t kb = indices[qb * kbs + j];
        if (kb >= kbs) return std::string(what) + " index out of range";
        if (j > 0 && indices[qb * kbs + j - 1] >= kb) {
          return std::string(what) + " not ascending";
        }
        if (listed[kb] != 0) return "key block listed twice";
        listed[kb] = k;
      }
      return "";
    };
    std::string e = read(got.num, got.indices, 1, "partial");
    if (e.empty()) e = read(got.full_num, got.full_indices, 2, "full");
    if (!e.empty()) return "query block " + std::to_string(qb) + ": " + e;
    for (std::size_t kb = 0; kb < kbs; ++kb) {
      if (listed[kb] != kind[kb]) {
        return "tile (" + std::to_string(qb) + ", " + std::to_string(kb) +
               "): got kind " + std::to_string(listed[kb]) + ", oracle " +
               std::to_string(kind[kb]) + " (0 empty, 1 partial, 2 full)";
      }
    }
  }
  return "";
}

// Plain C++ (no per-target code), so one run on the default target.
TEST(BlockMaskTest, EveryRuleCombinationIsClassifiedExactly) {
  std::mt19937_64 rng(13);
  const int iterations = testing::ScaledIterations(800);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 2, 1 + rng() % 12,
                   1 + rng() % 40};
    testing::RuleMask rm;
    testing::RandomRules(rng, s, rm);
    const std::size_t tq = 1 + rng() % 5, tk = 1 + rng() % 9;
    for (std::size_t b = 0; b < s.batch; ++b) {
      for (std::size_t h = 0; h < s.heads; ++h) {
        Blocks blocks(Ceil(s.q_len, tq), Ceil(s.k_len, tk));
        classify_blocks(rm.mask, s, b, h, tq, tk, blocks.view);
        ASSERT_EQ(Mismatch(rm.mask, s, b, h, tq, tk, blocks), "")
            << rm.name << " iteration " << it << " tiles " << tq << "x" << tk;
      }
    }
  }
}

// Causal + window on 64 x 64 tiles: the diagonal tiles are partial, the
// window's inner tiles full, the rest empty.
TEST(BlockMaskTest, CausalWindowTiles) {
  const Shape4 s{1, 1, 256, 256};
  Blocks blocks(4, 4);
  classify_blocks(MaskSpec::causal().with_window_keys(128), s, 0, 0, 64, 64,
                  blocks.view);
  // Query block 2 (rows 128..191) keeps keys (q - 128, q]: key block 0
  // partial (row 128 keeps key 1..), block 1 full, block 2 partial.
  EXPECT_EQ(blocks.full_num[2], 1u);
  EXPECT_EQ(blocks.full_indices[2 * 4], 1u);
  EXPECT_EQ(blocks.num[2], 2u);
  EXPECT_EQ(blocks.indices[2 * 4], 0u);
  EXPECT_EQ(blocks.indices[2 * 4 + 1], 2u);
  EXPECT_EQ(Mismatch(MaskSpec::causal().with_window_keys(128), s, 0, 0, 64, 64,
                     blocks),
            "");
}

TEST(BlockMaskTest, BadInputThrowsNamingTheValuesAndWritesNothing) {
  const Shape4 s{1, 2, 10, 20};
  const auto expect = [&](std::size_t b, std::size_t h, std::size_t tq,
                          std::size_t tk, std::size_t qbs, std::size_t kbs,
                          const MaskSpec& mask, const std::string& text) {
    Blocks blocks(qbs, kbs);
    const std::vector<std::uint32_t> before = blocks.indices;
    const std::string error =
        ErrorOf([&] { classify_blocks(mask, s, b, h, tq, tk, blocks.view); });
    EXPECT_THAT(error, HasSubstr("classify_blocks: "));
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(blocks.indices, before);
    EXPECT_EQ(blocks.num, std::vector<std::uint32_t>(qbs, 7));
  };
  expect(0, 0, 0, 4, 1, 5, MaskSpec::causal(), "tq 0 and tk 4");
  expect(0, 0, 4, 4, 2, 5, MaskSpec::causal(),
         "out has 2 x 5 blocks, but shape [1, 2, 10, 20] in 4 x 4 tiles has "
         "3 x 5");
  expect(1, 0, 4, 4, 3, 5, MaskSpec::causal(),
         "batch_index 1 and head 0 are not within shape [1, 2, 10, 20]");
  expect(0, 0, 4, 4, 3, 5, MaskSpec::causal().with_chunk(~std::size_t{0}),
         "chunk 18446744073709551615 exceeds");
  const std::vector<float> keep(3 * 20, 1.0f);
  expect(0, 0, 4, 4, 3, 5,
         MaskSpec::causal().with_keep(keep.data(), {1, 3, 1, 20}),
         "mask shape [1, 3, 1, 20] does not broadcast to [1, 2, 10, 20]");
}

}  // namespace
}  // namespace rlx
