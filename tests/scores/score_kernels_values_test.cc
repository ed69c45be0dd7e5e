// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask and masked_softmax against the scalar oracle
// (tests/reference/reference.h), once per supported target, over the values
// a row can hold: NaN fills and biases, kept keys whose f32 sums would drop
// them, scores near the float limits and far from 0, a maximum on any kept
// key, softcap and scale, fully masked rows, NaN and infinity, rows in
// batches beside rows that leave them, and the caller's floating-point mode.
// Apply is bit-exact; softmax is within the bound stated in docs/KERNELS.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>  // _mm_getcsr
#endif

#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/scores/score_kernels_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::CheckApply;
using ::rlx::testing::CheckSoftmax;
using ::rlx::testing::Config;
using ::rlx::testing::DenseMask;
using ::rlx::testing::kInf;
using ::rlx::testing::MakeDense;
using ::rlx::testing::MakeTensor;
using ::rlx::testing::Offset;
using ::rlx::testing::RandomScore;
using ::rlx::testing::SoftmaxMismatch;
using ::rlx::testing::Tensor;
using ::rlx::testing::TypeName;

class ScoreKernelsTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(ScoreKernelsTest);

// A NaN fill or a NaN bias stays NaN, whatever its payload: f32 rows store
// the fill's bits, 16-bit rows its conversion as the oracle's codec does it
// (rounding the f32 bits of a NaN as a number would carry its payload into
// the exponent, a signalling 0x7F800001 becoming inf, or past the sign,
// 0x7FFFFFFF becoming -0 and 0xFFFFFFFF +0).
TEST_P(ScoreKernelsTest, NaNFillsAndBiasesStayNaN) {
  const std::uint32_t nan_bits[] = {0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u,
                                    0x7FFFFFFFu, 0xFF800001u, 0xFFFFFFFFu};
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (std::size_t k_len : {1u, 7u, 37u, 100u}) {
      for (const std::uint32_t bits : nan_bits) {
        float nan;
        std::memcpy(&nan, &bits, sizeof(nan));
        Config c;
        c.type = type;
        c.shape = {1, 2, 1, k_len};
        c.misalign = k_len % 3;
        c.scores = [](std::size_t, std::size_t h, std::size_t, std::size_t k) {
          return RandomScore(h * 101 + k);
        };
        c.name = "NaN bits " + std::to_string(bits);
        // Masked keys take the fill.
        c.mask = MaskSpec::decode(k_len / 2, k_len - 1);
        c.fill = nan;
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
        // A bias of NaN on every third key, -inf or a number elsewhere.
        std::vector<float> bias(k_len);
        for (std::size_t k = 0; k < k_len; ++k) {
          bias[k] = k % 3 == 0 ? nan : k % 3 == 1 ? -kInf : 0.25f * k;
        }
        c.mask = MaskSpec::bias(bias.data(), {1, 1, 1, k_len});
        c.fill = -kInf;
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
      }
    }
  }
}

// Kept f32 rows sum to 1 within 1e-6 at any length (docs/KERNELS.md) only
// because no f32 lane sum adds more than a few values before it is widened
// into f64. These rows make longer f32 sums fail: key 0's exp is 1 and
// every other kept key's is 0.9 * 2^-24, less than half an ulp of 1, so a
// lane that holds 1 drops each one added after it, and a lane sum of more
// than about 20 values takes the row past 1 + 1e-6. The kept keys follow the
// vector map's worst case (src/softmax/softmax_vector_map-inl.h) for N lanes:
// in each word of 64 vectors, three full vectors and three holding one kept
// key, at lane 0, none visited four at a time. Every mask source that reads
// them: keep bits and explicit positions (the map), keep bytes and a bias
// (dense rows), and the whole row kept (the plain passes), for each N a target
// may have.
TEST_P(ScoreKernelsTest, KeptRowsSumToOneWhereF32SumsWouldDropKeys) {
  constexpr std::size_t kLen = 8192;
  const float tiny = std::log(0.9f * std::ldexp(1.0f, -24));
  for (std::size_t lanes : {1u, 4u, 8u, 16u, 32u, 64u}) {
    std::vector<std::uint8_t> keep(kLen, 0);
    for (std::size_t v = 0; v < kLen / lanes; v += 64) {
      for (std::size_t j = 0; j < 6 && (v + j + 1) * lanes <= kLen; ++j) {
        for (std::size_t l = 0; l < (j < 3 ? lanes : 1); ++l) {
          keep[(v + j) * lanes + l] = 1;
        }
      }
    }
    std::vector<std::uint64_t> bits((kLen + 63) / 64, 0);
    std::vector<float> bias(kLen);
    std::vector<std::int64_t> k_pos(kLen);
    for (std::size_t k = 0; k < kLen; ++k) {
      bits[k / 64] |= std::uint64_t{keep[k]} << (k % 64);
      bias[k] = keep[k] != 0 ? 0.0f : -kInf;
      k_pos[k] = keep[k] != 0 ? static_cast<std::int64_t>(k) : -1;
    }
    const std::int64_t q_pos = kLen;
    const Shape4 row{1, 1, 1, kLen};
    const MaskSpec masks[] = {
        MaskSpec::keep_bits(bits.data(), row),
        MaskSpec::causal().with_positions(&q_pos, k_pos.data()),
        MaskSpec::keep(keep.data(), row), MaskSpec::bias(bias.data(), row),
        MaskSpec::none()};
    for (const MaskSpec& mask : masks) {
      for (std::size_t misalign : {0u, 1u}) {
        Config c;
        c.shape = {1, 2, 1, kLen};
        c.mask = mask;
        c.misalign = misalign;
        c.scores = [tiny](std::size_t, std::size_t, std::size_t,
                          std::size_t k) { return k == 0 ? 0.0f : tiny; };
        c.name = "f32 sums, " + std::to_string(lanes) + " lanes";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
      }
    }
  }
}

