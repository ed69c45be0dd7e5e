// SPDX-License-Identifier: MIT OR Apache-2.0
// Rows split by key into parts, each a masked softmax with its row_lse,
// merged by merge_softmax_parts (rlx/softmax_merge.h) into the softmax of
// the whole rows, at every split, with sinks carried by a part or added by
// the merge; parts with no kept key; bad parts.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include "rlx/softmax_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
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
using ::rlx::testing::kInf;
using ::rlx::testing::kTypes;
using ::rlx::testing::RandomScores;
using ::testing::HasSubstr;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// Splits rows of `s` (batch 1) at key `split` into two parts whose masks
// keep the whole row's positions (explicit positions, or query_offsets for
// shift-invariant rules), runs each with row_lse, merges, and compares with
// the unsplit result.
std::string SplitMismatch(ScoreType type, const Shape4& s, std::size_t split,
                          bool explicit_positions, std::size_t window,
                          const float* sinks, bool sinks_in_merge,
                          const float* slopes, std::mt19937_64& rng) {
  testing::Tensor t = RandomScores(rng, type, s);
  const std::size_t n = s.k_len;
  // The whole row: causal, optionally windowed, from query offset n - q_len.
  std::vector<std::int64_t> q_pos(s.q_len), k_pos(n);
  for (std::size_t q = 0; q < s.q_len; ++q) q_pos[q] = n - s.q_len + q;
  for (std::size_t k = 0; k < n; ++k) k_pos[k] = k;
  MaskSpec whole = MaskSpec::causal().with_window_keys(window);
  SoftmaxOptions options;
  options.sink_logits = sinks;
  options.alibi_slopes = slopes;
  std::vector<float> lse_whole(s.rows());
  options.row_lse = lse_whole.data();
  std::vector<std::uint8_t> whole_bytes, want_bytes, before_bytes;
  const ScoreView before = testing::SameViewIn(t, before_bytes);
  const ScoreView got = testing::SameViewIn(t, whole_bytes);
  const ScoreView want = testing::SameViewIn(t, want_bytes);
  masked_softmax(got, whole, options);
  std::vector<float> lse_want(s.rows());
  SoftmaxOptions ref_options = options;
  ref_options.row_lse = lse_want.data();
  reference::masked_softmax(want, want, whole, ref_options, RowRange::all(s));
  // The parts, in place in a copy of the scores.
  std::vector<std::uint8_t> parts_bytes;
  const ScoreView parts_view = testing::SameViewIn(t, parts_bytes);
  const std::size_t es = testing::ElemSize(type);
  std::vector<float> lse_a(s.rows()), lse_b(s.rows()), lse_merged(s.rows());
  std::vector<std::int64_t> offset_a{static_cast<std::int64_t>(n - s.q_len)},
      offset_b{static_cast<std::int64_t>(n - s.q_len) -
               static_cast<std::int64_t>(split)};
  SoftmaxPart parts[2];
  const std::size_t begins[] = {0, split}, ends[] = {split, n};
  for (int p = 0; p < 2; ++p) {
    ScoreView v = parts_view;
    v.data = static_cast<std::uint8_t*>(v.data) + begins[p] * es;
    v.shape.k_len = ends[p] - begins[p];
    MaskSpec m = MaskSpec::causal().with_window_keys(window);
    m = explicit_positions
            ? m.with_positions(q_pos.data(), k_pos.data() + begins[p])
            : m.with_query_offsets(p == 0 ? offset_a.data() : offset_b.data());
    SoftmaxOptions o = options;
    o.row_lse = p == 0 ? lse_a.data() : lse_b.data();
    // One part carries the sinks (the first: with a causal mask and no
    // window it has a kept key whenever the row has one), or the merge adds
    // them.
    o.sink_logits = (!sinks_in_merge && p == 0) ? sinks : nullptr;
    masked_softmax(v, m, o);
    parts[p] = {v, o.row_lse};
  }
  merge_softmax_parts(parts, lse_merged.data(),
                      sinks_in_merge ? sinks : nullptr);
  // The merged parts against the oracle (one more rounding than unsplit:
  // the bound's 2 + 2T has room for it), and the merged lse.
  std::string e =
      testing::SoftmaxMismatch(before, parts_view, want, whole, options,
                               lse_merged.data(), lse_want.data());
  if (!e.empty()) return "merged: " + e;
  return testing::SoftmaxMismatch(before, got, want, whole, options,
                                  lse_whole.data(), lse_want.data());
}

