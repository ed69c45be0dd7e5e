// SPDX-License-Identifier: MIT OR Apache-2.0
// Per-target score kernels: apply_mask and the fused masked softmax over a
// range of rows. Re-included once per target by foreach_target.h from
// score_kernels.cc; arguments are validated there.
//
// Rows are loaded and stored as f32 vectors (src/row_convert-inl.h); partial
// vectors (tails, and on AVX-512 the head before the first aligned vector)
// are masked accesses where the target has them, stack buffers elsewhere.
// Mask rules are handled as at most three kept key intervals per row
// (src/mask_rows.h): only those are read, the rest of the row is a constant
// fill. Inside them, per-element rules (explicit key positions, segments,
// dense keep masks) are decided into one byte per key of the row, and dense
// masks and biases are read per element.

#if defined(RLX_SRC_SCORE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SCORE_KERNELS_INL_H_
#undef RLX_SRC_SCORE_KERNELS_INL_H_
#else
#define RLX_SRC_SCORE_KERNELS_INL_H_
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask_rows.h"
#include "src/row_convert-inl.h"
#include "src/row_prefetch.h"
#include "src/softmax_exp-inl.h"
#include "src/store_run-inl.h"

// Lambdas are not inline functions: GCC compiles a lambda called from
// several places (a pass's head and tail) out of line, and a call clobbers
// every vector register, so the pass's constants are reloaded after it.
#ifndef RLX_INLINE_LAMBDA
#define RLX_INLINE_LAMBDA __attribute__((always_inline))
#endif

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------ Dense masks, per element

// Dense mask sources read N lanes at key k of their row. Keep(...) gives the
// kept lanes; Adjust(...) turns transformed scores into masked ones (-inf
// where not kept, or + bias). Tail(...) copies `count` lanes into a zeroed
// buffer of kTailVectors vectors (zero = masked for keep masks, no bias) and
// returns a source that reads it at k = 0. kAdditive: whether Adjust adds
// to kept scores (a bias), so that a row's maximum must be taken after it.
constexpr std::size_t kTailVectors = 2;
// Dense keep masks: f32 (kept iff m >= 0.5, so a NaN entry masks: fails
// closed) or u8 (kept iff m != 0).
template <typename M>
struct KeepSource {
  static constexpr bool kAdditive = false;
  const M* HWY_RESTRICT m;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Keep(DF df, std::size_t k) const {
    if constexpr (std::is_same_v<M, float>) {
      return hn::Ge(hn::LoadU(df, m + k), hn::Set(df, 0.5f));
    } else {
      const hn::Rebind<std::uint8_t, DF> du8;
      const hn::RebindToSigned<DF> di32;
      const auto bytes = hn::PromoteTo(di32, hn::LoadU(du8, m + k));
      return hn::RebindMask(df, hn::Not(hn::Eq(bytes, hn::Zero(di32))));
    }
  }
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF df, std::size_t k, hn::Vec<DF> t) const {
    return hn::IfThenElse(Keep(df, k), t,
                          hn::Set(df, -std::numeric_limits<float>::infinity()));
  }
  template <class DF>
  HWY_INLINE KeepSource Tail(DF df, std::size_t k, std::size_t count,
                             float* buffer) const {
    auto* copy = reinterpret_cast<M*>(buffer);
    std::memset(copy, 0, hn::MaxLanes(df) * sizeof(M));
    std::memcpy(copy, m + k, count * sizeof(M));
    return {copy};
  }
};
using KeepF32Source = KeepSource<float>;
using KeepU8Source = KeepSource<std::uint8_t>;

struct BiasSource {
  static constexpr bool kAdditive = true;
  const float* HWY_RESTRICT bias;
  // A -inf bias masks its key whatever the score (+inf - inf would be NaN).
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF df, std::size_t k, hn::Vec<DF> t) const {
    const auto b = hn::LoadU(df, bias + k);
    const auto neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
    return hn::IfThenElse(hn::Eq(b, neg_inf), neg_inf, hn::Add(t, b));
  }
  template <class DF>
  HWY_INLINE BiasSource Tail(DF df, std::size_t k, std::size_t count,
                             float* buffer) const {
    std::memset(buffer, 0, hn::MaxLanes(df) * sizeof(float));
    std::memcpy(buffer, bias + k, count * sizeof(float));
    return {buffer};
  }
};

// Every key kept, no bias: None and the kept intervals of structured masks.
struct NoSource {
  static constexpr bool kAdditive = false;
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF, std::size_t, hn::Vec<DF> t) const {
    return t;
  }
  template <class DF>
  HWY_INLINE NoSource Tail(DF, std::size_t, std::size_t, float*) const {
    return {};
  }
};

