// SPDX-License-Identifier: MIT OR Apache-2.0
// Rows split into parts finished in place (rlx/softmax_split.h:
// masked_softmax_part, then finish_softmax_part): every mask, option, row
// type and write mode, long rows, empty parts and NaN rows against the
// oracle; split_kept_keys's balance; bad arguments.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include "rlx/softmax_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/softmax/softmax_ext_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::rlx::testing::ExtMask;
using ::rlx::testing::kInf;
using ::rlx::testing::kTypes;
using ::rlx::testing::RandomKeyRanges;
using ::rlx::testing::RandomMask;
using ::rlx::testing::RandomScores;
using ::rlx::testing::RandomSinks;
using ::rlx::testing::RunSplit;
using ::rlx::testing::ShapeName;
using ::testing::HasSubstr;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// A row split into parts and finished in place is the whole row's masked
// softmax: every mask, option, row type and mode, against the oracle; in
// kept-only mode the keys outside kept_keys are left alone.
TEST_P(SoftmaxExtTest, SplitRowsFinishedInPlaceMatchTheOracle) {
  std::mt19937_64 rng(2026);
  const int iterations = testing::ScaledIterations(200);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 3000 : 60)};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    std::vector<float> lse(s.rows(), 5.0f), lse_want(s.rows());
    SoftmaxOptions options;
    options.scale = rng() % 2 ? 0.5f : 1.0f;
    options.softcap = rng() % 4 == 0 ? 4.0f : 0.0f;
    if (rng() % 2) options.sink_logits = sinks.data();
    if (rng() % 3 == 0) options.alibi_slopes = slopes.data();
    options.zero_masked = rng() % 3 != 0;
    options.row_lse = lse.data();
    const std::size_t parts = 1 + rng() % 4;
    const std::vector<KeyRange> ranges =
        RandomKeyRanges(rng, em.mask, s, parts);
    const ScoreType type = kTypes[it % 3];
    testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
    const ScoreView before = testing::SameViewIn(t, before_bytes);
    const ScoreView got = testing::SameViewIn(t, got_bytes);
    const ScoreView want = testing::SameViewIn(t, want_bytes);
    RunSplit(got, em.mask, options, ranges, RowRange::all(s));
    SoftmaxOptions ref_options = options;
    ref_options.row_lse = lse_want.data();
    reference::masked_softmax(want, want, em.mask, ref_options,
                              RowRange::all(s));
    std::string where = std::string(testing::TypeName(type)) + " " + em.name +
                        " " + ShapeName(s) + " parts " + std::to_string(parts) +
                        " iteration " + std::to_string(it);
    for (const KeyRange& r : ranges) {
      where +=
          " [" + std::to_string(r.begin) + "," + std::to_string(r.end) + ")";
    }
    ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, em.mask, options,
                                       lse.data(), lse_want.data()),
              "")
        << where;
    if (options.zero_masked) continue;
    const std::size_t es = testing::ElemSize(type);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys written = kept_keys(em.mask, b, q, s.q_len, s.k_len);
          for (std::size_t k = 0; k < s.k_len; ++k) {
            if (testing::Contains(written, k)) continue;
            const std::size_t off = testing::Offset(got, b, h, q, k) * es;
            ASSERT_EQ(
                std::memcmp(static_cast<const std::uint8_t*>(got.data) + off,
                            static_cast<const std::uint8_t*>(before.data) + off,
                            es),
                0)
                << where << " key " << k << " outside kept_keys was written";
          }
        }
  }
}

// Long rows (past the 16-bit stack scratch), one row split into 2-4 parts
// as an executor would: balanced over the kept keys.
TEST_P(SoftmaxExtTest, SplitLongRowsMatchTheOracle) {
  std::mt19937_64 rng(77);
  const int iterations = testing::ScaledIterations(9);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 9000 + rng() % 12000;
    const Shape4 s{1, 2, 1, n};
    const std::size_t past = rng() % n;
    const MaskSpec mask = MaskSpec::decode(past, n - 1);
    const float sinks[] = {2.0f, -kInf};
    std::vector<float> lse(s.rows()), lse_want(s.rows());
    SoftmaxOptions options;
    options.sink_logits = it % 2 ? sinks : nullptr;
    options.row_lse = lse.data();
    const std::size_t parts = 2 + it % 3;
    const KeptKeys kept = kept_keys(mask, 0, 0, 1, n);
    std::vector<KeyRange> ranges;
    for (std::size_t p = 0; p < parts; ++p) {
      ranges.push_back(split_kept_keys(kept, n, p, parts));
    }
    const ScoreType type = kTypes[it % 3];
    testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
    const ScoreView before = testing::SameViewIn(t, before_bytes);
    const ScoreView got = testing::SameViewIn(t, got_bytes);
    const ScoreView want = testing::SameViewIn(t, want_bytes);
    RunSplit(got, mask, options, ranges, RowRange::all(s));
    SoftmaxOptions ref_options = options;
    ref_options.row_lse = lse_want.data();
    reference::masked_softmax(want, want, mask, ref_options, RowRange::all(s));
    ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, mask, options,
                                       lse.data(), lse_want.data()),
              "")
        << testing::TypeName(type) << " n " << n << " past " << past
        << " parts " << parts;
  }
}

