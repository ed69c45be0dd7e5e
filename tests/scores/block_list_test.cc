// SPDX-License-Identifier: MIT OR Apache-2.0
// Block lists (MaskSpec::with_block_list, docs/SEMANTICS.md "Block lists")
// on every compiled target: classify_blocks' output fed back in as a block
// list gives the original mask bit for bit; apply_mask, masked_softmax (both
// modes, every row type, strided and misaligned views, sinks, ALiBi,
// row_lse) and kept_keys against the oracle on random lists over random
// rules; keys of no listed block are never read; bad lists are errors that
// write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rlx/block_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_split.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/mask/rule_masks.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::rlx::testing::RuleMask;
using ::testing::HasSubstr;

constexpr ScoreType kTypes[] = {ScoreType::kF32, ScoreType::kBF16,
                                ScoreType::kF16};

class BlockListTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(BlockListTest);

// Random scores in [-10, 10] into every element of t's view.
void FillScores(std::mt19937_64& rng, const testing::Tensor& t) {
  const Shape4& s = t.view.shape;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                       static_cast<float>(rng() % 2001) / 100.0f - 10.0f);
        }
}

// classify_blocks of every (batch, head) of `mask` in tq x tk tiles, as a
// block list: FlexAttention's uint32 arrays converted to int32, laid out
// [batch, heads, q_blocks, k_blocks].
struct ClassifiedList {
  std::vector<std::int32_t> num, indices, full_num, full_indices;
  BlockList list;
};

ClassifiedList Classify(const MaskSpec& mask, const Shape4& s, std::size_t tq,
                        std::size_t tk) {
  const std::size_t qbs = (s.q_len + tq - 1) / tq,
                    kbs = (s.k_len + tk - 1) / tk;
  ClassifiedList c;
  const std::size_t heads = s.batch * s.heads;
  c.num.resize(heads * qbs);
  c.full_num.resize(heads * qbs);
  c.indices.resize(heads * qbs * kbs);
  c.full_indices.resize(heads * qbs * kbs);
  std::vector<std::uint32_t> num(qbs), idx(qbs * kbs), full_num(qbs),
      full_idx(qbs * kbs);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h) {
      BlockMaskView view{
          qbs, kbs, num.data(), idx.data(), full_num.data(), full_idx.data()};
      classify_blocks(mask, s, b, h, tq, tk, view);
      const std::size_t at = (b * s.heads + h) * qbs;
      for (std::size_t i = 0; i < qbs; ++i) {
        c.num[at + i] = static_cast<std::int32_t>(num[i]);
        c.full_num[at + i] = static_cast<std::int32_t>(full_num[i]);
      }
      for (std::size_t e = 0; e < qbs * kbs; ++e) {
        c.indices[at * kbs + e] = static_cast<std::int32_t>(idx[e]);
        c.full_indices[at * kbs + e] = static_cast<std::int32_t>(full_idx[e]);
      }
    }
  c.list.num_blocks = c.num.data();
  c.list.indices = c.indices.data();
  c.list.full_num_blocks = c.full_num.data();
  c.list.full_indices = c.full_indices.data();
  c.list.batch = s.batch;
  c.list.heads = s.heads;
  c.list.q_blocks = qbs;
  c.list.max_blocks = kbs;
  c.list.q_block = tq;
  c.list.k_block = tk;
  return c;
}