// The per-element rules of a row (one byte per key, 1 = kept:
// detail::RowKeepBytes) on top of another source: masked keys become -inf,
// kept ones are adjusted by `inner` (a bias, or nothing).
template <class Inner>
struct KeptBytesSource {
  static constexpr bool kAdditive = Inner::kAdditive;
  const std::uint8_t* HWY_RESTRICT bytes;
  Inner inner;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Keep(DF df, std::size_t k) const {
    return KeepU8Source{bytes}.Keep(df, k);
  }
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF df, std::size_t k, hn::Vec<DF> t) const {
    return hn::IfThenElse(Keep(df, k), inner.Adjust(df, k, t),
                          hn::Set(df, -std::numeric_limits<float>::infinity()));
  }
  // The inner source's tail takes the buffer's first vector, the bytes the
  // second.
  template <class DF>
  HWY_INLINE KeptBytesSource Tail(DF df, std::size_t k, std::size_t count,
                                  float* buffer) const {
    auto* copy = reinterpret_cast<std::uint8_t*>(buffer + hn::MaxLanes(df));
    std::memset(copy, 0, hn::MaxLanes(df));
    std::memcpy(copy, bytes + k, count);
    return {copy, inner.Tail(df, k, count, buffer)};
  }
};

// ------------------------------ apply_mask

// Kept bits untouched, masked -> fill. 16-bit rows select in the integer
// domain (i32 lanes), so kept values, NaN payloads included, round-trip
// exactly.
template <ScoreType kType, class DF, class Source>
HWY_INLINE void ApplyKeepVector(DF df, const Source& src, std::size_t k,
                                Elem<kType>* HWY_RESTRICT s, Elem<kType> fill) {
  if constexpr (kType == ScoreType::kF32) {
    hn::StoreU(
        hn::IfThenElse(src.Keep(df, k), hn::LoadU(df, s), hn::Set(df, fill)),
        df, s);
  } else {
    const hn::Rebind<std::uint16_t, DF> du16;
    const hn::RebindToSigned<DF> di32;
    const auto bits = hn::PromoteTo(di32, hn::LoadU(du16, s));
    const auto kept = hn::IfThenElse(hn::RebindMask(di32, src.Keep(df, k)),
                                     bits, hn::Set(di32, fill));
    hn::StoreU(hn::DemoteTo(du16, kept), du16, s);
  }
}

template <ScoreType kType, class DF, class Source>
HWY_INLINE void ApplyKeepRow(DF df, const Source& src,
                             Elem<kType>* HWY_RESTRICT s, std::size_t n,
                             Elem<kType> fill) {
  const std::size_t N = hn::Lanes(df);
  std::size_t k = 0;
  for (; k + N <= n; k += N) ApplyKeepVector<kType>(df, src, k, s + k, fill);
  if (k < n) {
    HWY_ALIGN float mask_buffer[kTailVectors * hn::MaxLanes(df)];
    HWY_ALIGN Elem<kType> row_buffer[hn::MaxLanes(df)] = {};
    const std::size_t count = n - k;
    std::memcpy(row_buffer, s + k, count * sizeof(Elem<kType>));
    ApplyKeepVector<kType>(df, src.Tail(df, k, count, mask_buffer), 0,
                           row_buffer, fill);
    std::memcpy(s + k, row_buffer, count * sizeof(Elem<kType>));
  }
}

template <ScoreType kType, class DF>
HWY_INLINE void ApplyBiasRow(DF df, const BiasSource& src,
                             Elem<kType>* HWY_RESTRICT s, std::size_t n) {
  const std::size_t N = hn::Lanes(df);
  std::size_t k = 0;
  for (; k + N <= n; k += N) {
    StoreRow<kType>(df, src.Adjust(df, k, LoadRow<kType>(df, s + k)), s + k);
  }
  if (k < n) {
    HWY_ALIGN float bias_buffer[kTailVectors * hn::MaxLanes(df)];
    const std::size_t count = n - k;
    const auto v = LoadRowTail<kType>(df, s + k, count);
    StoreRowTail<kType>(
        df, src.Tail(df, k, count, bias_buffer).Adjust(df, 0, v), s + k, count);
  }
}

// Writes `value` over s[begin, end) in the row type's bits.
template <ScoreType kType>
HWY_INLINE void FillRun(Elem<kType>* HWY_RESTRICT s, std::size_t begin,
                        std::size_t end, Elem<kType> value) {
  const hn::ScalableTag<Elem<kType>> d;
  StoreRun(d, hn::Set(d, value), s, begin, end);
}

