// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax-specialised exp (src/softmax/softmax_exp-inl.h, in base 2)
// against double exp2, on every target (Highway's per-target test pattern).
// States the bound the softmax error budget in docs/KERNELS.md relies on: <= 2
// ulp over [-125.95, 127], exact at integers (1 at 0), 0 for results below
// 2^-126 and at -inf, NaN for every NaN.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/softmax/softmax_exp_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/test_util-inl.h"
#include "src/softmax/softmax_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Error of `got` in units of the last place of the exact value.
double UlpError(float got, double exact) {
  const int e = std::ilogb(exact);
  return std::fabs(got - exact) / std::ldexp(1.0, e - 23);
}

float FromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Every `stride`-th float between the bit patterns lo and hi (inclusive),
// through the exp; returns the largest ulp error.
double MaxUlpOver(std::uint32_t lo, std::uint32_t hi, std::uint32_t stride) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::vector<float> in(N), out(N);
  double worst = 0.0;
  std::uint32_t bits = lo;
  bool done = false;
  while (!done) {
    for (std::size_t i = 0; i < N; ++i) {
      in[i] = FromBits(bits);
      if (hi - bits < stride) {
        done = true;  // repeat the last value to fill the vector
      } else if (!done) {
        bits += stride;
      }
    }
    hn::StoreU(SoftmaxExp2(d, hn::LoadU(d, in.data())), d, out.data());
    for (std::size_t i = 0; i < N; ++i) {
      const double err = UlpError(out[i], std::exp2(double{in[i]}));
      if (!(err <= worst)) worst = err;  // NaN makes it NaN and fails
    }
  }
  return worst;
}

void TestSoftmaxExpWithinTwoUlp() {
  const FlushToZeroScope flush_to_zero;  // as the kernels hold it
  // Emulated (qemu) legs sample more sparsely; the sampled set still spans
  // every binade.
  const char* scale = std::getenv("RLX_TEST_SCALE");
  const double s = scale ? std::atof(scale) : 1.0;
  const std::uint32_t stride =
      static_cast<std::uint32_t>(97 / (s > 0.01 ? s : 0.01)) | 1;
  // [-125.95, -0.0]: what softmax passes. Bit patterns of negative floats
  // grow with magnitude.
  const std::uint32_t minus_zero = 0x80000000u;
  std::uint32_t limit;
  const float kLimit = kExp2FlushBelow;
  std::memcpy(&limit, &kLimit, sizeof(limit));
  const double negative = MaxUlpOver(minus_zero, limit, stride);
  // [0, 127]: small positive arguments appear when softcap is not monotone.
  std::uint32_t top;
  const float kTop = 127.0f;
  std::memcpy(&top, &kTop, sizeof(top));
  const double positive = MaxUlpOver(0, top, stride * 7);
  HWY_ASSERT(negative <= 2.0);
  HWY_ASSERT(positive <= 2.0);
  fprintf(stderr, "%s: max error %.3f ulp on [-125.95, 0], %.3f on [0, 127]\n",
          hwy::TargetName(HWY_TARGET), negative, positive);

  const hn::ScalableTag<float> d;
  const auto exp2 = [&](float t) {
    return hn::GetLane(SoftmaxExp2(d, hn::Set(d, t)));
  };
  for (int k = -125; k <= 127; ++k) {
    HWY_ASSERT_EQ(std::ldexp(1.0f, k), exp2(static_cast<float>(k)));
  }
  const float kInf = std::numeric_limits<float>::infinity();
  HWY_ASSERT_EQ(0.0f, exp2(-kInf));
  HWY_ASSERT_EQ(0.0f, exp2(-126.5f));
  HWY_ASSERT_EQ(0.0f, exp2(-149.0f));
  HWY_ASSERT_EQ(0.0f, exp2(-1.0e30f));
  // NaN stays NaN whatever its sign and payload.
  for (std::uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7FC001FFu, 0xFFC00001u,
                             0x7F800001u, 0xFFFFFFFFu}) {
    HWY_ASSERT(std::isnan(exp2(FromBits(bits))));
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "tests/common/per_target.h"

namespace rlx {
namespace {

RLX_PER_TARGET_HWY_TEST(SoftmaxExpTest, WithinTwoUlp,
                        TestSoftmaxExpWithinTwoUlp);

}  // namespace
}  // namespace rlx
#endif
