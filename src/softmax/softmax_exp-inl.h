// SPDX-License-Identifier: MIT OR Apache-2.0
// A softmax-specialised exp, in base 2. Re-included per target.
//
// The softmax calls SoftmaxExp2(t) with t = (s - max) log2 e, formed by one
// FMA per vector as s * (scale log2 e) + (-max log2 e) (the exp pass,
// src/softmax/softmax_passes-inl.h): scaling by log2 e there is free, and base
// 2 makes the range reduction exact and cheap. The rounding of the two
// constants does not grow the error of a probability with |max|: the error of
// the second is common to the whole row and cancels in the normalisation, and
// that of the first is proportional to s - s' between keys (docs/KERNELS.md,
// "Error bound").
//
// 2^t = 2^n 2^f with n an integer and f = t - n exact:
// - AVX-512: f = t - floor(t) in [0, 1) by one vreduceps, and vscalefps
//   multiplies by 2^floor(t) itself; results below 2^-126 are flushed by
//   the hardware (FlushToZeroScope);
// - elsewhere: n = round(t) by adding 1.5 * 2^23 (the "shifter": the sum's
//   low mantissa bits hold n, with no float -> int conversion and its
//   overflow fix-ups on x86), f in [-1/2, 1/2], and 2^n is built from the
//   sum's bits.
// 2^f = 1 + f Q(f), Q of degree 5: a minimax fit of (2^f - 1) / f for
// relative error, on [0, 1] or [-1/2, 1/2] (3.6e-9 and 2.6e-9, below 0.1
// ulp with the f32 coefficients; fitted by Remez exchange). 1 + f Q(f) is
// exactly 1 at f = 0, so 2^0 = 1 exactly.
// Lanes: f32. Valid range: t <= 127 (softmax passes t <= 0; small positive
// t come from a non-monotone softcap). Error: <= 2 ulp for t in
// [-125.95, 127], asserted on every target by tests/softmax/softmax_exp_test.cc
// over every 97th float of the range. Results below 2^-126 = FLT_MIN are
// exactly 0 (AVX-512: by FTZ; elsewhere t < -125.95, where n = -126 still has
// f > 0): probabilities below FLT_MIN relative to the row maximum flush to
// zero, so no denormal is ever produced (on x86 those cost microcode
// assists). -inf gives 0, NaN gives NaN.
//
// Cost per vector: AVX-512 1 reduce, 6 FMA, 1 scalef; elsewhere
// 1 add, 2 sub, 6 FMA, 1 mul, 1 shift, 1 integer add, 1 compare, 1 select.
// No table, no division, no conversion.

#if defined(RLX_SRC_SOFTMAX_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_EXP_INL_H_
#undef RLX_SRC_SOFTMAX_EXP_INL_H_
#else
#define RLX_SRC_SOFTMAX_EXP_INL_H_
#endif

#include <type_traits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Below this, 2^t < 2^-126: flushed to 0 (see the header comment).
constexpr float kExp2FlushBelow = -125.95f;

// Q(f) from its coefficients c1..c6 (Horner); 2^f = 1 + f Q(f).
template <class D, class V = hn::Vec<D>>
HWY_INLINE V Exp2Q(D d, V f, float c1, float c2, float c3, float c4, float c5,
                   float c6) {
  V q = hn::Set(d, c6);
  q = hn::MulAdd(q, f, hn::Set(d, c5));
  q = hn::MulAdd(q, f, hn::Set(d, c4));
  q = hn::MulAdd(q, f, hn::Set(d, c3));
  q = hn::MulAdd(q, f, hn::Set(d, c2));
  return hn::MulAdd(q, f, hn::Set(d, c1));
}

// On AVX-512, SoftmaxExp2 relies on flush-to-zero instead of a compare and
// select: vscalefps flushes when MXCSR.FTZ is set (without it, each of its
// denormal results costs a microcode assist on Intel cores).
// This sets MXCSR.FTZ for its lifetime there (results below FLT_MIN of every
// f32 operation become 0; inputs are untouched) and restores the caller's
// MXCSR after; elsewhere it does nothing. Every caller of SoftmaxExp2 holds
// one.
class FlushToZeroScope {
 public:
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  FlushToZeroScope() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8000u); }
  ~FlushToZeroScope() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#else
  FlushToZeroScope() {}  // user-provided: no unused-variable warning
#endif
  FlushToZeroScope(const FlushToZeroScope&) = delete;
  FlushToZeroScope& operator=(const FlushToZeroScope&) = delete;
};

// 2^t; see the header comment. Callers hold a FlushToZeroScope.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V SoftmaxExp2(D d, V t) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (std::is_same_v<V, hn::Vec512<float>>) {
    // f = t - floor(t): imm 0x09 = keep 0 fraction bits, round down,
    // suppress the precision exception. -inf gives 0, NaN NaN.
    const V f{_mm512_reduce_ps(t.raw, 0x09)};
    const V q =
        Exp2Q(d, f, 6.9314718246e-01f, 2.4022762477e-01f, 5.5492199957e-02f,
              9.6628153697e-03f, 1.2573973509e-03f, 2.1277947235e-04f);
    const V p = hn::MulAdd(q, f, hn::Set(d, 1.0f));
    // p 2^floor(t): below 2^-126 flushed to 0 by FTZ, 2^-inf = 0, NaN stays.
    return V{_mm512_scalef_ps(p.raw, t.raw)};
  }
#endif
  const V flush_below = hn::Set(d, kExp2FlushBelow);
  const hn::RebindToSigned<D> di;
  const V kShifter = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  const V shifted = hn::Add(t, kShifter);
  const V f = hn::Sub(t, hn::Sub(shifted, kShifter));
  // 2^n from the shifter's low bits, n + 2^22: shifted left by 23, 2^22
  // vanishes from 32 bits, and adding the bias gives the bits of 2^n, a
  // normal float for n in [-126, 127]: t >= -125.95 gives n >= -126; below
  // that the select discards it. Multiplying (rather than adding n to the
  // exponent bits of 2^f) keeps a NaN t NaN whatever its payload bits.
  const V pow2n =
      hn::BitCast(d, hn::Add(hn::ShiftLeft<23>(hn::BitCast(di, shifted)),
                             hn::Set(di, 127 << 23)));
  const V q =
      Exp2Q(d, f, 6.9314724207e-01f, 2.4022652209e-01f, 5.5503103882e-02f,
            9.6176927909e-03f, 1.3406643411e-03f, 1.5594677825e-04f);
  // 2^n (1 + f Q(f)), rounded once.
  const V scaled = hn::MulAdd(hn::Mul(q, f), pow2n, pow2n);
  return hn::IfThenZeroElse(hn::Lt(t, flush_below), scaled);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