// The masked complement of `kept` within [0, n) becomes `value`.
template <ScoreType kType>
HWY_INLINE void FillMasked(Elem<kType>* HWY_RESTRICT s, std::size_t n,
                           const KeptKeys& kept, Elem<kType> value) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < kept.count; ++i) {
    FillRun<kType>(s, next, kept.intervals[i].begin, value);
    next = kept.intervals[i].end;
  }
  FillRun<kType>(s, next, n, value);
}

template <ScoreType kType>
void ApplyMaskRows(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                   float fill_value) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = scores.shape;
  const std::size_t n = shape.k_len;
  const Elem<kType> fill = ElemFromF32<kType>(fill_value);
  auto* base = static_cast<Elem<kType>*>(scores.data);
  const detail::Rules rules = detail::RulesOf(mask);
  std::vector<std::uint8_t> keep_bytes(rules.per_element ? n : 0);
  detail::RowKeepCache keep_cache;
  const auto* bias = static_cast<const float*>(mask.data);
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    Elem<kType>* HWY_RESTRICT s =
        base + detail::RowOffset(shape, scores.strides, i);
    const std::size_t m = detail::RowOffset(mask.shape, mask.strides, i);
    if (rules.dense_only) {
      // No rule but a dense f32, u8 or bias part: the whole row, per
      // element.
      switch (rules.dense) {
        case DenseKind::kKeepF32:
          ApplyKeepRow<kType>(
              df, KeepF32Source{static_cast<const float*>(mask.data) + m}, s, n,
              fill);
          continue;
        case DenseKind::kKeepU8:
          ApplyKeepRow<kType>(
              df, KeepU8Source{static_cast<const std::uint8_t*>(mask.data) + m},
              s, n, fill);
          continue;
        case DenseKind::kBias:
          ApplyBiasRow<kType>(df, BiasSource{bias + m}, s, n);
          continue;
        case DenseKind::kKeepBits:  // per element, below
        case DenseKind::kNone:      // not dense_only
          break;
      }
    }
    const KeptKeys kept =
        detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n);
    FillMasked<kType>(s, n, kept, fill);
    if (rules.per_element) {
      detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept,
                           keep_bytes.data(), &keep_cache);
    }
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeyInterval& iv = kept.intervals[j];
      // The bias first: a key it lands on and the rules mask is filled next.
      if (rules.dense == DenseKind::kBias) {
        ApplyBiasRow<kType>(df, BiasSource{bias + m + iv.begin}, s + iv.begin,
                            iv.size());
      }
      if (rules.per_element) {
        ApplyKeepRow<kType>(df, KeepU8Source{keep_bytes.data() + iv.begin},
                            s + iv.begin, iv.size(), fill);
      }
    }
  }
}

void ApplyMask(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
               float fill) {
  switch (scores.type) {
    case ScoreType::kF32:
      return ApplyMaskRows<ScoreType::kF32>(scores, mask, rows, fill);
    case ScoreType::kBF16:
      return ApplyMaskRows<ScoreType::kBF16>(scores, mask, rows, fill);
    case ScoreType::kF16:
      return ApplyMaskRows<ScoreType::kF16>(scores, mask, rows, fill);
  }
}

// ------------------------------ masked softmax

constexpr double kLog2e = 1.44269504088896340736;

// softcap(scale * x): c * tanh(scale * x / c) when c > 0.
template <class DF>
HWY_INLINE hn::Vec<DF> Transform(DF df, hn::Vec<DF> x, float scale,
                                 float softcap) {
  const auto y = hn::Mul(x, hn::Set(df, scale));
  if (softcap <= 0.0f) return y;
  // NaN bypasses Tanh: Highway 1.0.3's Tanh converts its argument to int on
  // EMU128, which is undefined for NaN.
  const auto nan = hn::IsNaN(y);
  const auto capped = hn::Mul(
      hn::Set(df, softcap),
      hn::CallTanh(df, hn::IfThenZeroElse(
                           nan, hn::Mul(y, hn::Set(df, 1.0f / softcap)))));
  return hn::IfThenElse(nan, y, capped);
}

// One kept segment of a row: in[0, n) read, work[0, n) written (f32). The
// segment's keys start at key `k0` of the mask source's row.
template <ScoreType kType>
struct Segment {
  const Elem<kType>* in;
  float* work;
  std::size_t k0, n;
};

// What pass 1 takes the maximum of. kRaw: the score itself (kNegated: its
// negation), which suffices without a bias: rounding is monotone, so
// fl(scale * max x) = max fl(scale * x) for scale >= 0 (min x for scale < 0),
// and so is the softcap, applied to the maximum alone. kTransformed: the
// whole transform plus bias.
// kRawCapped / kNegatedCapped: the same for softcap rows, where a kept -inf
// score becomes -c and takes part: it is raised to the lowest finite value,
// so that a -inf maximum still means "no key kept".
enum class MaxOf { kRaw, kNegated, kRawCapped, kNegatedCapped, kTransformed };