// The acceptance test: over random rule combinations (every kind, causal,
// windows, chunks, sinks, prefixes, segments, explicit positions, dense
// parts) and random tiles, the mask with classify_blocks' output as its
// block list keeps exactly the keys the mask keeps: apply_mask bit for bit
// (fill -inf),
// masked_softmax zero exactly where the original is and otherwise within
// the oracle's bound of the original mask's oracle, in every row type.
TEST_P(BlockListTest, ClassifyBlocksFedBackGivesTheSameMask) {
  std::mt19937_64 rng(8192);
  const int iterations = testing::ScaledIterations(400);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 2, 1 + rng() % 9,
                   1 + rng() % (it % 5 == 0 ? 200 : 30)};
    RuleMask rm;
    testing::RandomRules(rng, s, rm);
    // The original: rules alone (no list part: a mask has at most one).
    rm.mask.block_list = BlockList{};
    rm.mask.key_indices = nullptr;
    const std::size_t tq = 1 + rng() % (s.q_len + 1);
    const std::size_t tk = 1 + rng() % (rng() % 2 ? s.k_len + 1 : 9);
    const ClassifiedList c = Classify(rm.mask, s, tq, tk);
    const MaskSpec listed = rm.mask.with_block_list(c.list);
    const std::string where = rm.name + " tiles " + std::to_string(tq) + "x" +
                              std::to_string(tk) + " iteration " +
                              std::to_string(it);
    for (const ScoreType type : kTypes) {
      testing::Tensor t = testing::MakeTensor(type, s, rng() % 3, rng() % 3);
      FillScores(rng, t);
      std::vector<std::uint8_t> a_bytes, b_bytes;
      ScoreView original = testing::SameViewIn(t, a_bytes);
      ScoreView with_list = testing::SameViewIn(t, b_bytes);
      // A fill of -inf: a key that a -inf bias masks reads -inf from the
      // original mask (its bias added) and the fill from an empty tile.
      apply_mask(original, rm.mask);
      apply_mask(with_list, listed);
      ASSERT_EQ(a_bytes, b_bytes) << "apply_mask " << where;
      const SoftmaxOptions options{.scale = 0.5f,
                                   .softcap = rng() % 3 ? 0.0f : 5.0f};
      std::vector<std::uint8_t> before_bytes, want_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      original = testing::SameViewIn(t, a_bytes);
      with_list = testing::SameViewIn(t, b_bytes);
      const ScoreView want = testing::SameViewIn(t, want_bytes);
      masked_softmax(original, rm.mask, options);
      masked_softmax(with_list, listed, options);
      reference::masked_softmax(want, want, rm.mask, options, RowRange::all(s));
      ASSERT_EQ(
          testing::SoftmaxMismatch(before, with_list, want, rm.mask, options),
          "")
          << testing::TypeName(type) << " " << where;
      for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
          for (std::size_t q = 0; q < s.q_len; ++q)
            for (std::size_t k = 0; k < s.k_len; ++k) {
              const std::size_t off = testing::Offset(original, b, h, q, k);
              const double p = testing::Get(original, off);
              const double p_list = testing::Get(with_list, off);
              ASSERT_EQ(p == 0.0, p_list == 0.0)
                  << testing::TypeName(type) << " " << where << " key (" << b
                  << "," << h << "," << q << "," << k << ")";
            }
    }
  }
}

