// SPDX-License-Identifier: MIT OR Apache-2.0
// The half-precision codec (src/util/half_codec.h) over every one of the 65,536
// bf16 and f16 bit patterns: decoding against the formula of each format,
// decode then encode giving the pattern back, and encoding of the values
// between each pair of neighbours (the midpoint, and the f32 or f64 values
// just either side of it) rounding to the nearer one, ties to even. Then,
// once per target, the kernels' own conversion (src/util/row_convert-inl.h) is
// held to the codec bit for bit: apply_mask with a bias computes each score
// plus its bias in f32 and stores it rounded to the row type.
#include "src/util/half_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "tests/common/per_target.h"

namespace rlx {
namespace {

bool IsNaN16(std::uint16_t h, bool bf16) {
  return bf16 ? (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0
              : (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
}

// The value of a 16-bit pattern by the format's definition:
// (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m when e == 0.
double Formula(std::uint16_t h, bool bf16) {
  const int mant_bits = bf16 ? 7 : 10, exp_max = bf16 ? 0xFF : 0x1F;
  const int bias = bf16 ? 127 : 15;
  const int e = (h >> mant_bits) & exp_max, m = h & ((1 << mant_bits) - 1);
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == exp_max) {
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  }
  if (e == 0) return sign * std::ldexp(m, 1 - bias - mant_bits);
  return sign * std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
}

float Decode(std::uint16_t h, bool bf16) {
  return bf16 ? rlx_f32_from_bf16(h) : rlx_f32_from_f16(h);
}

std::uint16_t Encode(float f, bool bf16) {
  return bf16 ? rlx_bf16_from_f32(f) : rlx_f16_from_f32(f);
}

class HalfCodecTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(Formats, HalfCodecTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "bf16" : "f16";
                         });

TEST_P(HalfCodecTest, EveryPatternDecodesExactlyAndEncodesBack) {
  const bool bf16 = GetParam();
  int nans = 0;
  for (std::uint32_t i = 0; i <= 0xFFFF; ++i) {
    const std::uint16_t h = static_cast<std::uint16_t>(i);
    const float f = Decode(h, bf16);
    const double want = Formula(h, bf16);
    if (IsNaN16(h, bf16)) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      const std::uint16_t back = Encode(f, bf16);
      ASSERT_TRUE(IsNaN16(back, bf16)) << std::hex << h << " -> " << back;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN keeps its sign";
      ASSERT_EQ(back, h | (bf16 ? 0x40 : 0x200)) << "a quiet NaN, payload kept";
      if (!bf16) {
        ASSERT_EQ(rlx_f16_from_f64(f), back)
            << "f64 path, NaN " << std::hex << h;
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(Encode(f, bf16), h) << std::hex << h << " = " << f;
    if (!bf16) {
      ASSERT_EQ(rlx_f16_from_f64(f), h) << std::hex << h;
    }
  }
  EXPECT_EQ(nans, bf16 ? 2 * 127 : 2 * 1023);
}

// For each pair of neighbours lo < hi among the non-negative finite values
// (and infinity above the largest): the midpoint rounds to the one with an
// even pattern, anything below it to lo, anything above it to hi; the same
// negated with the sign bit set.
TEST_P(HalfCodecTest, ValuesBetweenNeighboursRoundToNearestEven) {
  const bool bf16 = GetParam();
  const std::uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  for (std::uint16_t lo = 0; lo < inf; ++lo) {
    const std::uint16_t hi = lo + 1;
    const double a = Formula(lo, bf16);
    // Above the largest finite value, the next step would be at
    // 2^(emax + 1): its midpoint is where rounding gives infinity.
    const double b =
        hi == inf ? 2 * a - Formula(lo - 1, bf16) : Formula(hi, bf16);
    const double mid = (a + b) / 2;
    const float mid32 = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(mid32), mid) << "midpoints are f32 values";
    const std::uint16_t even = (lo & 1) == 0 ? lo : hi;
    const float below = std::nextafter(mid32, 0.0f);
    const float above =
        std::nextafter(mid32, std::numeric_limits<float>::infinity());
    for (const std::uint16_t sign : {0, 0x8000}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(Encode(s * mid32, bf16), sign | even) << std::hex << lo;
      ASSERT_EQ(Encode(s * below, bf16), sign | lo) << std::hex << lo;
      ASSERT_EQ(Encode(s * above, bf16), sign | hi) << std::hex << lo;
      if (!bf16) {
        // The single f64 rounding: the midpoint ties, the f64 values next to
        // it do not, although as f32 they would round back to the midpoint.
        ASSERT_EQ(rlx_f16_from_f64(s * mid), sign | even) << std::hex << lo;
        ASSERT_EQ(rlx_f16_from_f64(s * std::nextafter(mid, 0.0)), sign | lo)
            << std::hex << lo;
        ASSERT_EQ(rlx_f16_from_f64(s * std::nextafter(mid, 1e300)), sign | hi)
            << std::hex << lo;
      }
    }
  }
}

TEST_P(HalfCodecTest, SpecialValues) {
  const bool bf16 = GetParam();
  const std::uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  const float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Encode(0.0f, bf16), 0);
  EXPECT_EQ(Encode(-0.0f, bf16), 0x8000);
  EXPECT_EQ(Encode(kInf, bf16), inf);
  EXPECT_EQ(Encode(-kInf, bf16), inf | 0x8000);
  EXPECT_EQ(Encode(std::numeric_limits<float>::max(), bf16), inf);
  EXPECT_EQ(Encode(std::numeric_limits<float>::denorm_min(), bf16), 0)
      << "below half the smallest step";
  // NaNs whose payload sits only in the dropped bits, or fills them (which
  // a plain add-and-shift would carry into infinity or the sign).
  for (const std::uint32_t bits :
       {0x7F800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0xFF800001u, 0xFFFFFFFFu}) {
    float nan;
    std::memcpy(&nan, &bits, sizeof(nan));
    const std::uint16_t h = Encode(nan, bf16);
    EXPECT_TRUE(IsNaN16(h, bf16)) << std::hex << bits << " -> " << h;
    EXPECT_EQ(h & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;
  }
  if (!bf16) {
    EXPECT_EQ(rlx_f16_from_f32(65504.0f), 0x7BFF);
    EXPECT_EQ(rlx_f16_from_f32(65519.99f), 0x7BFF);
    EXPECT_EQ(rlx_f16_from_f32(65520.0f), 0x7C00);
    EXPECT_EQ(rlx_f16_from_f64(65519.999999), 0x7BFF);
    EXPECT_EQ(rlx_f16_from_f64(1e300), 0x7C00);
    EXPECT_EQ(rlx_f16_from_f64(-1e-300), 0x8000);
    EXPECT_EQ(rlx_f16_from_f32(0x1p-24f), 0x0001) << "smallest subnormal";
    EXPECT_EQ(rlx_f16_from_f32(0x1p-25f), 0x0000) << "tie to even: zero";
    EXPECT_EQ(rlx_f16_from_f32(0x1.8p-24f), 0x0002) << "tie to even: two";
    EXPECT_EQ(rlx_f16_from_f64(0x1.0000000000001p-25), 0x0001);
  } else {
    EXPECT_EQ(rlx_bf16_from_f32(1.00390625f), 0x3F80) << "tie to even: 1";
    EXPECT_EQ(rlx_bf16_from_f32(1.01171875f), 0x3F82) << "tie to even: up";
  }
}

// The kernels' f32 -> 16-bit rounding: every 16-bit score plus a bias that
// puts the f32 sum between two neighbours (random fractions of a step, and
// exact ties), stored by apply_mask, equals the codec's rounding of that
// f32 sum. NaN may differ in payload only.
class KernelRoundingTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(KernelRoundingTest);

TEST_P(KernelRoundingTest, StoresRoundLikeTheCodec) {
  constexpr std::size_t kAll = 0x10000;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> fraction(-1.0f, 1.0f);
  for (const bool bf16 : {true, false}) {
    for (int pass = 0; pass < 3; ++pass) {
      std::vector<std::uint16_t> scores(kAll);
      std::vector<float> bias(kAll);
      std::vector<std::uint16_t> want(kAll);
      for (std::size_t i = 0; i < kAll; ++i) {
        const std::uint16_t h = static_cast<std::uint16_t>(i);
        scores[i] = h;
        const float x = Decode(h, bf16);
        // One step of the format at x (for NaN and infinity: any value).
        const std::uint16_t mag = h & 0x7FFF;
        const float step =
            std::isfinite(x) && mag != (bf16 ? 0x7F7F : 0x7BFF)
                ? Decode(static_cast<std::uint16_t>(mag + 1), bf16) -
                      Decode(mag, bf16)
                : 1.0f;
        // Pass 0: ties (half a step up); 1, 2: random fractions of a step.
        bias[i] = pass == 0 ? step / 2 : fraction(rng) * step;
        want[i] = Encode(x + bias[i], bf16);
      }
      const Shape4 shape{1, 1, 1, kAll};
      const ScoreView view{scores.data(),
                           bf16 ? ScoreType::kBF16 : ScoreType::kF16, shape,
                           Strides3::contiguous(shape)};
      apply_mask(view, MaskSpec::bias(bias.data(), shape));
      int mismatches = 0;
      for (std::size_t i = 0; i < kAll && mismatches < 5; ++i) {
        const bool ok = IsNaN16(want[i], bf16) ? IsNaN16(scores[i], bf16)
                                               : scores[i] == want[i];
        if (!ok) {
          ++mismatches;
          ADD_FAILURE() << (bf16 ? "bf16" : "f16") << " pattern " << std::hex
                        << i << " + bias " << std::hexfloat << bias[i]
                        << ": kernel " << std::hex << scores[i] << ", codec "
                        << want[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace rlx
