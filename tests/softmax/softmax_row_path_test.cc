// SPDX-License-Identifier: MIT OR Apache-2.0
// Which code runs a softmax row (src/softmax/row_path.h): ChooseRowPath's
// decisions reach every RowPath, and on every compiled target each path
// runs for the calls it is named for (the per-path row counters, a test
// hook of the library's internal twin) and matches the double-precision
// oracle there.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/softmax/row_path.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/softmax/softmax_ext_cases.h"

namespace rlx {
namespace {

using detail::RowPath;
using ::rlx::testing::OracleMismatch;
using ::rlx::testing::RandomScores;

// Every combination of the facts ChooseRowPath reads gives some path, and
// together they give every enumerator: no path is named that no call takes.
TEST(RowPathTest, ChooseRowPathCoversEveryPath) {
  std::set<RowPath> seen;
  const DenseKind denses[] = {DenseKind::kNone, DenseKind::kKeepF32,
                              DenseKind::kKeepU8, DenseKind::kKeepBits,
                              DenseKind::kBias};
  for (unsigned bits = 0; bits < (1u << 16); ++bits) {
    for (const DenseKind dense : denses) {
      detail::CallFacts c;
      c.f32 = bits & 1;
      c.split_part = bits & 2;
      c.alibi = bits & 4;
      c.plain_options = bits & 8;
      c.decode_step = bits & 16;
      c.per_element = bits & 32;
      c.explicit_keys = bits & 64;
      c.dense_only = bits & 128;
      c.dense = dense;
      c.key_list = bits & 16384;
      c.block_list = (bits & 32768) && !c.key_list;  // never both
      detail::RowFacts r;
      r.fits_plain_batch = bits & 256;
      r.plain_max_fits = bits & 512;
      r.kept_any = bits & 1024;
      r.bytes_tiled = bits & 2048;
      r.bytes_all_kept = bits & 4096;
      r.map_pays = bits & 8192;
      seen.insert(detail::ChooseRowPath(c, r));
    }
  }
  EXPECT_EQ(seen.size(), detail::kRowPathCount);
  for (std::size_t p = 0; p < detail::kRowPathCount; ++p) {
    EXPECT_TRUE(seen.count(static_cast<RowPath>(p)))
        << detail::NameOf(static_cast<RowPath>(p));
  }
}

// The facts of the calls below, as the loops compute them.
TEST(RowPathTest, CallsOfEachKindChooseTheirPath) {
  const SoftmaxOptions plain;
  SoftmaxOptions capped;
  capped.softcap = 30.0f;
  const detail::Rules causal = detail::RulesOf(MaskSpec::causal());
  const detail::CallFacts f32 =
      detail::CallFactsOf(causal, plain, ScoreType::kF32, 8, false);
  EXPECT_EQ(detail::ChooseRowPath(f32, {}), RowPath::kPlainBatch);
  const detail::CallFacts step =
      detail::CallFactsOf(causal, plain, ScoreType::kBF16, 1, false);
  EXPECT_EQ(detail::ChooseRowPath(step, {}), RowPath::kDecodeRun);
  const detail::CallFacts part =
      detail::CallFactsOf(causal, plain, ScoreType::kF32, 8, true);
  EXPECT_EQ(detail::ChooseRowPath(part, {}), RowPath::kIntervals);
  const detail::CallFacts softcap =
      detail::CallFactsOf(causal, capped, ScoreType::kF32, 8, false);
  EXPECT_EQ(detail::ChooseRowPath(softcap, {}), RowPath::kIntervals);
  detail::RowFacts long_row;
  long_row.fits_plain_batch = false;
  EXPECT_EQ(detail::ChooseRowPath(f32, long_row), RowPath::kIntervals);
  // A key list takes the whole call, whatever else the mask or the row
  // says: plain rules, a decode step, a dense part, groups, a long row.
  const std::int32_t slots[2] = {0, 3};
  const Shape4 ls{1, 1, 1, 2};
  std::vector<std::int32_t> q_group(8, 1), k_group(16, 1);
  std::vector<float> bias(8 * 16, 0.0f);
  const MaskSpec listed[] = {MaskSpec::causal().with_key_indices(slots, ls),
                             MaskSpec::none().with_key_indices(slots, ls),
                             MaskSpec::none()
                                 .with_bias(bias.data(), Shape4{1, 1, 8, 16})
                                 .with_key_indices(slots, ls),
                             MaskSpec::causal()
                                 .with_groups(q_group.data(), k_group.data())
                                 .with_key_indices(slots, ls)};
  for (const MaskSpec& mask : listed) {
    const detail::Rules rules = detail::RulesOf(mask);
    EXPECT_TRUE(rules.key_list);
    for (const std::size_t q_len : {std::size_t{1}, std::size_t{8}}) {
      const detail::CallFacts c =
          detail::CallFactsOf(rules, plain, ScoreType::kBF16, q_len, false);
      EXPECT_EQ(detail::ChooseRowPath(c, {}), RowPath::kKeyList);
      EXPECT_EQ(detail::ChooseRowPath(c, long_row), RowPath::kKeyList);
    }
  }
  // A block list takes the whole call too, split parts included.
  const std::int32_t num_blocks[1] = {1}, indices[1] = {0};
  BlockList blocks;
  blocks.num_blocks = num_blocks;
  blocks.indices = indices;
  blocks.batch = blocks.heads = blocks.q_blocks = blocks.max_blocks = 1;
  blocks.q_block = 8;
  blocks.k_block = 16;
  for (const MaskSpec& mask : {MaskSpec::causal().with_block_list(blocks),
                               MaskSpec::none()
                                   .with_bias(bias.data(), Shape4{1, 1, 8, 16})
                                   .with_block_list(blocks)}) {
    const detail::Rules rules = detail::RulesOf(mask);
    EXPECT_TRUE(rules.block_list);
    for (const bool split : {false, true}) {
      const detail::CallFacts c =
          detail::CallFactsOf(rules, plain, ScoreType::kF32, 8, split);
      EXPECT_EQ(detail::ChooseRowPath(c, {}), RowPath::kBlockList);
      EXPECT_EQ(detail::ChooseRowPath(c, long_row), RowPath::kBlockList);
    }
  }
}

class RowPathRunTest : public testing::PerTargetTest {
 protected:
  void TearDown() override {
    detail::StopCountingRowPaths();
    testing::PerTargetTest::TearDown();
  }