// Random block lists (any q_block, k_block, broadcast batch and heads, the
// full pair null or not, blocks in any order, k_len not a multiple of
// k_block) over random rules, on strided and misaligned views of every
// row type: apply_mask bit for bit, masked_softmax within the bound with
// sinks, ALiBi and row_lse, its kept-only mode writing exactly the listed
// keys inside kept_keys, kept_keys a cover, nothing outside the views.
TEST_P(BlockListTest, RandomListsMatchTheOracle) {
  std::mt19937_64 rng(64064);
  const int iterations = testing::ScaledIterations(500);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 7,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    RuleMask rm;
    testing::RuleCombination combination;
    combination.kind = kinds::kAllMaskKinds[rng() % kinds::kMaskKindCount];
    combination.rules = (rng() % testing::kRuleSets) | testing::kBlockList;
    if (MaskSpec::dense_kind_of(combination.kind) == DenseKind::kNone &&
        rng() % 3 == 0) {
      combination.dense =
          kinds::kAllDenseKinds[1 + rng() % (kinds::kDenseKindCount - 1)];
    }
    testing::RulesOf(rng, s, combination, rm);
    std::vector<float> sinks(s.heads), lse(s.rows(), 7.0f),
        lse_want(s.rows(), 7.0f);
    for (auto& v : sinks) v = static_cast<float>(rng() % 7) - 3.0f;
    const std::vector<float> slopes = alibi_slopes(s.heads);
    SoftmaxOptions options;
    options.scale = rng() % 4 == 0 ? -0.5f : 0.5f;
    options.softcap = rng() % 4 == 0 ? 5.0f : 0.0f;
    if (rng() % 3 == 0) options.sink_logits = sinks.data();
    if (rng() % 3 == 0) options.alibi_slopes = slopes.data();
    const std::string where = rm.name + " iteration " + std::to_string(it);
    // kept_keys: a cover of every head's kept keys, at most three intervals.
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t q = 0; q < s.q_len; ++q) {
        const KeptKeys kept = kept_keys(rm.mask, b, q, s.q_len, s.k_len);
        ASSERT_LE(kept.count, KeptKeys::kMaxIntervals);
        for (std::size_t h = 0; h < s.heads; ++h)
          for (std::size_t k = 0; k < s.k_len; ++k) {
            if (reference::is_kept(rm.mask, s, b, h, q, k)) {
              ASSERT_TRUE(testing::Contains(kept, k))
                  << where << " kept key " << k << " outside kept_keys";
            }
          }
      }
    for (const ScoreType type : kTypes) {
      testing::Tensor t = testing::MakeTensor(type, s, rng() % 3, rng() % 4);
      FillScores(rng, t);
      const std::string at = std::string(testing::TypeName(type)) + " " + where;
      std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      ScoreView got = testing::SameViewIn(t, got_bytes);
      ScoreView want = testing::SameViewIn(t, want_bytes);
      apply_mask(got, rm.mask, -1e9f);
      reference::apply_mask(want, rm.mask, RowRange::all(s), -1e9f);
      ASSERT_EQ(testing::ApplyMismatch(got, want, rm.mask), "") << at;
      testing::Tensor g{got_bytes, got};
      g.view.data = g.bytes.data() +
                    (static_cast<std::uint8_t*>(got.data) - got_bytes.data());
      ASSERT_EQ(testing::UntouchedOutside(g, g.view), "") << at;
      // The default mode, rows in two ranges.
      got = testing::SameViewIn(t, got_bytes);
      want = testing::SameViewIn(t, want_bytes);
      SoftmaxOptions with_lse = options;
      with_lse.row_lse = lse.data();
      const std::size_t cut = rng() % (s.rows() + 1);
      masked_softmax(got, rm.mask, with_lse, {0, cut});
      masked_softmax(got, rm.mask, with_lse, {cut, s.rows()});
      SoftmaxOptions want_options = options;
      want_options.row_lse = lse_want.data();
      reference::masked_softmax(before, want, rm.mask, want_options,
                                RowRange::all(s));
      ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, rm.mask, options,
                                         lse.data(), lse_want.data()),
                "")
          << at;
      const std::vector<std::uint8_t> default_bytes = got_bytes;
      // Kept-only: exactly the listed keys inside kept_keys, each as the
      // default mode wrote it; every other key keeps its score.
      got = testing::SameViewIn(t, got_bytes);
      SoftmaxOptions kept_only = options;
      kept_only.zero_masked = false;
      masked_softmax(got, rm.mask, kept_only);
      const std::size_t es = testing::ElemSize(type);
      for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys kept = kept_keys(rm.mask, b, q, s.q_len, s.k_len);
          for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t k = 0; k < s.k_len; ++k) {
              const std::size_t off =
                  (static_cast<std::uint8_t*>(got.data) - got_bytes.data()) +
                  testing::Offset(got, b, h, q, k) * es;
              const bool written = testing::Contains(kept, k) &&
                                   reference::is_listed(rm.mask, b, h, q, k);
              const std::vector<std::uint8_t>& want_row =
                  written ? default_bytes : t.bytes;
              ASSERT_EQ(std::memcmp(got_bytes.data() + off,
                                    want_row.data() + off, es),
                        0)
                  << at << " kept-only key (" << b << "," << h << "," << q
                  << "," << k << ") " << (written ? "written" : "untouched");
            }
        }
    }
  }
}

