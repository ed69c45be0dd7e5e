// SPDX-License-Identifier: MIT OR Apache-2.0
// Learned sink logits and the rows' log-sum-exp (docs/SEMANTICS.md, "Softmax
// extensions"), alone and with ALiBi, on random masks, shapes and views
// against the oracle and against gpt-oss's formulation (the sink as an extra
// column); fully masked rows; bad sinks and slopes.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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
using ::rlx::testing::RandomMask;
using ::rlx::testing::RandomScores;
using ::rlx::testing::RandomSinks;
using ::rlx::testing::ShapeName;
using ::testing::HasSubstr;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// Sinks, ALiBi and row_lse, alone and together, on random masks, shapes and
// views of every row type, against the oracle.
TEST_P(SoftmaxExtTest, SinksAlibiAndLseMatchTheOracle) {
  std::mt19937_64 rng(20261201);
  const int iterations = testing::ScaledIterations(600);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 4,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
    std::vector<float> lse(s.rows(), 123.0f), lse_want(s.rows(), 456.0f);
    SoftmaxOptions options;
    options.scale = 0.5f;
    options.softcap = rng() % 3 == 0 ? 5.0f : 0.0f;
    const int which = static_cast<int>(rng() % 4);
    if (which != 1) options.sink_logits = sinks.data();
    if (which != 0) options.alibi_slopes = slopes.data();
    options.row_lse = lse.data();
    for (ScoreType type : kTypes) {
      testing::Tensor t = RandomScores(rng, type, s);
      std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      const ScoreView got = testing::SameViewIn(t, got_bytes);
      const ScoreView want = testing::SameViewIn(t, want_bytes);
      masked_softmax(got, em.mask, options);
      SoftmaxOptions ref_options = options;
      ref_options.row_lse = lse_want.data();
      reference::masked_softmax(want, want, em.mask, ref_options,
                                RowRange::all(s));
      const std::string where = std::string(testing::TypeName(type)) + " " +
                                em.name + " " + ShapeName(s) + " iteration " +
                                std::to_string(it);
      ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, em.mask, options,
                                         lse.data(), lse_want.data()),
                "")
          << where;
      testing::Tensor g{got_bytes, got};
      g.view.data =
          g.bytes.data() +
          (static_cast<const std::uint8_t*>(got.data) - got_bytes.data());
      ASSERT_EQ(testing::UntouchedOutside(g, g.view), "") << where;
    }
  }
}

// gpt-oss writes the sink as an extra column of the scores: softmax over
// [scores, sink], then drop the column. The kernel's sinks agree with that.
TEST_P(SoftmaxExtTest, SinksEqualTheExtraColumnFormulation) {
  std::mt19937_64 rng(77);
  for (std::size_t n : {1, 2, 7, 16, 33, 100, 257, 1000}) {
    for (float sink : {-kInf, -50.0f, -3.0f, 0.0f, 2.5f, 12.0f, 80.0f}) {
      const Shape4 s{1, 1, 1, n};
      std::vector<float> scores(n), extra(n + 1);
      for (std::size_t k = 0; k < n; ++k) {
        scores[k] = static_cast<float>(rng() % 2001) / 100.0f - 10.0f;
        extra[k] = scores[k];
      }
      extra[n] = sink;
      const float sinks[] = {sink};
      SoftmaxOptions options;
      options.sink_logits = sinks;
      masked_softmax(ScoreView::f32(scores.data(), s), MaskSpec::none(),
                     options);
      masked_softmax(ScoreView::f32(extra.data(), Shape4{1, 1, 1, n + 1}),
                     MaskSpec::none());
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) {
        ASSERT_NEAR(scores[k], extra[k], 1e-6 * extra[k] + 1e-37)
            << "n " << n << " sink " << sink << " key " << k;
        sum += scores[k];
      }
      EXPECT_LE(sum, 1.0 + 1e-6);
      if (sink != -kInf) {
        EXPECT_NEAR(sum, 1.0 - extra[n], 1e-6);
      }
    }
  }
}