// Pass 1: the running maximum over one segment.
template <ScoreType kType, MaxOf kMaxOf, class DF, class Source>
HWY_INLINE hn::Vec<DF> SegmentMax(DF df, const Segment<kType>& seg,
                                  const Source& src,
                                  const SoftmaxOptions& options,
                                  hn::Vec<DF> max) {
  const std::size_t N = hn::Lanes(df);
  const auto lowest = hn::Set(df, std::numeric_limits<float>::lowest());
  const auto value = [&](hn::Vec<DF> x, const auto& source,
                         std::size_t k) RLX_INLINE_LAMBDA {
    if constexpr (kMaxOf == MaxOf::kRaw) {
      return source.Adjust(df, k, x);
    } else if constexpr (kMaxOf == MaxOf::kNegated) {
      return source.Adjust(df, k, hn::Neg(x));
    } else if constexpr (kMaxOf == MaxOf::kRawCapped) {
      return source.Adjust(df, k, hn::Max(x, lowest));
    } else if constexpr (kMaxOf == MaxOf::kNegatedCapped) {
      return source.Adjust(df, k, hn::Max(hn::Neg(x), lowest));
    } else {
      return source.Adjust(df, k,
                           Transform(df, x, options.scale, options.softcap));
    }
  };
  const auto at = [&](std::size_t k) RLX_INLINE_LAMBDA {
    return value(LoadRow<kType>(df, seg.in + k), src, seg.k0 + k);
  };
  // `count` < N keys from k (the head before the first aligned vector, or
  // the tail); lanes past them repeat lane 0 of the running max: neutral.
  const auto partial = [&](std::size_t k, std::size_t count) RLX_INLINE_LAMBDA {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const auto v = value(LoadRowTail<kType>(df, seg.in + k, count),
                         src.Tail(df, seg.k0 + k, count, buffer), 0);
    max = hn::Max(max, hn::IfThenElse(hn::FirstN(df, count), v,
                                      hn::Set(df, hn::GetLane(max))));
  };
  std::size_t k = KeysToAlign<kType>(df, seg.in, seg.n);
  if (k != 0) partial(0, k);
  // Eight accumulators: Max has a latency of 4 cycles and two ports, and
  // loads of an aligned row in L1 issue two per cycle, so fewer would leave
  // this loop latency-bound (four measured slower on AVX3 once the loads
  // were aligned).
  if (k + 8 * N <= seg.n) {
    auto m0 = max, m1 = max, m2 = max, m3 = max;
    auto m4 = max, m5 = max, m6 = max, m7 = max;
    for (; k + 8 * N <= seg.n; k += 8 * N) {
      m0 = hn::Max(m0, at(k));
      m1 = hn::Max(m1, at(k + N));
      m2 = hn::Max(m2, at(k + 2 * N));
      m3 = hn::Max(m3, at(k + 3 * N));
      m4 = hn::Max(m4, at(k + 4 * N));
      m5 = hn::Max(m5, at(k + 5 * N));
      m6 = hn::Max(m6, at(k + 6 * N));
      m7 = hn::Max(m7, at(k + 7 * N));
    }
    max = hn::Max(hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)),
                  hn::Max(hn::Max(m4, m5), hn::Max(m6, m7)));
  }
  for (; k + N <= seg.n; k += N) max = hn::Max(max, at(k));
  if (k < seg.n) partial(k, seg.n - k);
  return max;
}

// Running sums of f32 vectors in f64 lanes: adding a vector widens its two
// halves (exact) into `lo` and `hi`, and the one horizontal reduction is in
// WideTotal. A horizontal reduction per block of the exp pass (a chain of
// shuffles and adds, plus its own rounding in f32) measured slower. Free
// functions over the caller's vectors, not a class: SVE vectors cannot be
// class members.
#if HWY_TARGET == HWY_SCALAR
template <class DF>
using WideTag = hn::Simd<double, 1, 0>;
#else
template <class DF>
using WideTag = hn::Repartition<double, DF>;
#endif

