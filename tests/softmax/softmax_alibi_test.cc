// SPDX-License-Identifier: MIT OR Apache-2.0
// In-kernel ALiBi (docs/SEMANTICS.md, "Softmax extensions"): the slopes
// against ggml's formula, the kernels against the oracle given the same
// terms as a materialised bias, rows that leave the plain batches, distances
// near f32's exact limit, and the Decode layout's token at distance 0.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
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
using ::rlx::testing::KernelMismatch;
using ::rlx::testing::kInf;
using ::rlx::testing::kTypes;
using ::rlx::testing::OracleMismatch;
using ::rlx::testing::RandomMask;
using ::rlx::testing::RandomScores;
using ::rlx::testing::ShapeName;
using ::testing::HasSubstr;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// ggml's slopes, transcribed from ggml_soft_max (ggml.c / ggml-cpu):
// n_head_log2 = 1 << floor(log2(n_head)), in f32 with powf.
std::vector<float> GgmlSlopes(int n_head, float max_bias) {
  const std::uint32_t n_head_log2 =
      1u << static_cast<std::uint32_t>(std::floor(std::log2(n_head)));
  const float m0 = powf(2.0f, -(max_bias) / n_head_log2);
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / n_head_log2);
  std::vector<float> out;
  for (int h = 0; h < n_head; ++h) {
    out.push_back(static_cast<std::uint32_t>(h) < n_head_log2
                      ? powf(m0, h + 1)
                      : powf(m1, 2 * (h - static_cast<int>(n_head_log2)) + 1));
  }
  return out;
}

// Plain ALiBi rows store their transformed scores t in pass 1: f32 rows
// into the output row, over their kept keys (in place: over the scores),
// 16-bit rows into the batch's scratch. A row that leaves its batch after
// pass 1 (a +inf or NaN key, every kept key -inf, or a maximum beyond the
// plain argument's limit) is finished by the general code: f32 rows from
// their t, 16-bit rows from their input. Causal rows of 29-40 keys, every
// one plain, those that leave sitting between rows that stay; in place and
// out of place (whose input must stay untouched).
TEST_P(SoftmaxExtTest, AlibiRowsHandedBackMatchTheOracle) {
  std::mt19937_64 rng(20261204);
  const Shape4 s{2, 3, 12, 40};
  const MaskSpec mask = MaskSpec::causal();
  const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
  for (ScoreType type : kTypes) {
    for (const bool zero_masked : {true, false}) {
      testing::Tensor t = RandomScores(rng, type, s);
      testing::Set(t.view, testing::Offset(t.view, 0, 1, 3, 2), kInf);
      testing::Set(t.view, testing::Offset(t.view, 1, 0, 7, 30),
                   std::numeric_limits<float>::quiet_NaN());
      for (std::size_t k = 0; k < s.k_len; ++k) {
        testing::Set(t.view, testing::Offset(t.view, 1, 2, 5, k), -kInf);
      }
      // 4e6 scale log2 e is beyond 2^20 (f16: +inf).
      testing::Set(t.view, testing::Offset(t.view, 0, 2, 10, 17), 4e6f);
      SoftmaxOptions options;
      options.zero_masked = zero_masked;
      options.scale = 0.5f;
      options.alibi_slopes = slopes.data();
      std::vector<float> lse(s.rows());
      options.row_lse = lse.data();
      ASSERT_EQ(OracleMismatch(t, mask, options), "")
          << testing::TypeName(type) << (zero_masked ? "" : " kept-only");
      ASSERT_EQ(OracleMismatch(t, mask, options, /*out_of_place=*/true), "")
          << testing::TypeName(type) << (zero_masked ? "" : " kept-only")
          << " out of place";
    }
  }
}

// ggml's slopes for 1..64 heads (powers of two and not) and several biases.
TEST(AlibiSlopesTest, EqualGgmlsFormula) {
  for (float max_bias : {8.0f, 0.0f, 1.0f, 5.5f, 16.0f}) {
    for (int heads = 1; heads <= 64; ++heads) {
      const std::vector<float> got = alibi_slopes(heads, max_bias);
      const std::vector<float> want = GgmlSlopes(heads, max_bias);
      ASSERT_EQ(got.size(), want.size());
      for (int h = 0; h < heads; ++h) {
        ASSERT_EQ(got[h], want[h])
            << "heads " << heads << " head " << h << " max_bias " << max_bias;
      }
    }
  }
  // BLOOM's published slopes for 8 heads: 2^-1 .. 2^-8.
  const std::vector<float> eight = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[h], std::ldexp(1.0f, -(h + 1)));
  // 12 heads: 8 from 2^-1 step, then 4 interleaved from 2^-0.5 step.
  const std::vector<float> twelve = alibi_slopes(12);
  EXPECT_FLOAT_EQ(twelve[8], std::pow(2.0f, -0.5f));
  EXPECT_FLOAT_EQ(twelve[9], std::pow(2.0f, -1.5f));
}