TEST_P(ScoreKernelsTest, ScoresNearTheFloatLimitsDoNotOverflow) {
  for (float big : {3.0e38f, 1.0e30f, -3.0e38f}) {
    Config c;
    c.shape = {1, 1, 2, 37};
    c.mask = MaskSpec::causal();
    c.scores = [big](std::size_t, std::size_t, std::size_t q, std::size_t k) {
      return (k % 3 == 0) ? big : ((k + q) % 2 ? -big : big * 0.5f);
    };
    c.name = "limits";
    ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
  }
}

// A row's maximum on one kept key far above the rest (by 100: a pass 1 that
// missed it overflows the exps): a Decode row's token, which the plain rows
// read into the partial last vector of the keys before it, the first and
// the last of those keys, and the last key of a causal row. Every type, at
// every count of keys in that partial vector, short (plain) and long rows,
// both fill modes.
TEST_P(ScoreKernelsTest, AMaximumOnAnyKeptKeyIsFound) {
  struct Case {
    std::size_t q_len, past, upper;
    std::size_t hot[3];  // key index of the maximum, per query
  };
  std::vector<Case> cases;
  for (std::size_t past = 1; past <= 40; ++past) {
    const std::size_t upper = past + 1 + past % 5;
    cases.push_back({1, past, upper, {upper}});
    cases.push_back({1, past, upper, {0}});
    cases.push_back({1, past, upper, {past - 1}});
  }
  for (std::size_t hot :
       {std::size_t{0}, std::size_t{1499}, std::size_t{1503}}) {
    cases.push_back({1, 1500, 1503, {hot}});
  }
  // Every key of a row short enough for the plain batches and long enough
  // for their four-vector loops (two of them on AVX-512), which may take
  // the keys in an order of their own.
  for (std::size_t hot = 0; hot < 130; ++hot) {
    cases.push_back({1, 130, 133, {hot}});
  }
  cases.push_back({3, 0, 0, {0, 1, 2}});  // causal, 45 keys: the diagonal
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (const Case& k : cases) {
      for (bool zero_masked : {true, false}) {
        Config c;
        c.type = type;
        const bool decode = k.q_len == 1;
        const std::size_t k_len = decode ? k.upper + 1 : 45;
        c.shape = {1, 3, k.q_len, k_len};
        c.mask =
            decode ? MaskSpec::decode(k.past, k.upper) : MaskSpec::causal();
        c.options.zero_masked = zero_masked;
        c.misalign = k.past % 3;
        const std::size_t q_shift = k_len - k.q_len;
        c.scores = [k, decode, q_shift](std::size_t, std::size_t h,
                                        std::size_t q, std::size_t key) {
          const std::size_t hot = decode ? k.hot[0] : q_shift + k.hot[q];
          return key == hot ? 100.0f : RandomScore((h * 7 + q) * 5003 + key);
        };
        c.name = "hot key " + std::to_string(k.hot[0]) + " past " +
                 std::to_string(k.past) + " zero_masked " +
                 std::to_string(zero_masked);
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, k.past % 2 == 1));
      }
    }
  }
}