template <class DF, class DD = WideTag<DF>>
HWY_INLINE void AddWide(DF df, hn::Vec<DF> v, hn::Vec<DD>& lo,
                        hn::Vec<DD>& hi) {
  const DD dd;
#if HWY_TARGET == HWY_SCALAR
  (void)df, (void)hi;
  lo = hn::Add(lo, hn::PromoteTo(dd, v));
#else
  const hn::Half<DF> dh;
  (void)df;
  lo = hn::Add(lo, hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
  hi = hn::Add(hi, hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
#endif
}

template <class DD>
HWY_INLINE double WideTotal(DD dd, hn::Vec<DD> lo, hn::Vec<DD> hi) {
  return hn::GetLane(hn::SumOfLanes(dd, hn::Add(lo, hi)));
}

// Pass 2: work = exp(t - max), masked lanes 0, where t is the transformed
// (and biased) score; adds them to the row's sums. The exp is taken in base 2.
// Without softcap and bias (kPlain), its argument (x scale - max) log2 e is one
// FMA, x (scale log2 e) + (-max log2 e) (src/softmax_exp-inl.h says why the
// rounding of the constants costs no accuracy); the caller takes this path
// only when both constants are finite. Otherwise it is (t - max) log2 e,
// which never overflows on the way. Lane sums are widened into sum_lo and
// sum_hi (AddWide) every kBlock steps (below).
template <ScoreType kType, bool kPlain, class DF, class Source>
HWY_INLINE void SegmentExp(DF df, const Segment<kType>& seg, const Source& src,
                           const SoftmaxOptions& options, float max,
                           detail::RowPrefetch& prefetch,
                           hn::Vec<WideTag<DF>>& sum_lo,
                           hn::Vec<WideTag<DF>>& sum_hi) {
  const std::size_t N = hn::Lanes(df);
  constexpr std::size_t kBlock = 4;
  const auto log2e =
      hn::Set(df, static_cast<float>(kPlain ? options.scale * kLog2e : kLog2e));
  const auto neg_max_log2e = hn::Set(df, static_cast<float>(-max * kLog2e));
  const auto max_v = hn::Set(df, max);
  const auto exp_at = [&](hn::Vec<DF> x, const auto& source,
                          std::size_t k) RLX_INLINE_LAMBDA {
    if constexpr (kPlain) {
      return SoftmaxExp2(
          df, source.Adjust(df, k, hn::MulAdd(x, log2e, neg_max_log2e)));
    } else {
      const auto t = source.Adjust(
          df, k, Transform(df, x, options.scale, options.softcap));
      return SoftmaxExp2(df, hn::Mul(hn::Sub(t, max_v), log2e));
    }
  };
  // Locals, so that the compiler need not reload them after every store
  // (work may be in: an in-place f32 row).
  const Elem<kType>* in = seg.in;
  float* work = seg.work;
  const std::size_t k0 = seg.k0, n = seg.n;
  detail::RowPrefetch pf = prefetch;
  const auto exp_store = [&](std::size_t k) RLX_INLINE_LAMBDA {
    const auto e = exp_at(LoadRow<kType>(df, in + k), src, k0 + k);
    hn::StoreU(e, df, work + k);
    return e;
  };
  // `count` < N keys from k (the head before the first aligned store, or
  // the tail); lanes past them are 0.
  const auto partial = [&](std::size_t k, std::size_t count) RLX_INLINE_LAMBDA {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const auto e = hn::IfThenElseZero(
        hn::FirstN(df, count), exp_at(LoadRowTail<kType>(df, in + k, count),
                                      src.Tail(df, k0 + k, count, buffer), 0));
    StoreRowTail<ScoreType::kF32>(df, e, work + k, count);
    return e;
  };
  // The head, the last (< 4) vectors and the tail share one sum.
  auto rest = hn::Zero(df);
  std::size_t k = KeysToAlign<kType>(df, work, n);
  if (k != 0) rest = partial(0, k);
  // Four vectors per step, each with its own sum: their exp chains are
  // independent, which the out-of-order window needs to keep both FMA
  // ports busy. A block is kBlock steps; each lane of a step sum adds
  // kBlock values, so its rounding error stays a few ulp for any row length.
  while (k + 4 * N <= n) {
    auto sum0 = hn::Zero(df), sum1 = sum0, sum2 = sum0, sum3 = sum0;
    for (std::size_t step = 0; step < kBlock && k + 4 * N <= n;
         ++step, k += 4 * N) {
      sum0 = hn::Add(sum0, exp_store(k));
      sum1 = hn::Add(sum1, exp_store(k + N));
      sum2 = hn::Add(sum2, exp_store(k + 2 * N));
      sum3 = hn::Add(sum3, exp_store(k + 3 * N));
      pf.Step();
    }
    AddWide(df, hn::Add(hn::Add(sum0, sum1), hn::Add(sum2, sum3)), sum_lo,
            sum_hi);
  }
  for (; k + N <= n; k += N) rest = hn::Add(rest, exp_store(k));
  if (k < n) rest = hn::Add(rest, partial(k, n - k));
  AddWide(df, rest, sum_lo, sum_hi);
  prefetch = pf;
}

// Pass 3: out = work * inv_sum in the row type. work and out are the same
// memory for an in-place f32 row, so neither is restrict.
template <ScoreType kType, class DF>
HWY_INLINE void SegmentNormalize(DF df, const float* work, Elem<kType>* out,
                                 std::size_t n, float inv_sum) {
  const std::size_t N = hn::Lanes(df);
  const auto inv = hn::Set(df, inv_sum);
  const auto partial = [&](std::size_t k, std::size_t count) RLX_INLINE_LAMBDA {
    const auto v = LoadRowTail<ScoreType::kF32>(df, work + k, count);
    StoreRowTail<kType>(df, hn::Mul(v, inv), out + k, count);
  };
  std::size_t k = KeysToAlign<kType>(df, out, n);
  if (k != 0) partial(0, k);
  for (; k + N <= n; k += N) {
    StoreRow<kType>(df, hn::Mul(hn::LoadU(df, work + k), inv), out + k);
  }
  if (k < n) partial(k, n - k);
}

// The maximum of the row's transformed kept scores: pass 1 over every
// segment, then the scale and softcap applied to the maximum alone where
// that is exact (see MaxOf).
template <ScoreType kType, class DF, class Source>
HWY_INLINE float RowMax(DF df, const Segment<kType>* segs, std::size_t count,
                        const Source& src, const SoftmaxOptions& options) {
  constexpr bool kBias = Source::kAdditive;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  auto max = hn::Set(df, kNegInf);
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (kBias) {
      max = SegmentMax<kType, MaxOf::kTransformed>(df, segs[i], src, options,
                                                   max);
    } else if (options.softcap > 0.0f) {
      max = options.scale >= 0.0f ? SegmentMax<kType, MaxOf::kRawCapped>(
                                        df, segs[i], src, options, max)
                                  : SegmentMax<kType, MaxOf::kNegatedCapped>(
                                        df, segs[i], src, options, max);
    } else if (options.scale >= 0.0f) {
      max = SegmentMax<kType, MaxOf::kRaw>(df, segs[i], src, options, max);
    } else {
      max = SegmentMax<kType, MaxOf::kNegated>(df, segs[i], src, options, max);
    }
  }
  float m;
  if constexpr (HWY_TARGET == HWY_EMU128) {
    // Reduced by hand: Highway 1.0.3's MaxOfLanes on EMU128 starts from
    // -FLT_MAX, which would turn a fully masked (-inf) row into a finite max.
    HWY_ALIGN float lanes[hn::MaxLanes(df)];
    hn::Store(max, df, lanes);
    m = lanes[0];
    for (std::size_t i = 1; i < hn::Lanes(df); ++i) m = std::max(m, lanes[i]);
  } else {
    m = hn::GetLane(hn::MaxOfLanes(df, max));
  }
  // No key kept, or every kept score is -inf: the caller zero-fills. Checked
  // before the scale and softcap, which would turn -inf into something else.
  if (kBias || m == kNegInf) return m;
  const float scaled = std::fabs(options.scale) * m;
  return options.softcap > 0.0f ? hn::GetLane(Transform(df, hn::Set(df, scaled),
                                                        1.0f, options.softcap))
                                : scaled;
}

// Whether any kept transformed score of the segments is NaN. Only called
// for rows whose maximum came out -inf, so its cost does not matter.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE bool KeptNaN(DF df, const Segment<kType>* segs, std::size_t count,
                          const Source& src, const SoftmaxOptions& options) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  for (std::size_t i = 0; i < count; ++i) {
    const Segment<kType>& seg = segs[i];
    for (std::size_t k = 0; k < seg.n; k += N) {
      const std::size_t n = std::min(N, seg.n - k);
      const auto x = LoadRowTail<kType>(df, seg.in + k, n);
      const auto t =
          src.Tail(df, seg.k0 + k, n, buffer)
              .Adjust(df, 0, Transform(df, x, options.scale, options.softcap));
      if (!hn::AllFalse(df, hn::And(hn::IsNaN(t), hn::FirstN(df, n)))) {
        return true;
      }
    }
  }
  return false;
}