TEST(AlibiSlopesTest, BadArgumentsAreNamedErrors) {
  EXPECT_THAT(ErrorOf([] { alibi_slopes(0); }),
              HasSubstr("alibi_slopes: heads is 0"));
  for (float bad : {std::nanf(""), -1.0f, kInf, -kInf}) {
    EXPECT_THAT(ErrorOf([&] { alibi_slopes(4, bad); }),
                HasSubstr("alibi_slopes: max_bias"))
        << bad;
  }
}

// In-kernel ALiBi equals the oracle given -slope |p_q - p_k| as a
// materialised bias, with every rule and the Decode layout (whose new token
// is at distance 0).
// Random scores of `type` under `mask` with ALiBi from `options`, against
// the oracle given the same terms as a materialised bias,
// -slope_h |p_q - p_k| per (b, h, q, k).
std::string AlibiMismatch(std::mt19937_64& rng, ScoreType type, const Shape4& s,
                          const MaskSpec& mask, const SoftmaxOptions& options) {
  std::vector<float> bias(s.rows() * s.k_len);
  for (std::size_t r = 0; r < s.rows(); ++r) {
    const std::size_t b = r / (s.heads * s.q_len);
    const std::size_t h = r / s.q_len % s.heads, q = r % s.q_len;
    for (std::size_t k = 0; k < s.k_len; ++k) {
      bias[r * s.k_len + k] =
          static_cast<float>(reference::alibi_at(mask, s, options, b, h, q, k));
    }
  }
  const MaskSpec with_bias = mask.with_bias(bias.data(), s);
  SoftmaxOptions plain = options;
  plain.alibi_slopes = nullptr;
  return KernelMismatch(rng, type, s, mask, options, with_bias, plain);
}

TEST_P(SoftmaxExtTest, AlibiEqualsAMaterialisedBias) {
  std::mt19937_64 rng(4242);
  const int iterations = testing::ScaledIterations(400);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 4, 1 + rng() % 3,
                   1 + rng() % (it % 3 == 0 ? 200 : 30)};
    ExtMask em;
    do {
      em = ExtMask{};
      RandomMask(rng, s, em);
    } while (!em.rules_only);
    const std::vector<float> slopes =
        alibi_slopes(s.heads, static_cast<float>(rng() % 9));
    SoftmaxOptions options;
    options.scale = 0.25f;
    options.alibi_slopes = slopes.data();
    for (ScoreType type : kTypes) {
      ASSERT_EQ(AlibiMismatch(rng, type, s, em.mask, options), "")
          << testing::TypeName(type) << " " << em.name << " " << ShapeName(s)
          << " iteration " << it;
    }
  }
}

// Short ALiBi rows run in plain batches, their distances stepped per vector
// in f32, which is exact below 2^24; rows whose distances reach it take the
// general path. Query offsets on both sides of 2^24, a slope small enough
// that the bound stays tight, every type: against the oracle.
TEST_P(SoftmaxExtTest, AlibiRowsNearTheExactDistanceLimitMatchTheOracle) {
  std::mt19937_64 rng(1 << 24);
  for (int it = 0; it < 24; ++it) {
    const Shape4 s{2, 2, 1 + rng() % 3, 1 + rng() % 400};
    const std::int64_t limit = std::int64_t{1} << 24;
    const std::int64_t offsets[] = {
        limit - static_cast<std::int64_t>(rng() % 600),
        static_cast<std::int64_t>(rng() % 600)};
    const MaskSpec mask = MaskSpec::causal().with_query_offsets(offsets);
    const float slopes[] = {0x1p-20f, 0x1p-18f};
    SoftmaxOptions options;
    options.alibi_slopes = slopes;
    const ScoreType type = kTypes[it % 3];
    ASSERT_EQ(AlibiMismatch(rng, type, s, mask, options), "")
        << testing::TypeName(type) << " " << ShapeName(s) << " offset "
        << offsets[0] << " iteration " << it;
  }
}

// The Decode layout: the new token at slot upper is at distance 0, so it
// gets no ALiBi penalty; a key at slot k < past gets slope (past - k).
TEST_P(SoftmaxExtTest, AlibiDecodeTokenIsAtDistanceZero) {
  const std::size_t past = 5, upper = 40;
  std::vector<float> scores(upper + 1, 0.0f);
  const float slopes[] = {1.0f};
  SoftmaxOptions options;
  options.alibi_slopes = slopes;
  masked_softmax(ScoreView::f32(scores.data(), Shape4{1, 1, 1, upper + 1}),
                 MaskSpec::decode(past, upper), options);
  double denominator = 1.0;  // the token
  for (std::size_t k = 0; k < past; ++k) denominator += std::exp(-(5.0 - k));
  EXPECT_NEAR(scores[upper], 1.0 / denominator, 1e-6);
  for (std::size_t k = 0; k < past; ++k) {
    EXPECT_NEAR(scores[k], std::exp(-(5.0 - k)) / denominator, 1e-6) << k;
  }
  for (std::size_t k = past; k < upper; ++k) EXPECT_EQ(scores[k], 0.0f);
}

}  // namespace
}  // namespace rlx