TEST_P(ScoreKernelsTest, SoftcapAndScaleApplyBeforeMasking) {
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16}) {
    for (const SoftmaxOptions& o :
         {SoftmaxOptions{0.125f, 0.0f}, SoftmaxOptions{1.0f, 30.0f},
          SoftmaxOptions{0.5f, 5.0f}, SoftmaxOptions{-2.0f, 0.0f}}) {
      std::mt19937 rng(7);
      DenseMask bias = MakeDense(MaskKind::kBias, {1, 1, 3, 29}, rng, 0.7);
      for (const MaskSpec& mask :
           {MaskSpec::causal(), MaskSpec::decode(10, 28, 4), bias.spec}) {
        Config c;
        c.type = type;
        c.shape = {1, 2, mask.kind == MaskKind::kDecode ? 1u : 3u, 29};
        c.mask = mask;
        c.options = o;
        c.scores = [](std::size_t, std::size_t h, std::size_t q,
                      std::size_t k) {
          return 12.0f * RandomScore(h * 100 + q * 29 + k);
        };
        c.name = "softcap/scale";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
      }
    }
  }
}

// The Rust executor masks with -1e9 then softcaps, turning the masked score
// into -c and leaking weight onto it; here masked keys get exactly 0.
TEST_P(ScoreKernelsTest, SoftcapNeverLeaksWeightToMaskedKeys) {
  std::vector<float> s(8, 1.0f);
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 8}), MaskSpec::decode(2, 7),
                 {1.0f, 1.0f});
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[6], 0.0f);
  EXPECT_NEAR(s[0] + s[1] + s[7], 1.0f, 1e-6f);
}

TEST_P(ScoreKernelsTest, FullyMaskedRowsAreZeroNeverNaN) {
  std::vector<float> s(3 * 20, 5.0f);
  const std::vector<std::uint8_t> none(20, 0);
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 3, 20}),
                 MaskSpec::keep(none.data(), {1, 1, 1, 20}), {1.0f, 50.0f});
  for (float p : s) ASSERT_EQ(p, 0.0f);
  std::vector<float> bias(20, -kInf), t(20, 1.0f);
  masked_softmax(ScoreView::f32(t.data(), {1, 1, 1, 20}),
                 MaskSpec::bias(bias.data(), {1, 1, 1, 20}), {});
  for (float p : t) ASSERT_EQ(p, 0.0f);
  // A query before key 0 under Causal.
  const std::int64_t offset = -1;
  std::vector<float> u(4, 2.0f);
  masked_softmax(ScoreView::f32(u.data(), {1, 1, 1, 4}),
                 MaskSpec::causal().with_query_offsets(&offset), {});
  for (float p : u) ASSERT_EQ(p, 0.0f);
}

// Scores far from 0: the one-FMA exp argument rounds -max log2 e, a shift
// common to the row that must cancel (up to |max log2 e| = 2^20, 7.2e5 here),
// and beyond it the two-step argument takes over (8e5, 3e6). Rows with a
// materialised bias take the one-FMA form over their stored transformed
// scores under the same limit: a causal -inf bias with finite terms, the
// offset in the scores or in the bias, and a softcap (applied before the
// bias) on the biased rows.
TEST_P(ScoreKernelsTest, LargeScoresKeepTheirPrecision) {
  const Shape4 shape{1, 2, 3, 70};
  std::vector<float> causal_bias(shape.rows() * shape.k_len);
  for (std::size_t r = 0; r < shape.rows(); ++r) {
    for (std::size_t k = 0; k < shape.k_len; ++k) {
      // Row r is query q = r % 3 at position 67 + q of 70 keys.
      causal_bias[r * shape.k_len + k] =
          k > 67 + r % 3 ? -kInf : -0.01f * static_cast<float>(k % 7);
    }
  }
  for (float offset : {1.0e3f, -5.0e4f, 7.2e5f, -7.2e5f, 8.0e5f, 3.0e6f}) {
    for (float scale : {1.0f, 0.125f}) {
      for (int biased = 0; biased < 4; ++biased) {
        // 0: causal rule; 1: bias, offset scores; 2: bias, offset bias;
        // 3: as 1 with a softcap of 30.
        std::vector<float> bias = causal_bias;
        if (biased == 2) {
          for (float& b : bias) b += offset;  // -inf stays -inf
        }
        Config c;
        c.shape = shape;
        c.mask = biased == 0 ? MaskSpec::causal()
                             : MaskSpec::bias(bias.data(), shape);
        c.options = SoftmaxOptions{scale, biased == 3 ? 30.0f : 0.0f};
        const float score_offset = biased == 2 ? 0.0f : offset;
        c.scores = [score_offset](std::size_t, std::size_t h, std::size_t q,
                                  std::size_t k) {
          return score_offset + RandomScore(h * 1000 + q * 70 + k);
        };
        c.name = "large offset";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false))
            << offset << " biased " << biased;
      }
    }
  }
}