// A NaN row: NaN on every kept key, 0 on the masked keys of a dense mask
// (those outside the segments of a structured mask are zero-filled by the
// caller). Rare, so not tuned.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE void StoreNaNRow(DF df, const Segment<kType>* segs,
                              std::size_t count, Elem<kType>* const* outs,
                              const Source& src) {
  const std::size_t N = hn::Lanes(df);
  const auto neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t k = 0; k < segs[i].n; k += N) {
      const std::size_t n = std::min(N, segs[i].n - k);
      // Masked lanes adjust to -inf; kept ones to something finite.
      const auto adjusted =
          src.Tail(df, segs[i].k0 + k, n, buffer).Adjust(df, 0, hn::Zero(df));
      const auto v = hn::IfThenZeroElse(
          hn::Eq(adjusted, neg_inf),
          hn::Set(df, std::numeric_limits<float>::quiet_NaN()));
      StoreRowTail<kType>(df, v, outs[i] + k, n);
    }
  }
}

// The whole softmax of one row over its kept segments (at most
// KeptKeys::kMaxIntervals; one whole-row segment for dense-only masks). `work`
// holds exp values: the output row itself for f32, a scratch row for 16-bit
// types. Masked keys outside the segments are zero-filled by the caller.
template <ScoreType kType, class DF, class Source>
HWY_INLINE void SoftmaxSegments(DF df, const Segment<kType>* segs,
                                std::size_t count, Elem<kType>* const* outs,
                                const Source& src,
                                const SoftmaxOptions& options,
                                detail::RowPrefetch& prefetch) {
  constexpr bool kBias = Source::kAdditive;
  const float max = RowMax<kType>(df, segs, count, src, options);
  if (max == -std::numeric_limits<float>::infinity()) {
    // Fully masked, unless Max dropped a NaN (on x86 it returns its second
    // operand when either is NaN): a kept NaN still makes a NaN row.
    if (KeptNaN<kType>(df, segs, count, src, options)) {
      StoreNaNRow(df, segs, count, outs, src);
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        FillRun<kType>(outs[i], 0, segs[i].n, Elem<kType>{});
      }
    }
    return;
  }
  if (max == std::numeric_limits<float>::infinity()) {
    // A kept score is +inf after scaling (or overflowed to it): plain
    // softmax gives inf - inf = NaN.
    StoreNaNRow(df, segs, count, outs, src);
    return;
  }
  // The one-FMA argument of SegmentExp rounds -max log2 e, which shifts
  // every argument by up to |max log2 e| 2^-24: a common factor that cancels
  // in the normalisation while it stays small. |max log2 e| <= 2^20 keeps it
  // below 2^(1/16); larger maxima (scores beyond 7e5) take the two-step
  // argument, as do scales whose scale log2 e would overflow.
  const bool plain = !kBias && options.softcap <= 0.0f &&
                     std::fabs(max * kLog2e) <= 0x1p20 &&
                     std::fabs(options.scale * kLog2e) <= FLT_MAX;
  // One sum for the row: its horizontal reduction is paid once.
  const WideTag<DF> dd;
  auto sum_lo = hn::Zero(dd), sum_hi = hn::Zero(dd);
  for (std::size_t i = 0; i < count; ++i) {
    if (plain) {
      SegmentExp<kType, true>(df, segs[i], src, options, max, prefetch, sum_lo,
                              sum_hi);
    } else {
      SegmentExp<kType, false>(df, segs[i], src, options, max, prefetch, sum_lo,
                               sum_hi);
    }
  }
  const double sum = WideTotal(dd, sum_lo, sum_hi);
  if (!(sum > 0.0)) {
    // A kept NaN score (NaN sum): NaN on every kept key, as plain softmax
    // gives, but masked keys stay 0 (normalising them by NaN would not).
    // The maximum's own exp is ~1, so the sum is never 0 otherwise.
    StoreNaNRow(df, segs, count, outs, src);
    return;
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (std::size_t i = 0; i < count; ++i) {
    SegmentNormalize<kType>(df, segs[i].work, outs[i], segs[i].n, inv_sum);
  }
}