// Rows with no kept key in a part, or anywhere, and NaN rows: zeros stay
// zeros, the lse is -inf, a NaN reaches every kept key of every part and
// no masked one.
TEST_P(SoftmaxExtTest, SplitRowsHandleEmptyPartsAndNaN) {
  // Causal from query position 0: row 0 keeps key 0, row 1 keys 0 and 1,
  // all in part 0 of [0, 4) and [4, 8); a NaN at a masked key of part 1.
  std::vector<float> scores(2 * 8, 1.0f);
  scores[8 + 6] = std::nanf("");
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 1, 2, 8});
  const std::int64_t offsets[] = {0};
  const MaskSpec shifted = MaskSpec::causal().with_query_offsets(offsets);
  std::vector<float> lse(2, 3.0f);
  SoftmaxOptions options;
  options.row_lse = lse.data();
  const std::vector<KeyRange> ranges{{0, 4}, {4, 8}};
  RunSplit(v, shifted, options, ranges, RowRange::all(v.shape));
  // Row 0 keeps key 0 (part 0 alone): probability 1; part 1 all zeros.
  EXPECT_EQ(scores[0], 1.0f);
  for (int k = 1; k < 8; ++k) EXPECT_EQ(scores[k], 0.0f) << k;
  EXPECT_NEAR(lse[0], 1.0f, 1e-6);
  // Row 1 keeps keys 0 and 1 (part 0); the NaN at key 6 is masked.
  EXPECT_NEAR(scores[8], 0.5f, 1e-6);
  EXPECT_NEAR(scores[9], 0.5f, 1e-6);
  for (int k = 10; k < 16; ++k) EXPECT_EQ(scores[k], 0.0f) << k;
  // A decode row, parts [0, 5) and [5, 10), a NaN at key 7.
  std::vector<float> row(10, 0.5f);
  row[7] = std::nanf("");
  const ScoreView rv = ScoreView::f32(row.data(), Shape4{1, 1, 1, 10});
  float row_lse = 0.0f;
  options.row_lse = &row_lse;
  // Past 6, upper 9: keys 0-5 and 9 kept; the NaN is masked ...
  RunSplit(rv, MaskSpec::decode(6, 9), options, {{0, 5}, {5, 10}},
           RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) {
    if (k >= 6 && k <= 8) {
      EXPECT_EQ(row[k], 0.0f) << k;
    } else {
      EXPECT_NEAR(row[k], 1.0f / 7.0f, 1e-6) << k;
    }
  }
  // ... past 8: the NaN is kept (part 1); part 0's keys become NaN too,
  // the masked key 8 stays 0.
  std::fill(row.begin(), row.end(), 0.5f);
  row[7] = std::nanf("");
  RunSplit(rv, MaskSpec::decode(8, 9), options, {{0, 5}, {5, 10}},
           RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) {
    if (k == 8) {
      EXPECT_EQ(row[k], 0.0f) << k;
    } else {
      EXPECT_TRUE(std::isnan(row[k])) << k << ": " << row[k];
    }
  }
  EXPECT_TRUE(std::isnan(row_lse));
  // No kept key in any part: zeros, lse -inf, sink or not.
  std::vector<std::uint8_t> keep(10, 0);
  std::fill(row.begin(), row.end(), 0.5f);
  const float sink[] = {1.0f};
  options.sink_logits = sink;
  RunSplit(rv, MaskSpec::keep(keep.data(), rv.shape), options,
           {{0, 3}, {3, 10}}, RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) EXPECT_EQ(row[k], 0.0f) << k;
  EXPECT_EQ(row_lse, -kInf);
}