// Split rows (rlx/softmax_split.h, default mode): two parts of each row's
// keys, finished in place, give masked_softmax's probabilities within its
// bound and its zeros exactly.
TEST_P(BlockListTest, SplitRowsMatchTheWholeRow) {
  std::mt19937_64 rng(2);
  const int iterations = testing::ScaledIterations(100);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1, 1 + rng() % 2, 1 + rng() % 5, 2 + rng() % 120};
    RuleMask rm;
    testing::RuleCombination c;
    c.kind = rng() % 2 ? MaskKind::kCausal : MaskKind::kNone;
    c.rules = testing::kBlockList | (rng() % 2 ? testing::kWindowKeys : 0u);
    testing::RulesOf(rng, s, c, rm);
    std::vector<float> whole(s.rows() * s.k_len), split;
    for (float& v : whole) v = static_cast<float>(rng() % 2001) / 100.0f - 10;
    split = whole;
    masked_softmax(ScoreView::f32(whole.data(), s), rm.mask);
    const ScoreView v = ScoreView::f32(split.data(), s);
    const std::size_t cut = rng() % (s.k_len + 1);
    const KeyRange ranges[] = {{0, cut}, {cut, s.k_len}};
    std::vector<SoftmaxPartStats> stats0(s.rows()), stats1(s.rows());
    masked_softmax_part(v, rm.mask, ranges[0], stats0.data());
    masked_softmax_part(v, rm.mask, ranges[1], stats1.data());
    const SoftmaxPartStats* parts[] = {stats0.data(), stats1.data()};
    finish_softmax_part(v, rm.mask, ranges[0], parts, 0);
    finish_softmax_part(v, rm.mask, ranges[1], parts, 1);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      ASSERT_EQ(whole[i] == 0.0f, split[i] == 0.0f)
          << rm.name << " element " << i << " cut " << cut;
      ASSERT_NEAR(split[i], whole[i], 1e-6f * (1.0f + whole[i]))
          << rm.name << " element " << i << " cut " << cut;
    }
  }
}

// A call beyond 8 MiB writes its rows' unlisted zeros with streaming
// stores (the default mode): the same results, every row type, on a
// misaligned, strided view.
TEST_P(BlockListTest, LargeCallsMatchTheOracle) {
  std::mt19937_64 rng(3);
  const Shape4 s{1, 2, 17, 150001};  // 16-bit rows: 10 MB
  RuleMask rm;
  testing::RuleCombination c;
  c.kind = MaskKind::kCausal;
  c.rules = testing::kBlockList;
  testing::RulesOf(rng, s, c, rm);
  // Scaled-down legs (sanitizers, qemu) check f32 alone: 20 MB, past the
  // streaming-store threshold as the 16-bit rows' 10 MB are.
  const std::size_t types = testing::TestScale() < 1.0 ? 1 : std::size(kTypes);
  for (std::size_t ti = 0; ti < types; ++ti) {
    const ScoreType type = kTypes[ti];
    testing::Tensor t = testing::MakeTensor(type, s, 3, 1);
    FillScores(rng, t);
    std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
    const ScoreView before = testing::SameViewIn(t, before_bytes);
    const ScoreView got = testing::SameViewIn(t, got_bytes);
    const ScoreView want = testing::SameViewIn(t, want_bytes);
    masked_softmax(got, rm.mask);
    reference::masked_softmax(want, want, rm.mask, {}, RowRange::all(s));
    ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, rm.mask, {}), "")
        << testing::TypeName(type) << " " << rm.name;
    testing::Tensor g{got_bytes, got};
    g.view.data = g.bytes.data() +
                  (static_cast<std::uint8_t*>(got.data) - got_bytes.data());
    ASSERT_EQ(testing::UntouchedOutside(g, g.view), "") << rm.name;
  }
}