#if defined(__x86_64__) || defined(_M_X64)
// AVX-512 kernels set MXCSR.FTZ while they run; the caller's MXCSR (here
// with FTZ clear, then with DAZ set) comes back unchanged.
TEST_P(ScoreKernelsTest, SoftmaxRestoresTheCallersFloatingPointMode) {
  const unsigned saved = _mm_getcsr();
  for (unsigned csr : {saved & ~0x8040u, (saved & ~0x8000u) | 0x0040u}) {
    _mm_setcsr(csr);
    std::vector<float> s(100);
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = -1.5f * k;  // underflows
    masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 100}), MaskSpec::none(),
                   {});
    const unsigned after = _mm_getcsr();
    _mm_setcsr(saved);
    EXPECT_EQ(after & ~0x3Fu, csr & ~0x3Fu);  // ignoring exception flags
    EXPECT_EQ(s[99], 0.0f);
    EXPECT_GT(s[0], 0.7f);
  }
}
#endif

TEST_P(ScoreKernelsTest, NaNOrInfinityInAKeptScorePropagates) {
  // Whatever the NaN's sign and payload (the exp builds 2^n from bits).
  for (std::uint32_t bits : {0x7FC00000u, 0xFFC001FFu, 0x7F800001u}) {
    float nan;
    std::memcpy(&nan, &bits, sizeof(nan));
    std::vector<float> r(40, 1.5f);
    r[33] = nan;
    masked_softmax(ScoreView::f32(r.data(), {1, 1, 1, 40}), MaskSpec::none(),
                   {});
    for (float p : r) EXPECT_TRUE(std::isnan(p)) << std::hex << bits;
  }

  std::vector<float> s = {1.0f, NAN, 2.0f, 3.0f, 0.0f};
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 5}), MaskSpec::none(), {});
  EXPECT_TRUE(std::isnan(s[0]) && std::isnan(s[2]) && std::isnan(s[4]));
  // The same NaN under a masked key is ignored.
  std::vector<float> t = {1.0f, NAN, 2.0f};
  masked_softmax(ScoreView::f32(t.data(), {1, 1, 1, 3}), MaskSpec::decode(1, 2),
                 {});
  EXPECT_EQ(t[1], 0.0f);
  EXPECT_NEAR(t[0] + t[2], 1.0f, 1e-6f);
  // A NaN whose row is otherwise -inf: Max may drop the NaN, the row is
  // still NaN (and masked keys of a dense mask still 0).
  for (std::size_t n : {3u, 20u}) {
    std::vector<float> u(n, -kInf);
    u[n - 2] = NAN;
    std::vector<std::uint8_t> keep(n, 1);
    keep[0] = 0;
    masked_softmax(ScoreView::f32(u.data(), {1, 1, 1, n}),
                   MaskSpec::keep(keep.data(), {1, 1, 1, n}), {});
    EXPECT_EQ(u[0], 0.0f);
    for (std::size_t k = 1; k < n; ++k) EXPECT_TRUE(std::isnan(u[k])) << k;
  }
  // A -inf bias masks even a +inf score (no inf - inf NaN).
  std::vector<float> v = {kInf, 1.0f};
  const float bias[] = {-kInf, 0.0f};
  masked_softmax(ScoreView::f32(v.data(), {1, 1, 1, 2}),
                 MaskSpec::bias(bias, {1, 1, 1, 2}), {});
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], 1.0f);
}