TEST_P(SoftmaxExtTest, SplitAndMergeEqualsTheWholeRowAtEverySplit) {
  std::mt19937_64 rng(99);
  const float sinks[] = {1.5f, -kInf};
  const float slopes[] = {0.125f, 0.5f};
  for (ScoreType type : kTypes) {
    for (std::size_t n : {2, 9, 20}) {
      const Shape4 s{1, 2, 3, n};
      for (std::size_t split = 1; split < n; ++split) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool explicit_positions = variant & 1;
          // A window can leave the first part without a kept key: then the
          // merge adds the sinks.
          const bool sinks_in_merge = variant & 2;
          const std::size_t window = variant == 3 ? n / 2 : 0;
          ASSERT_EQ(SplitMismatch(type, s, split, explicit_positions, window,
                                  sinks, sinks_in_merge,
                                  variant == 0 ? nullptr : slopes, rng),
                    "")
              << testing::TypeName(type) << " n " << n << " split " << split
              << " variant " << variant;
        }
      }
    }
  }
}

TEST_P(SoftmaxExtTest, SplitAndMergeEqualsTheWholeRowOnLongRows) {
  std::mt19937_64 rng(1234);
  const float sinks[] = {4.0f};
  const float slopes[] = {0.001f};
  const int iterations = testing::ScaledIterations(12);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 1000 + rng() % 9000;
    const std::size_t split = 1 + rng() % (n - 1);
    const ScoreType type = kTypes[it % 3];
    ASSERT_EQ(
        SplitMismatch(type, Shape4{1, 1, 1 + rng() % 2, n}, split, it % 2 == 0,
                      it % 4 == 1 ? n / 3 : 0, sinks, it % 3 == 2, slopes, rng),
        "")
        << testing::TypeName(type) << " n " << n << " split " << split;
  }
}

// A part with no kept key (lse -inf) is left as zeros and the others carry
// the row; a row with no kept key anywhere stays zeros with lse -inf.
TEST(SoftmaxMergeTest, HandlesPartsWithNoKeptKey) {
  std::vector<float> a{0.0f, 0.0f}, b{0.25f, 0.75f};
  const float lse_a[] = {-kInf}, lse_b[] = {std::log(2.0f)};
  const SoftmaxPart parts[] = {
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), lse_a},
      {ScoreView::f32(b.data(), Shape4{1, 1, 1, 2}), lse_b}};
  float merged = 0;
  merge_softmax_parts(parts, &merged);
  EXPECT_EQ(a[0], 0.0f);
  EXPECT_EQ(a[1], 0.0f);
  EXPECT_FLOAT_EQ(b[0], 0.25f);
  EXPECT_FLOAT_EQ(b[1], 0.75f);
  EXPECT_FLOAT_EQ(merged, std::log(2.0f));
  const float none[] = {-kInf};
  const SoftmaxPart empty[] = {
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), none},
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), none}};
  merge_softmax_parts(empty, &merged);
  EXPECT_EQ(merged, -kInf);
  EXPECT_EQ(a[0], 0.0f);
}

TEST(SoftmaxMergeTest, BadPartsAreNamedErrorsAndWriteNothing) {
  std::vector<float> a{0.5f, 0.5f}, b{0.5f, 0.5f, 0.5f, 0.5f};
  std::vector<std::uint16_t> c(2, 0);
  const float lse[] = {0.0f, 0.0f};
  const SoftmaxPart ok{ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), lse};
  const auto err = [&](std::initializer_list<SoftmaxPart> parts) {
    return ErrorOf([&] {
      merge_softmax_parts(
          std::span<const SoftmaxPart>(parts.begin(), parts.size()));
    });
  };
  EXPECT_THAT(ErrorOf([] { merge_softmax_parts({}); }),
              HasSubstr("merge_softmax_parts: no parts"));
  EXPECT_THAT(err({ok, {ScoreView::f32(b.data(), Shape4{1, 2, 1, 2}), lse}}),
              HasSubstr("part 1 shape [1, 2, 1, 2] differs from part 0's "
                        "[1, 1, 1, 2]"));
  EXPECT_THAT(err({ok,
                   {ScoreView::bf16s(reinterpret_cast<bf16*>(c.data()),
                                     Shape4{1, 1, 1, 2}),
                    lse}}),
              HasSubstr("part 1 type 1 differs from part 0's 0"));
  EXPECT_THAT(err({ok, {ok.probs, nullptr}}),
              HasSubstr("part 1 row_lse is null"));
  EXPECT_THAT(err({{ScoreView::f32(nullptr, Shape4{1, 1, 1, 2}), lse}}),
              HasSubstr("part 0 probs.data is null"));
  const float nan_sink[] = {std::nanf("")};
  EXPECT_THAT(ErrorOf([&] {
                const SoftmaxPart one[] = {ok};
                merge_softmax_parts(one, nullptr, nan_sink);
              }),
              HasSubstr("sink_logits[0] (head 0) is nan"));
  EXPECT_EQ(a[0], 0.5f);
  EXPECT_EQ(b[0], 0.5f);
}

}  // namespace
}  // namespace rlx
