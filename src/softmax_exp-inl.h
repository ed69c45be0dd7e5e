// SPDX-License-Identifier: MIT OR Apache-2.0
// A softmax-specialised exp. Re-included per target.
//
// Softmax only evaluates exp(t - max) <= 0, so this exp drops what a general
// one spends on large arguments, overflow and denormal results:
//   x = n ln2 + r, n = round(x log2 e), |r| <= ln2 / 2 (Cody-Waite split of
//   ln2 in two parts so r is exact); exp(r) = 1 + r (1 + r P(r)) with the
//   degree-5 Cephes expf polynomial P in Horner form; then n is added to the
//   exponent bits.
// n is rounded by adding 1.5 * 2^23 (the "shifter"): the sum's low mantissa
// bits hold n, so no float -> int conversion (with its overflow fix-ups on
// x86) is needed, and n << 23 comes straight from the sum's bits.
// Lanes: f32. Valid range: x <= 88 (what softmax passes is <= 0; small
// positive x from a non-monotone softcap are fine). Error: <= 2 ulp for
// x in [-87.3, 88], asserted on every target by tests/softmax_exp_test.cc
// over every 97th float of the range. x < -87.3 (results below 2^-126) gives
// exactly 0: probabilities below FLT_MIN relative to the row maximum flush
// to zero. -inf gives 0, NaN gives NaN.
//
// Cost per vector: 10 FMA, 1 sub, 1 shift, 1 integer add, 1 compare,
// 1 select; no table, no division, no conversion.

#if defined(RLX_SRC_SOFTMAX_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_EXP_INL_H_
#undef RLX_SRC_SOFTMAX_EXP_INL_H_
#else
#define RLX_SRC_SOFTMAX_EXP_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V = hn::Vec<D>>
HWY_INLINE V SoftmaxExp(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V kShifter = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  // ln2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so n * kLn2Hi is
  // exact for |n| < 2^15.
  const V kLn2Hi = hn::Set(d, 0.693359375f);
  const V kLn2Lo = hn::Set(d, -2.12194440e-4f);
  const V shifted = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), kShifter);
  const V n = hn::Sub(shifted, kShifter);
  V r = hn::NegMulAdd(n, kLn2Hi, x);
  r = hn::NegMulAdd(n, kLn2Lo, r);
  V p = hn::Set(d, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  const V one = hn::Set(d, 1.0f);
  const V exp_r = hn::MulAdd(hn::MulAdd(p, r, one), r, one);  // in [0.7, 1.5]
  // exp_r * 2^n by adding n to the exponent: the shifter's low bits are
  // n + 2^22, and 2^22 << 23 vanishes from 32 bits. Valid while the result
  // is normal: x >= -87.3 > -126 ln2 gives n >= -126 with r > 0, so
  // exp_r > 1; below that the select discards it.
  const auto n_bits = hn::ShiftLeft<23>(hn::BitCast(di, shifted));
  const V scaled = hn::BitCast(d, hn::Add(hn::BitCast(di, exp_r), n_bits));
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -87.3f)), scaled);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