// The dense part's address unit (its offsets count these) and row bytes.
inline std::size_t DenseUnitBytes(DenseKind dense) {
  switch (dense) {
    case DenseKind::kKeepU8:
      return 1;
    case DenseKind::kKeepBits:
      return sizeof(std::uint64_t);
    case DenseKind::kKeepF32:
    case DenseKind::kBias:
    case DenseKind::kNone:
      return sizeof(float);
  }
  return sizeof(float);
}

inline std::size_t DenseRowBytes(DenseKind dense, std::size_t n) {
  return dense == DenseKind::kKeepBits ? (n + 63) / 64 * sizeof(std::uint64_t)
                                       : n * DenseUnitBytes(dense);
}

template <ScoreType kType>
void SoftmaxRows(const ScoreView& in, const ScoreView& out,
                 const MaskSpec& mask, const SoftmaxOptions& options,
                 RowRange rows) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  const auto* in_base = static_cast<const Elem<kType>*>(in.data);
  auto* out_base = static_cast<Elem<kType>*>(out.data);
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  const detail::Rules rules = detail::RulesOf(mask);
  // 16-bit rows keep their exp values in f32 scratch, not in the output.
  std::vector<float> scratch(kType == ScoreType::kF32 ? 0 : n);
  std::vector<std::uint8_t> keep_bytes(rules.per_element ? n : 0);
  detail::RowKeepCache keep_cache;
  const auto* bias = static_cast<const float*>(mask.data);
  const std::size_t mask_unit = DenseUnitBytes(rules.dense);
  const std::size_t exp_step = 4 * hn::Lanes(df);  // keys per SegmentExp step
  detail::RowPrefetch prefetch;
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    const Elem<kType>* s = in_base + detail::RowOffset(shape, in.strides, i);
    Elem<kType>* o = out_base + detail::RowOffset(shape, out.strides, i);
    float* work;
    if constexpr (kType == ScoreType::kF32) {
      work = o;
    } else {
      work = scratch.data();
    }
    const std::size_t m = detail::RowOffset(mask.shape, mask.strides, i);
    // [0, n) for dense-only masks.
    const KeptKeys kept =
        rules.dense_only
            ? KeptKeys{{KeyInterval{0, n}}, 1}
            : detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n);
    // Prefetch the next row's input, output and dense mask row (unless
    // broadcast: this row's) over this row's exp steps.
    if (r + 1 == rows.end) {
      prefetch.Clear();
    } else {
      const detail::RowIndex next = detail::NextRowIndex(shape, i);
      const std::size_t next_m =
          detail::RowOffset(mask.shape, mask.strides, next);
      const bool new_mask_row = rules.dense != DenseKind::kNone && next_m != m;
      const void* begin[] = {
          in_base + detail::RowOffset(shape, in.strides, next),
          out_base + detail::RowOffset(shape, out.strides, next),
          static_cast<const char*>(mask.data) + next_m * mask_unit};
      const std::size_t bytes[] = {
          n * sizeof(Elem<kType>), n * sizeof(Elem<kType>),
          new_mask_row ? DenseRowBytes(rules.dense, n) : 0};
      prefetch.Plan(begin, bytes, kept.size() / exp_step);
    }
    if (rules.dense_only) {
      const Segment<kType> whole{s, work, 0, n};
      switch (rules.dense) {
        case DenseKind::kKeepF32:
          SoftmaxSegments<kType>(
              df, &whole, 1, &o,
              KeepF32Source{static_cast<const float*>(mask.data) + m}, options,
              prefetch);
          continue;
        case DenseKind::kKeepU8:
          SoftmaxSegments<kType>(
              df, &whole, 1, &o,
              KeepU8Source{static_cast<const std::uint8_t*>(mask.data) + m},
              options, prefetch);
          continue;
        case DenseKind::kBias:
          SoftmaxSegments<kType>(df, &whole, 1, &o, BiasSource{bias + m},
                                 options, prefetch);
          continue;
        case DenseKind::kKeepBits:  // per element, below
        case DenseKind::kNone:      // not dense_only
          break;
      }
    }
    Segment<kType> segs[KeptKeys::kMaxIntervals];
    Elem<kType>* outs[KeptKeys::kMaxIntervals];
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeyInterval& iv = kept.intervals[j];
      segs[j] = {s + iv.begin, work + iv.begin, iv.begin, iv.size()};
      outs[j] = o + iv.begin;
    }
    if (rules.per_element) {
      detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept,
                           keep_bytes.data(), &keep_cache);
      if (rules.dense == DenseKind::kBias) {
        SoftmaxSegments<kType>(
            df, segs, kept.count, outs,
            KeptBytesSource<BiasSource>{keep_bytes.data(), {bias + m}}, options,
            prefetch);
      } else {
        SoftmaxSegments<kType>(df, segs, kept.count, outs,
                               KeptBytesSource<NoSource>{keep_bytes.data(), {}},
                               options, prefetch);
      }
    } else if (rules.dense == DenseKind::kBias) {
      SoftmaxSegments<kType>(df, segs, kept.count, outs, BiasSource{bias + m},
                             options, prefetch);
    } else {
      SoftmaxSegments<kType>(df, segs, kept.count, outs, NoSource{}, options,
                             prefetch);
    }
    // The masked keys last (the fill never touches a kept key, so the
    // order does not change a result): its stores then drain while the
    // next row's max pass loads, instead of queueing in front of this
    // row's exp stores.
    FillMasked<kType>(o, n, kept, Elem<kType>{});
  }
}

void MaskedSoftmax(const ScoreView& in, const ScoreView& out,
                   const MaskSpec& mask, const SoftmaxOptions& options,
                   RowRange rows) {
  switch (in.type) {
    case ScoreType::kF32:
      return SoftmaxRows<ScoreType::kF32>(in, out, mask, options, rows);
    case ScoreType::kBF16:
      return SoftmaxRows<ScoreType::kBF16>(in, out, mask, options, rows);
    case ScoreType::kF16:
      return SoftmaxRows<ScoreType::kF16>(in, out, mask, options, rows);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