// Rows run in batches (src/softmax/plain_passes-inl.h: decode heads,
// causal rows) give each row what it gets alone, whatever its neighbours: rows
// that leave the batch for the general code (every kept score -inf, a NaN,
// +inf, scores beyond the plain argument's 7e5) beside ordinary ones, rows
// over and under the batch's row and key limits, with sinks and row_lse,
// in both fill modes, every row type; and the oracle holds. Long f32 rows
// (up to 2730 keys) batch three at a time (2101 keys, and 2730), and one
// key more is general; 16-bit rows over 1024 keys are general.
TEST_P(ScoreKernelsTest, BatchedRowsEqualEachRowAlone) {
  struct Case {
    Shape4 shape;
    MaskSpec mask;
  };
  const Case cases[] = {{{1, 19, 1, 301}, MaskSpec::decode(200, 300)},
                        {{2, 11, 1, 1030}, MaskSpec::decode(1000, 1029, 600)},
                        {{1, 2, 37, 70}, MaskSpec::causal()},
                        {{1, 3, 9, 1100}, MaskSpec::none()},
                        {{1, 7, 1, 2800}, MaskSpec::decode(2100, 2799)},
                        {{1, 7, 1, 2730}, MaskSpec::none()},
                        {{1, 4, 1, 2731}, MaskSpec::none()}};
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (const Case& c : cases) {
      for (bool zero_masked : {true, false}) {
        const Shape4& sh = c.shape;
        const std::size_t rows = sh.rows();
        Tensor t = MakeTensor(type, sh, /*gap=*/3, /*misalign=*/1);
        for (std::size_t b = 0; b < sh.batch; ++b)
          for (std::size_t h = 0; h < sh.heads; ++h)
            for (std::size_t q = 0; q < sh.q_len; ++q)
              for (std::size_t k = 0; k < sh.k_len; ++k) {
                const std::size_t r = (b * sh.heads + h) * sh.q_len + q;
                float x = RandomScore(r * 100003 + k);
                if (r % 7 == 2) x = -kInf;
                if (r % 7 == 4 && k == sh.k_len / 2) x = NAN;
                if (r % 7 == 5 && k == 0) x = kInf;
                if (r % 7 == 6) x += 1e6f;
                testing::Set(t.view, Offset(t.view, b, h, q, k), x);
              }
        std::vector<float> sinks(sh.heads);
        for (std::size_t h = 0; h < sinks.size(); ++h) {
          sinks[h] = h % 2 ? -kInf : 0.25f * static_cast<float>(h);
        }
        SoftmaxOptions options;
        options.scale = 0.75f;
        options.zero_masked = zero_masked;
        options.sink_logits = sinks.data();
        // In the same buffer: where the general code aligns its vectors
        // depends on the row's address.
        std::vector<std::uint8_t> input_bytes;
        const ScoreView input = testing::SameViewIn(t, input_bytes);
        std::vector<float> lse_all(rows, 7.0f), lse_alone(rows, 7.0f);
        options.row_lse = lse_all.data();
        masked_softmax(t.view, c.mask, options);
        const std::vector<std::uint8_t> all = t.bytes;
        std::copy(input_bytes.begin(), input_bytes.end(), t.bytes.begin());
        options.row_lse = lse_alone.data();
        for (std::size_t r = 0; r < rows; ++r) {
          masked_softmax(t.view, c.mask, options, RowRange{r, r + 1});
        }
        const std::string what = std::string(testing::TypeName(type)) +
                                 " k_len " + std::to_string(sh.k_len) +
                                 " zero_masked " + std::to_string(zero_masked);
        for (std::size_t e = 0; e < all.size(); ++e) {
          ASSERT_EQ(all[e], t.bytes[e]) << what << ", byte " << e;
        }
        for (std::size_t r = 0; r < rows; ++r) {
          ASSERT_EQ(std::memcmp(&lse_all[r], &lse_alone[r], 4), 0)
              << what << ", row_lse " << r;
        }
        std::vector<std::uint8_t> want_bytes;
        const ScoreView want = testing::SameViewIn(t, want_bytes);
        std::copy(input_bytes.begin(), input_bytes.end(), want_bytes.begin());
        SoftmaxOptions ref = options;
        ref.row_lse = nullptr;
        reference::masked_softmax(want, want, c.mask, ref, RowRange::all(sh));
        ASSERT_EQ("",
                  testing::SoftmaxMismatch(input, t.view, want, c.mask, ref))
            << what;
      }
    }
  }
}

TEST_P(ScoreKernelsTest, ApplyKeepsKeptBitsIncludingNaNPayloads) {
  std::vector<std::uint16_t> s = {0x7E01, 0xFC01, 0x0001, 0x8000, 0x3C00};
  const std::uint8_t keep[] = {1, 1, 1, 1, 0};
  ScoreView v{s.data(), ScoreType::kF16, {1, 1, 1, 5}, {5, 5, 5}};
  apply_mask(v, MaskSpec::keep(keep, {1, 1, 1, 5}));
  EXPECT_EQ(s[0], 0x7E01);
  EXPECT_EQ(s[1], 0xFC01);
  EXPECT_EQ(s[2], 0x0001);
  EXPECT_EQ(s[3], 0x8000);
  EXPECT_EQ(s[4], 0xFC00) << "-inf in f16";
}

}  // namespace
}  // namespace rlx