// A row with no kept key stays all zeros with a sink, and its lse is -inf;
// so is a row whose kept scores are all -inf.
TEST_P(SoftmaxExtTest, FullyMaskedRowsStayZeroWithSinks) {
  for (ScoreType type : kTypes) {
    const Shape4 s{1, 2, 3, 37};
    testing::Tensor t = testing::MakeTensor(type, s, 1, 1);
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t q = 0; q < 3; ++q)
        for (std::size_t k = 0; k < 37; ++k) {
          testing::Set(t.view, testing::Offset(t.view, 0, h, q, k),
                       q == 2 ? -kInf : 1.0f);
        }
    std::vector<std::uint8_t> keep(37, 0);
    keep[5] = 1;  // kept by row 1 only (below)
    std::vector<float> bias(3 * 37, -kInf);
    for (std::size_t k = 0; k < 37; ++k) bias[37 + k] = 0.0f;  // row 1 keeps
    const float sinks[] = {3.0f, -1.0f};
    const float slopes[] = {0.5f, 0.25f};
    std::vector<float> lse(6, 0.0f);
    SoftmaxOptions options;
    options.sink_logits = sinks;
    options.alibi_slopes = slopes;
    options.row_lse = lse.data();
    masked_softmax(t.view, MaskSpec::bias(bias.data(), Shape4{1, 1, 3, 37}),
                   options);
    for (std::size_t h = 0; h < 2; ++h) {
      for (std::size_t q : {0, 2}) {
        for (std::size_t k = 0; k < 37; ++k) {
          const double p =
              testing::Get(t.view, testing::Offset(t.view, 0, h, q, k));
          ASSERT_TRUE(p == 0.0 && !std::signbit(p))
              << testing::TypeName(type) << " h " << h << " q " << q;
        }
        EXPECT_EQ(lse[h * 3 + q], -kInf);
      }
      EXPECT_TRUE(std::isfinite(lse[h * 3 + 1]));
    }
  }
}

// NaN (or +inf) sinks and non-finite slopes: a named error naming the head
// and value, and nothing written.
TEST_P(SoftmaxExtTest, BadSinksAndSlopesAreNamedErrorsAndWriteNothing) {
  std::vector<float> scores(3 * 5, 1.0f);
  const std::vector<float> copy = scores;
  std::vector<float> lse(3, 7.0f);
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 3, 1, 5});
  const float nan = std::nanf("");
  const float bad_sinks[] = {0.0f, nan, 1.0f};
  const float inf_sinks[] = {0.0f, 0.0f, kInf};
  const float bad_slopes[] = {0.5f, 0.25f, nan};
  const float inf_slopes[] = {kInf, 0.25f, 0.5f};
  SoftmaxOptions o;
  o.row_lse = lse.data();
  o.sink_logits = bad_sinks;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::causal(), o); }),
              HasSubstr("masked_softmax: sink_logits[1] (head 1) is nan"));
  o.sink_logits = inf_sinks;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::causal(), o); }),
              HasSubstr("sink_logits[2] (head 2) is inf"));
  o.sink_logits = nullptr;
  o.alibi_slopes = bad_slopes;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::none(), o); }),
              HasSubstr("masked_softmax: alibi_slopes[2] (head 2) is nan"));
  o.alibi_slopes = inf_slopes;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::none(), o); }),
              HasSubstr("alibi_slopes[0] (head 0) is inf"));
  EXPECT_EQ(scores, copy);
  EXPECT_EQ(lse, std::vector<float>(3, 7.0f));
  // -inf sinks are no sink: accepted.
  const float no_sinks[] = {-kInf, -kInf, -kInf};
  o.alibi_slopes = nullptr;
  o.sink_logits = no_sinks;
  masked_softmax(v, MaskSpec::none(), o);
  EXPECT_NEAR(scores[0], 0.2f, 1e-6);
  EXPECT_NEAR(lse[0], 1.0f + std::log(5.0f), 1e-6);
}

}  // namespace
}  // namespace rlx