// A key of no listed block is never read: NaN scores there change nothing
// (the softmax is the same as over finite scores there), and apply_mask
// fills it. A full block's keys are kept whatever the rules and the dense
// keep part say, but are still biased.
TEST_P(BlockListTest, UnlistedKeysAreNeverReadAndFullBlocksSkipTheRules) {
  const Shape4 s{1, 1, 2, 10};
  // Query block 0 (rows 0, 1 with q_block 2): key block 0 ([0, 4)) full,
  // block 2 ([8, 10), short) partial; block 1 unlisted.
  const std::int32_t num[] = {1}, idx[] = {2, -1, -1};
  const std::int32_t full_num[] = {1}, full_idx[] = {0, -1, -1};
  BlockList l;
  l.num_blocks = num;
  l.indices = idx;
  l.full_num_blocks = full_num;
  l.full_indices = full_idx;
  l.batch = l.heads = 1;
  l.q_blocks = 1;
  l.max_blocks = 3;
  l.q_block = 2;
  l.k_block = 4;
  // A keep mask that keeps nothing, and a window of one key: the full
  // block keeps its keys anyway; the partial block keeps nothing.
  std::vector<std::uint8_t> keep(s.q_len * s.k_len, 0);
  const MaskSpec mask = MaskSpec::causal()
                            .with_window_keys(1)
                            .with_keep(keep.data(), {1, 1, 2, 10})
                            .with_block_list(l);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> scores(s.q_len * s.k_len, 1.0f);
  for (std::size_t q = 0; q < 2; ++q) {
    for (std::size_t k = 4; k < 8; ++k) scores[q * 10 + k] = nan;
  }
  std::vector<float> applied = scores;
  apply_mask(ScoreView::f32(applied.data(), s), mask, -5.0f);
  for (std::size_t q = 0; q < 2; ++q) {
    for (std::size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(applied[q * 10 + k], k < 4 ? 1.0f : -5.0f) << q << "," << k;
    }
  }
  masked_softmax(ScoreView::f32(scores.data(), s), mask);
  for (std::size_t q = 0; q < 2; ++q) {
    for (std::size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(scores[q * 10 + k], k < 4 ? 0.25f : 0.0f) << q << "," << k;
    }
  }
  // A bias on the full block still adds (and a -inf entry masks).
  std::vector<float> bias(10, 0.0f);
  bias[0] = std::log(2.0f);
  bias[1] = -std::numeric_limits<float>::infinity();
  const MaskSpec biased = MaskSpec::causal()
                              .with_bias(bias.data(), {1, 1, 1, 10})
                              .with_block_list(l);
  std::vector<float> p(s.q_len * s.k_len, 0.0f);
  masked_softmax(ScoreView::f32(p.data(), s), biased);
  EXPECT_NEAR(p[0], 2.0f * p[2], 1e-6f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_GT(p[2], 0.0f);
  EXPECT_EQ(p[2], p[3]);
  // Empty slots and other segments stay masked in a full block.
  const std::int32_t q_seg[] = {1, 1}, k_seg[] = {1, 2, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<float> seg(s.q_len * s.k_len, 0.0f);
  masked_softmax(
      ScoreView::f32(seg.data(), s),
      MaskSpec::none().with_segments(q_seg, k_seg).with_block_list(l));
  EXPECT_EQ(seg[1], 0.0f);
  EXPECT_NEAR(seg[0], 1.0f / 5.0f, 1e-6f);  // keys 0, 2, 3 and 8, 9
}

// Bad lists are rejected by every entry point, naming the function and the
// values, and nothing is written.
TEST_P(BlockListTest, BadListsAreErrorsThatWriteNothing) {
  const Shape4 s{1, 2, 4, 10};
  std::vector<std::int32_t> num(2 * 2, 1), idx(2 * 2 * 3, 0),
      full_num(2 * 2, 1), full_idx(2 * 2 * 3, 1);
  BlockList good;
  good.num_blocks = num.data();
  good.indices = idx.data();
  good.full_num_blocks = full_num.data();
  good.full_indices = full_idx.data();
  good.batch = 1;
  good.heads = 2;
  good.q_blocks = 2;
  good.max_blocks = 3;
  good.q_block = 2;
  good.k_block = 4;
  const auto expect_error = [&](BlockList l, const char* what,
                                std::vector<std::int32_t>* array = nullptr,
                                std::size_t at = 0, std::int32_t value = 0,
                                bool kept_keys_sees_it = true) {
    std::int32_t saved = 0;
    if (array != nullptr) {
      saved = (*array)[at];
      (*array)[at] = value;
    }
    const MaskSpec mask = MaskSpec::causal().with_block_list(l);
    std::vector<float> scores(s.rows() * s.k_len, 3.0f);
    const std::vector<float> before = scores;
    const ScoreView v = ScoreView::f32(scores.data(), s);
    EXPECT_THAT(testing::ErrorOf([&] { masked_softmax(v, mask); }),
                HasSubstr(what));
    EXPECT_THAT(testing::ErrorOf([&] { masked_softmax(v, mask); }),
                HasSubstr("masked_softmax"));
    EXPECT_THAT(testing::ErrorOf([&] { apply_mask(v, mask); }),
                HasSubstr("apply_mask"));
    // kept_keys names no head and sees one batch: it cannot tell a list's
    // heads or batches from the scores'.
    if (kept_keys_sees_it) {
      EXPECT_THAT(testing::ErrorOf([&] { kept_keys(mask, 0, 0, 4, 10); }),
                  HasSubstr(what));
    }
    EXPECT_EQ(scores, before) << what;
    if (array != nullptr) (*array)[at] = saved;
  };
  {  // The good list itself works.
    std::vector<float> scores(s.rows() * s.k_len, 3.0f);
    masked_softmax(ScoreView::f32(scores.data(), s),
                   MaskSpec::causal().with_block_list(good));
  }
  BlockList l = good;
  l.q_block = 0;
  expect_error(l, "q_block and k_block must be at least 1");
  l = good;
  l.k_block = 0;
  expect_error(l, "q_block and k_block must be at least 1");
  l = good;
  l.q_blocks = 3;
  expect_error(l, "q_blocks must be ceil(q_len / q_block) = 2");
  l = good;
  l.heads = 3;
  expect_error(l, "batch and heads must each be 1", nullptr, 0, 0, false);
  l = good;
  l.batch = 2;
  expect_error(l, "batch and heads must each be 1", nullptr, 0, 0, false);
  l = good;
  l.indices = nullptr;
  expect_error(l, "indices is null");
  l = good;
  l.full_indices = nullptr;
  expect_error(l, "full_indices is null");
  expect_error(good, "num_blocks[2] = 4 is not in [0, max_blocks 3]", &num, 2,
               4);
  expect_error(good, "num_blocks[1] = -1", &num, 1, -1);
  expect_error(good, "full_num_blocks[3] = 5", &full_num, 3, 5);
  expect_error(good, "indices[3] = 3 is not a key block in [0, 3)", &idx, 3, 3);
  expect_error(good, "full_indices[6] = -1 is not a key block", &full_idx, 6,
               -1);
  // Block 0 both partial and full (query block 1 of head 0).
  expect_error(good, "lists key block 0 twice", &full_idx, 3, 0);
  // Twice in one list.
  num[0] = 2;
  expect_error(good, "lists key block 0 twice", &idx, 1, 0);
  num[0] = 1;
  // With a key list.
  const std::int32_t keys[] = {0};
  const MaskSpec both =
      MaskSpec::causal().with_block_list(good).with_key_indices(keys,
                                                                {1, 1, 1, 1});
  std::vector<float> scores(s.rows() * s.k_len, 3.0f);
  EXPECT_THAT(testing::ErrorOf([&] {
                masked_softmax(ScoreView::f32(scores.data(), s), both);
              }),
              HasSubstr("key_indices"));
}

}  // namespace
}  // namespace rlx