TEST(SoftmaxSplitTest, SplitKeptKeysIsBalancedAndCoversTheRow) {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 3000; ++it) {
    const std::size_t n = 1 + rng() % 200;
    KeptKeys kept;
    std::size_t at = rng() % (n + 1);
    while (kept.count < KeptKeys::kMaxIntervals && at < n && rng() % 4 != 0) {
      const std::size_t end = at + 1 + rng() % (n - at);
      kept.intervals[kept.count++] = {at, end};
      at = end + 1 + rng() % 5;
    }
    const std::size_t parts = 1 + rng() % 6;
    // In sixteenths of a kept key's cost.
    const int masked = it % 3 == 0 ? 0 : static_cast<int>(rng() % 17);
    const auto cost_of = [&](std::size_t begin, std::size_t end) {
      double cost = 0;
      for (std::size_t k = begin; k < end; ++k) {
        cost += testing::Contains(kept, k) ? 16 : masked;
      }
      return cost;
    };
    const double share = cost_of(0, n) / static_cast<double>(parts);
    std::size_t next = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      const KeyRange r = split_kept_keys(kept, n, p, parts, masked / 16.0);
      const std::string where = "part " + std::to_string(p) + " of " +
                                std::to_string(parts) + ", masked cost " +
                                std::to_string(masked) + "/16, n " +
                                std::to_string(n);
      ASSERT_EQ(r.begin, next) << where;
      ASSERT_LE(r.begin, r.end) << where;
      // Within a kept key's cost (and the rounding of the share) of 1/parts.
      ASSERT_LE(std::fabs(cost_of(r.begin, r.end) - share), 17.0) << where;
      // Without a cost for masked keys, a boundary inside the row is a kept
      // key.
      if (masked == 0 && p > 0 && r.begin < n) {
        ASSERT_TRUE(testing::Contains(kept, r.begin)) << where;
      }
      next = r.end;
    }
    ASSERT_EQ(next, n);
  }
}

TEST(SoftmaxSplitTest, BadArgumentsAreNamedErrorsAndWriteNothing) {
  std::vector<float> scores(2 * 6, 1.0f);
  const std::vector<float> copy = scores;
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 2, 1, 6});
  std::vector<SoftmaxPartStats> stats(2, {7.0, 7.0});
  const MaskSpec mask = MaskSpec::causal();
  EXPECT_THAT(
      ErrorOf([&] {
        masked_softmax_part(v, mask, {2, 7}, stats.data());
      }),
      HasSubstr("masked_softmax_part: keys [2, 7) is not a key range of a "
                "row of k_len 6"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(v, mask, {4, 3}, stats.data());
              }),
              HasSubstr("masked_softmax_part: keys [4, 3)"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(v, mask, {0, 3}, nullptr);
              }),
              HasSubstr("masked_softmax_part: stats is null"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(ScoreView::f32(nullptr, v.shape), mask,
                                    {0, 3}, stats.data());
              }),
              HasSubstr("masked_softmax_part: scores.data is null"));
  const SoftmaxPartStats* parts[] = {stats.data(), nullptr};
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 0);
              }),
              HasSubstr("finish_softmax_part: parts[1] is null"));
  parts[1] = stats.data();
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 2);
              }),
              HasSubstr("finish_softmax_part: part 2 is not below the part "
                        "count 2"));
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, {}, 0);
              }),
              HasSubstr("finish_softmax_part: no parts"));
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 9}, parts, 0);
              }),
              HasSubstr("finish_softmax_part: keys [0, 9)"));
  const float nan_sink[] = {0.0f, std::nanf("")};
  SoftmaxOptions o;
  o.sink_logits = nan_sink;
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 0, o);
              }),
              HasSubstr("finish_softmax_part: sink_logits[1] (head 1) is nan"));
  EXPECT_EQ(scores, copy);
  EXPECT_EQ(stats[0].sum, 7.0);
  const KeptKeys kept{{KeyInterval{1, 3}, KeyInterval{5, 6}}, 2};
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 0, 0); }),
              HasSubstr("split_kept_keys: parts is 0"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 3, 3); }),
              HasSubstr("split_kept_keys: part 3 is not below parts 3"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 0, 3, 1.5); }),
              HasSubstr("split_kept_keys: masked_key_cost 1.500000 is not in "
                        "[0, 1]"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 5, 0, 2); }),
              HasSubstr("split_kept_keys: kept interval 1 [5, 6) is empty, "
                        "out of order or beyond k_len 5"));
}

}  // namespace
}  // namespace rlx