  // Runs masked_softmax on random scores of `type` and shape `s` (rows
  // `hot` offset by `offset`), checks it against the oracle, and returns
  // how many rows took `path`.
  std::uint64_t RowsOn(RowPath path, ScoreType type, const Shape4& s,
                       const MaskSpec& mask, const SoftmaxOptions& options,
                       float offset = 0.0f) {
    std::mt19937_64 rng(20261206 + static_cast<unsigned>(path));
    testing::Tensor t = RandomScores(rng, type, s);
    if (offset != 0.0f) {
      for (std::size_t k = 0; k < s.k_len; ++k) {
        const std::size_t at = testing::Offset(t.view, 0, 0, s.q_len - 1, k);
        testing::Set(t.view, at,
                     static_cast<float>(testing::Get(t.view, at)) + offset);
      }
    }
    detail::StartCountingRowPaths();
    const std::string mismatch = OracleMismatch(t, mask, options);
    detail::StopCountingRowPaths();
    EXPECT_EQ(mismatch, "") << detail::NameOf(path);
    return detail::RowPathCount(path);
  }
};
RLX_INSTANTIATE_PER_TARGET(RowPathRunTest);

TEST_P(RowPathRunTest, PlainBatch) {
  EXPECT_EQ(RowsOn(RowPath::kPlainBatch, ScoreType::kF32, {1, 2, 8, 64},
                   MaskSpec::causal(), {}),
            16u);
}

TEST_P(RowPathRunTest, PlainAlibiBatch) {
  const std::vector<float> slopes = alibi_slopes(2, 8.0f);
  SoftmaxOptions options;
  options.alibi_slopes = slopes.data();
  for (const ScoreType type : testing::kTypes) {
    EXPECT_EQ(RowsOn(RowPath::kPlainAlibiBatch, type, {1, 2, 8, 64},
                     MaskSpec::causal(), options),
              16u);
  }
}

TEST_P(RowPathRunTest, DecodeRun) {
  for (const ScoreType type : testing::kTypes) {
    EXPECT_EQ(RowsOn(RowPath::kDecodeRun, type, {2, 10, 1, 101},
                     MaskSpec::decode(70, 100), {}),
              20u);
  }
}

// A row whose scores lie near 1e6: its maximum is too large for the plain
// exp argument, so its batch hands it to the general code after pass 1.
TEST_P(RowPathRunTest, PlainHandOff) {
  const Shape4 s{1, 1, 4, 64};
  EXPECT_EQ(RowsOn(RowPath::kPlainHandOff, ScoreType::kF32, s,
                   MaskSpec::causal(), {}, 1e6f),
            1u);
  EXPECT_EQ(detail::RowPathCount(RowPath::kIntervals), 1u);
  const std::vector<float> slopes = alibi_slopes(1, 8.0f);
  SoftmaxOptions options;
  options.alibi_slopes = slopes.data();
  EXPECT_EQ(RowsOn(RowPath::kPlainHandOff, ScoreType::kF32, s,
                   MaskSpec::causal(), options, 1e6f),
            1u);
}

TEST_P(RowPathRunTest, DenseOnlyF32AndDenseKeep) {
  const Shape4 s{1, 2, 3, 50};
  std::vector<float> keep(s.k_len);
  std::vector<float> bias(s.k_len);
  for (std::size_t k = 0; k < s.k_len; ++k) {
    keep[k] = k % 3 == 0 ? 0.0f : 1.0f;
    bias[k] = k % 5 == 0 ? -1e30f : 0.25f * static_cast<float>(k % 7);
  }
  const Shape4 row{1, 1, 1, s.k_len};
  EXPECT_EQ(RowsOn(RowPath::kDenseOnlyF32, ScoreType::kF32, s,
                   MaskSpec::keep(keep.data(), row), {}),
            6u);
  EXPECT_EQ(RowsOn(RowPath::kDenseOnlyF32, ScoreType::kF32, s,
                   MaskSpec::bias(bias.data(), row), {}),
            6u);
  EXPECT_EQ(RowsOn(RowPath::kDenseKeep, ScoreType::kBF16, s,
                   MaskSpec::keep(keep.data(), row), {}),
            6u);
  EXPECT_EQ(RowsOn(RowPath::kBias, ScoreType::kF16, s,
                   MaskSpec::bias(bias.data(), row), {}),
            6u);
}

TEST_P(RowPathRunTest, IntervalsAndBias) {
  SoftmaxOptions capped;
  capped.softcap = 20.0f;
  const Shape4 s{1, 2, 5, 70};
  EXPECT_EQ(RowsOn(RowPath::kIntervals, ScoreType::kF32, s, MaskSpec::causal(),
                   capped),
            10u);
  std::vector<float> bias(s.k_len, 0.5f);
  EXPECT_EQ(
      RowsOn(RowPath::kBias, ScoreType::kF32, s,
             MaskSpec::causal().with_bias(bias.data(), {1, 1, 1, s.k_len}), {}),
      10u);
}

TEST_P(RowPathRunTest, KeepBytesTilesAndVectorMap) {
  // Interleaved documents under a bias (which the vector map does not
  // serve): keep bytes in one piece, not all kept.
  const Shape4 s{1, 1, 6, 90};
  std::vector<std::int32_t> q_seg(s.q_len), k_seg(s.k_len);
  for (std::size_t k = 0; k < s.k_len; ++k) k_seg[k] = (k / 3) % 2;
  for (std::size_t q = 0; q < s.q_len; ++q) q_seg[q] = q % 2;
  std::vector<float> bias(s.k_len, -0.5f);
  EXPECT_EQ(RowsOn(RowPath::kKeepBytes, ScoreType::kF32, s,
                   MaskSpec::causal()
                       .with_segments(q_seg.data(), k_seg.data())
                       .with_bias(bias.data(), {1, 1, 1, s.k_len}),
                   {}),
            6u);
  // Rows of more keys than a tile of keep bytes (8192 keys).
  const Shape4 wide{1, 1, 1, 12288};
  std::vector<std::int32_t> wq(1, 0), wk(wide.k_len, 0);
  wk[5] = 1;
  EXPECT_EQ(RowsOn(RowPath::kKeepByteTiles, ScoreType::kF32, wide,
                   MaskSpec::causal().with_segments(wq.data(), wk.data()), {}),
            1u);
  // A paged cache: the row's middle half is empty slots.
  const Shape4 paged{1, 2, 1, 512};
  std::vector<std::int64_t> q_pos(1, 600), k_pos(paged.k_len);
  for (std::size_t k = 0; k < paged.k_len; ++k) {
    k_pos[k] = k >= 128 && k < 384 ? -1 : static_cast<std::int64_t>(k);
  }
  EXPECT_EQ(
      RowsOn(RowPath::kVectorMap, ScoreType::kBF16, paged,
             MaskSpec::causal().with_positions(q_pos.data(), k_pos.data()), {}),
      2u);
}

TEST_P(RowPathRunTest, AlibiImplicitAndExplicit) {
  const std::vector<float> slopes = alibi_slopes(2, 8.0f);
  SoftmaxOptions options;
  options.alibi_slopes = slopes.data();
  options.softcap = 25.0f;  // not plain
  const Shape4 s{1, 2, 4, 40};
  EXPECT_EQ(RowsOn(RowPath::kAlibiImplicit, ScoreType::kF32, s,
                   MaskSpec::causal(), options),
            8u);
  std::vector<std::int64_t> q_pos(s.q_len), k_pos(s.k_len);
  for (std::size_t q = 0; q < s.q_len; ++q) q_pos[q] = 36 + q;
  for (std::size_t k = 0; k < s.k_len; ++k) {
    k_pos[k] = static_cast<std::int64_t>(s.k_len - 1 - k);
  }
  EXPECT_EQ(
      RowsOn(RowPath::kAlibiExplicit, ScoreType::kF16, s,
             MaskSpec::causal().with_positions(q_pos.data(), k_pos.data()),
             options),
      8u);
}

// Key lists: every row of the call on the key-list kernel, counted once
// per call (its whole row range), none on the loops' paths; f32 and 16-bit
// rows, causal and not, a list shared by heads and one per head.
TEST_P(RowPathRunTest, KeyList) {
  const Shape4 s{2, 3, 4, 70};
  const std::size_t n = 9;
  const Shape4 shared{1, 1, 1, n}, per_head{s.batch, s.heads, s.q_len, n};
  std::vector<std::int32_t> slots(per_head.rows() * n);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    // Unsorted, with a repeat and an unused slot in every row.
    const std::size_t j = i % n;
    slots[i] = j == n - 1 ? -1
               : j == 4   ? slots[i - 1]
                          : static_cast<std::int32_t>((i * 37 + 11) % s.k_len);
  }
  const SoftmaxOptions plain;
  SoftmaxOptions capped;
  capped.softcap = 20.0f;
  for (const ScoreType type :
       {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    EXPECT_EQ(RowsOn(RowPath::kKeyList, type, s,
                     MaskSpec::causal().with_key_indices(slots.data(), shared),
                     plain),
              s.rows())
        << testing::TypeName(type);
    for (std::size_t p = 0; p < detail::kRowPathCount; ++p) {
      if (static_cast<RowPath>(p) == RowPath::kKeyList) continue;
      EXPECT_EQ(detail::RowPathCount(static_cast<RowPath>(p)), 0u)
          << detail::NameOf(static_cast<RowPath>(p));
    }
    EXPECT_EQ(RowsOn(RowPath::kKeyList, type, s,
                     MaskSpec::none().with_key_indices(slots.data(), per_head),
                     capped),
              s.rows())
        << testing::TypeName(type);
  }
}

// Block lists: every row of the call on the block-list kernel, counted
// once per call, none on the loops' paths; f32 and 16-bit rows, causal
// and not, with and without full blocks.
TEST_P(RowPathRunTest, BlockList) {
  const Shape4 s{1, 2, 8, 70};
  // Two query blocks of 4 rows, five key blocks of 16 keys (the last 6).
  // Unsorted lists; a full block is never also a partial one.
  std::vector<std::int32_t> num_blocks = {2, 1, 3, 2};     // [1, 2, 2]
  std::vector<std::int32_t> indices = {2, 0, 0, 4, 0, 0,   // head 0
                                       1, 4, 3, 2, 0, 0};  // head 1
  std::vector<std::int32_t> full_num = {1, 0, 0, 1};
  std::vector<std::int32_t> full_idx = {4, 0, 0, 0, 0, 0,  //
                                        0, 0, 0, 3, 0, 0};
  BlockList blocks;
  blocks.num_blocks = num_blocks.data();
  blocks.indices = indices.data();
  blocks.batch = 1;
  blocks.heads = 2;
  blocks.q_blocks = 2;
  blocks.max_blocks = 3;
  blocks.q_block = 4;
  blocks.k_block = 16;
  BlockList with_full = blocks;
  with_full.full_num_blocks = full_num.data();
  with_full.full_indices = full_idx.data();
  SoftmaxOptions capped;
  capped.softcap = 20.0f;
  for (const ScoreType type :
       {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    EXPECT_EQ(RowsOn(RowPath::kBlockList, type, s,
                     MaskSpec::causal().with_block_list(blocks), {}),
              s.rows())
        << testing::TypeName(type);
    for (std::size_t p = 0; p < detail::kRowPathCount; ++p) {
      if (static_cast<RowPath>(p) == RowPath::kBlockList) continue;
      EXPECT_EQ(detail::RowPathCount(static_cast<RowPath>(p)), 0u)
          << detail::NameOf(static_cast<RowPath>(p));
    }
    EXPECT_EQ(RowsOn(RowPath::kBlockList, type, s,
                     MaskSpec::none().with_block_list(with_full), capped),
              s.rows())
        << testing::TypeName(type);
  }
}

}  // namespace
}  // namespace rlx
