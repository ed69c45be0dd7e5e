// SPDX-License-Identifier: MIT OR Apache-2.0
// The three passes of the masked softmax over one kept segment of a row, in
// f32: the maximum (pass 1), exp and sum (pass 2), the normalisation into
// the row type (pass 3), and the numerics every path shares. Re-included
// per target; src/softmax/general_row-inl.h runs them over a row,
// src/softmax/plain_passes-inl.h uses the shared numerics.

#if defined(RLX_SRC_SOFTMAX_PASSES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_PASSES_INL_H_
#undef RLX_SRC_SOFTMAX_PASSES_INL_H_
#else
#define RLX_SRC_SOFTMAX_PASSES_INL_H_
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_sources-inl.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"

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

// One kept segment of a row, in f32: in[0, n) read, work[0, n) written.
// The segment's keys start at key `k0` of the mask source's row. The passes
// see f32 only: 16-bit rows are converted before them
// (src/softmax/general_loop-inl.h), so that each pass is compiled once per mask
// source, not once per row type.
struct Segment {
  const float* in;
  float* work;
  std::size_t k0, n;
  std::int64_t shift = 0;  // p_k - k of its keys (implicit positions)
};

// The row's source as segment `seg` sees it (ALiBi: the segment's center).
template <class Source>
HWY_INLINE Source ForSegment(const Source& src, const Segment& seg) {
  if constexpr (kHasShift<Source>) {
    return src.ForShift(seg.shift);
  } else {
    return src;
  }
}

// What pass 1 takes the maximum of. kRaw: the score itself, which suffices
// without a bias and for scale >= 0: rounding is monotone, so
// fl(scale * max x) = max fl(scale * x), and so is the softcap, applied to
// the maximum alone (RowMax). kTransformed: the whole transform plus bias
// (biased rows, and negative scales, a corner not worth its own pass).
enum class MaxOf { kRaw, kTransformed };

// What pass 1 takes the maximum of, for N scores x at key k of `source`.
template <MaxOf kMaxOf, class DF, class Source>
HWY_INLINE hn::Vec<DF> MaxValue(DF df, hn::Vec<DF> x, const Source& source,
                                std::size_t k, const SoftmaxOptions& options) {
  if constexpr (kMaxOf == MaxOf::kRaw) {
    return source.Adjust(df, k, x);
  } else {
    return source.Adjust(df, k,
                         Transform(df, x, options.scale, options.softcap));
  }
}

// Sources that add to the score (a bias, ALiBi): pass 1 takes the maximum of
// the whole transformed score t of every key (MaxOf::kTransformed), and
// stores t into the segment's work on the way; pass 2 reads it back
// (StoredScores) instead of computing it again. So pass 2 reads no bias,
// keep byte or key position and computes no ALiBi distance or softcap a
// second time, and is one instantiation for all such sources. An in-place
// f32 row's work is the line pass 1 just loaded, and pass 2 overwrites it.
template <class Source>
constexpr bool kStoresTransformed = Source::kAdditive;

// Pass 2's source for kStoresTransformed sources: the transformed scores t
// stored in work by pass 1, -inf on masked keys.
struct StoredScores {
  static constexpr bool kAdditive = false;
  static constexpr bool kMasks = false;
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF, std::size_t, hn::Vec<DF> t) const {
    return t;
  }
  template <class DF>
  HWY_INLINE StoredScores Tail(DF, std::size_t, std::size_t, float*) const {
    return {};
  }
};

// Sources whose segments' masked ends are found after pass 1: the keys
// before the first and after the last one the source does not mask. A
// materialised bias masks keys (-inf) that only reading it reveals; passes
// 2 and 3 then run between the ends, which are stored as 0 (the exps they
// would have given: exactly 0), so a causal bias's rows skip the exps of
// their masked half, and left-padded rows those of their padding.
template <class Source>
constexpr bool kFindsMaskedEnds = std::is_same_v<Source, BiasSource>;

// The keys [begin, end) of a segment outside which the source masks every
// key (begin == end: all of them).
struct LiveKeys {
  std::size_t begin, end;
};

// Whether the bias masks (-inf) every key of the vector at key k: their
// transformed values are then -inf whatever the score (BiasSource::Adjust);
// a NaN bias is not -inf.
template <class DF>
HWY_INLINE bool BiasMasksVector(DF df, const BiasSource& src, std::size_t k) {
  return hn::AllTrue(
      df, hn::Eq(hn::LoadU(df, src.bias + k),
                 hn::Set(df, -std::numeric_limits<float>::infinity())));
}

// A segment's live keys, to whole vectors: scanned from both ends after
// pass 1 (whose reads left the bias row in cache), so that rows with
// nothing to skip pay two vector compares. Found inside pass 1 instead,
// the test per step of its loop cost bias rows with nothing to skip.
template <class DF>
HWY_INLINE LiveKeys BiasLiveKeys(DF df, const Segment& seg,
                                 const BiasSource& src) {
  const std::size_t N = hn::Lanes(df);
  std::size_t end = seg.n;
  while (end >= N && BiasMasksVector(df, src, seg.k0 + end - N)) end -= N;
  std::size_t begin = 0;
  while (begin + N <= end && BiasMasksVector(df, src, seg.k0 + begin)) {
    begin += N;
  }
  return {begin, end};
}

// Pass 1: the running maximum over one segment; kStore: the values are
// also stored to work (kStoresTransformed).
template <MaxOf kMaxOf, bool kStore = false, class DF, class Source>
HWY_INLINE hn::Vec<DF> SegmentMax(DF df, const Segment& seg,
                                  const Source& row_src,
                                  const SoftmaxOptions& options,
                                  hn::Vec<DF> max) {
  const std::size_t N = hn::Lanes(df);
  const Source src = ForSegment(row_src, seg);
  // A local copy: the stores of kStore would otherwise make the compiler
  // reload the scale and softcap after every vector (they might alias).
  const SoftmaxOptions opts = options;
  const auto value = [&](hn::Vec<DF> x, const auto& source, std::size_t k)
                         RLX_INLINE_LAMBDA {
                           return MaxValue<kMaxOf>(df, x, source, k, opts);
                         };
  const auto at = [&](std::size_t k) RLX_INLINE_LAMBDA {
    const auto v = value(hn::LoadU(df, seg.in + k), src, seg.k0 + k);
    if constexpr (kStore) hn::StoreU(v, df, seg.work + k);
    return v;
  };
  // `count` < N keys from k (the head before the first aligned vector, or
  // the tail); lanes past them repeat lane 0 of the running max: neutral.
  const auto partial = [&](std::size_t k, std::size_t count) RLX_INLINE_LAMBDA {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const auto v = value(LoadRowTail<ScoreType::kF32>(df, seg.in + k, count),
                         src.Tail(df, seg.k0 + k, count, buffer), 0);
    if constexpr (kStore) {
      StoreRowTail<ScoreType::kF32>(df, v, seg.work + k, count);
    }
    max = hn::Max(max, hn::IfThenElse(hn::FirstN(df, count), v,
                                      hn::Set(df, hn::GetLane(max))));
  };
  // One step of four vectors from k into four accumulators (by reference:
  // SVE vectors cannot be array elements). The loops below take one or two
  // per iteration.
  using V = hn::Vec<DF>;
  const auto step4 = [&](std::size_t k4, V& a0, V& a1, V& a2, V& a3)
                         RLX_INLINE_LAMBDA {
                           a0 = hn::Max(a0, at(k4));
                           a1 = hn::Max(a1, at(k4 + N));
                           a2 = hn::Max(a2, at(k4 + 2 * N));
                           a3 = hn::Max(a3, at(k4 + 3 * N));
                         };
  std::size_t k = KeysToAlign<ScoreType::kF32>(df, seg.in, seg.n);
  if (k != 0) partial(0, k);
  // Sources that add to the score: four accumulators. Their steps are long
  // (two loads, the transform, a compare and a select, and the store), and
  // eight left GCC short of registers for the sixteen addresses (spills
  // reloaded in every step).
  if constexpr (kStore) {
    if (k + 4 * N <= seg.n) {
      auto m0 = max, m1 = max, m2 = max, m3 = max;
      for (; k + 4 * N <= seg.n; k += 4 * N) step4(k, m0, m1, m2, m3);
      max = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
    }
  } else if (k + 8 * N <= seg.n) {
    // Eight accumulators: Max has a latency of 4 cycles and two ports, and
    // loads of an aligned row in L1 issue two per cycle, so fewer would
    // leave this loop latency-bound (four measured slower on AVX3 once the
    // loads were aligned).
    auto m0 = max, m1 = max, m2 = max, m3 = max;
    auto m4 = max, m5 = max, m6 = max, m7 = max;
    for (; k + 8 * N <= seg.n; k += 8 * N) {
      step4(k, m0, m1, m2, m3);
      step4(k + 4 * N, m4, m5, m6, m7);
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

// The most values each lane of an f32 sum of exps adds before it is
// widened: every pass 2 (SegmentExp, the plain rows', the vector map's)
// widens its sums at this count, so that a lane's rounding error stays a
// few ulp for any row length (docs/KERNELS.md states the bound).
constexpr std::size_t kLaneSumValues = 4;

template <class DD>
HWY_INLINE double WideTotal(DD dd, hn::Vec<DD> lo, hn::Vec<DD> hi) {
  return hn::GetLane(hn::SumOfLanes(dd, hn::Add(lo, hi)));
}

// Whether SegmentExp computes a step's four exps before it stores any (the
// other order: exp, store and add, vector by vector). A row's output may be
// its input, so the compiler keeps each load after every earlier store that
// might alias it, and in the other order GCC runs each vector's exp chain
// through before the next vector's load. The arithmetic, and so every
// result, is the same either way: rows alias exactly or not at all, so no
// store feeds a later load. Faster on AVX2 only; the plain rows' and the
// vector maps' loops gained nothing from it.
constexpr bool kExpsBeforeStores = HWY_TARGET == HWY_AVX2;

// One step of four vectors from key k in that order: exp_of(k + i N) for
// i = 0..3, then their stores to out + k + i N, then each added into its
// own sum s_i.
template <class DF, class ExpOfKey, class V = hn::Vec<DF>>
HWY_INLINE void ExpsThenStores(DF df, const ExpOfKey& exp_of, float* out,
                               std::size_t k, V& s0, V& s1, V& s2, V& s3) {
  const std::size_t N = hn::Lanes(df);
  const V e0 = exp_of(k), e1 = exp_of(k + N), e2 = exp_of(k + 2 * N),
          e3 = exp_of(k + 3 * N);
  hn::StoreU(e0, df, out + k);
  hn::StoreU(e1, df, out + k + N);
  hn::StoreU(e2, df, out + k + 2 * N);
  hn::StoreU(e3, df, out + k + 3 * N);
  s0 = hn::Add(s0, e0);
  s1 = hn::Add(s1, e1);
  s2 = hn::Add(s2, e2);
  s3 = hn::Add(s3, e3);
}

// Pass 2: work = exp(t - max), masked lanes 0, where t is the transformed
// (and biased) score; adds them to the row's sums. The exp is taken in base 2.
// Without softcap and bias (kPlain), its argument (x scale - max) log2 e is one
// FMA, x (scale log2 e) + (-max log2 e) (src/softmax/softmax_exp-inl.h says why
// the rounding of the constants costs no accuracy); the caller takes this path
// only when both constants are finite. Stored transformed scores t
// (StoredScores) take t log2 e + (-max log2 e) under the same limit on max
// (kPlain there). Otherwise it is (t - max) log2 e, which never overflows on
// the way. Lane sums are widened into sum_lo and sum_hi (AddWide) every
// kLaneSumValues steps (below).
//
// The exp of N transformed scores x at key k of `source`, as above; the
// constants come from ExpConstants.
template <bool kPlain, class DF, class Source>
HWY_INLINE hn::Vec<DF> ExpOf(DF df, hn::Vec<DF> x, const Source& source,
                             std::size_t k, hn::Vec<DF> log2e,
                             hn::Vec<DF> neg_max_log2e, hn::Vec<DF> max_v,
                             const SoftmaxOptions& options) {
  if constexpr (std::is_same_v<Source, StoredScores>) {
    (void)k, (void)options;
    if constexpr (kPlain) {
      (void)max_v;
      return SoftmaxExp2(df, hn::MulAdd(x, log2e, neg_max_log2e));
    } else {
      (void)neg_max_log2e;
      return SoftmaxExp2(df, hn::Mul(hn::Sub(x, max_v), log2e));
    }
  } else if constexpr (kPlain) {
    return SoftmaxExp2(
        df, source.Adjust(df, k, hn::MulAdd(x, log2e, neg_max_log2e)));
  } else {
    const auto t =
        source.Adjust(df, k, Transform(df, x, options.scale, options.softcap));
    return SoftmaxExp2(df, hn::Mul(hn::Sub(t, max_v), log2e));
  }
}

// -max log2 e as the one-FMA argument of the plain path rounds it: the row's
// sink term and log-sum-exp use this same constant (SoftmaxSegments).
inline float NegMaxLog2e(float max) {
  return static_cast<float>(-max * kLog2e);
}

template <bool kPlain, class DF, class Source>
HWY_INLINE void SegmentExp(DF df, const Segment& seg, const Source& row_src,
                           const SoftmaxOptions& options, float max,
                           detail::RowPrefetch& prefetch,
                           hn::Vec<WideTag<DF>>& sum_lo,
                           hn::Vec<WideTag<DF>>& sum_hi) {
  const std::size_t N = hn::Lanes(df);
  const Source src = ForSegment(row_src, seg);
  const auto log2e = hn::Set(
      df, static_cast<float>(kPlain && !std::is_same_v<Source, StoredScores>
                                 ? options.scale * kLog2e
                                 : kLog2e));
  const auto neg_max_log2e = hn::Set(df, NegMaxLog2e(max));
  const auto max_v = hn::Set(df, max);
  const auto exp_at = [&](hn::Vec<DF> x, const auto& source, std::size_t k)
                          RLX_INLINE_LAMBDA {
                            return ExpOf<kPlain>(df, x, source, k, log2e,
                                                 neg_max_log2e, max_v, options);
                          };
  // Locals, so that the compiler need not reload them after every store
  // (work may be in: an in-place f32 row).
  const float* in = seg.in;
  float* work = seg.work;
  const std::size_t k0 = seg.k0, n = seg.n;
  detail::RowPrefetch pf = prefetch;
  const auto exp_store = [&](std::size_t k) RLX_INLINE_LAMBDA {
    const auto e = exp_at(hn::LoadU(df, in + k), src, k0 + k);
    hn::StoreU(e, df, work + k);
    return e;
  };
  // `count` < N keys from k (the head before the first aligned store, or
  // the tail); lanes past them are 0.
  const auto partial = [&](std::size_t k, std::size_t count) RLX_INLINE_LAMBDA {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const auto e = hn::IfThenElseZero(
        hn::FirstN(df, count),
        exp_at(LoadRowTail<ScoreType::kF32>(df, in + k, count),
               src.Tail(df, k0 + k, count, buffer), 0));
    StoreRowTail<ScoreType::kF32>(df, e, work + k, count);
    return e;
  };
  // The head, the last (< 4) vectors and the tail share one sum.
  auto rest = hn::Zero(df);
  std::size_t k = KeysToAlign<ScoreType::kF32>(df, work, n);
  if (k != 0) rest = partial(0, k);
  // Four vectors per step, each with its own sum: their exp chains are
  // independent, which the out-of-order window needs to keep both FMA
  // ports busy. A block is kLaneSumValues steps, one value a lane each.
  while (k + 4 * N <= n) {
    auto sum0 = hn::Zero(df), sum1 = sum0, sum2 = sum0, sum3 = sum0;
    for (std::size_t step = 0; step < kLaneSumValues && k + 4 * N <= n;
         ++step, k += 4 * N) {
      if constexpr (kExpsBeforeStores) {
        ExpsThenStores(
            df,
            [&](std::size_t i) RLX_INLINE_LAMBDA {
              return exp_at(hn::LoadU(df, in + i), src, k0 + i);
            },
            work, k, sum0, sum1, sum2, sum3);
      } else {
        sum0 = hn::Add(sum0, exp_store(k));
        sum1 = hn::Add(sum1, exp_store(k + N));
        sum2 = hn::Add(sum2, exp_store(k + 2 * N));
        sum3 = hn::Add(sum3, exp_store(k + 3 * N));
      }
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
  if constexpr (kType == ScoreType::kBF16) {
    k += StoreBF16PairsNatively(df, work + k, out + k, n - k, inv_sum);
  }
  // Four vectors per step, as the plain rows' pass 3 (one was slower).
  for (; k + 4 * N <= n; k += 4 * N) {
    const auto v0 = hn::LoadU(df, work + k);
    const auto v1 = hn::LoadU(df, work + k + N);
    const auto v2 = hn::LoadU(df, work + k + 2 * N);
    const auto v3 = hn::LoadU(df, work + k + 3 * N);
    StoreProbabilityPair<kType>(df, hn::Mul(v0, inv), hn::Mul(v1, inv),
                                out + k);
    StoreProbabilityPair<kType>(df, hn::Mul(v2, inv), hn::Mul(v3, inv),
                                out + k + 2 * N);
  }
  for (; k + N <= n; k += N) {
    StoreRow<kType>(df, hn::Mul(hn::LoadU(df, work + k), inv), out + k);
  }
  if (k < n) partial(k, n - k);
}

// Pass 2 of one segment with the row's choice of the plain argument (never
// with a bias read in pass 2: sources with one run their stored scores,
// StoredScores, through it). Inlined: out of line, the call per segment
// made short 16-bit rows slower.
template <class DF, class Source>
HWY_INLINE void RowExp(DF df, const Segment& seg, const Source& src,
                       const SoftmaxOptions& options, float max, bool plain,
                       detail::RowPrefetch& prefetch,
                       hn::Vec<WideTag<DF>>& sum_lo,
                       hn::Vec<WideTag<DF>>& sum_hi) {
  if constexpr (!Source::kAdditive) {
    if (plain) {
      return SegmentExp<true>(df, seg, src, options, max, prefetch, sum_lo,
                              sum_hi);
    }
  }
  SegmentExp<false>(df, seg, src, options, max, prefetch, sum_lo, sum_hi);
}

// The numerics every path shares: row conversion, the exact lane
// maximum, the plain exp argument and the end of pass 2.

// The maximum of a vector's lanes. Highway 1.0.3's MaxOfLanes on EMU128
// starts from -FLT_MAX, which would turn a fully masked (-inf) row into a
// finite max: reduced by hand there.
template <class DF>
HWY_INLINE float MaxOfLanesExact(DF df, hn::Vec<DF> max) {
  if constexpr (HWY_TARGET == HWY_EMU128) {
    HWY_ALIGN float lanes[hn::MaxLanes(df)];
    hn::Store(max, df, lanes);
    float m = lanes[0];
    for (std::size_t i = 1; i < hn::Lanes(df); ++i) m = std::max(m, lanes[i]);
    return m;
  } else {
    return hn::GetLane(hn::MaxOfLanes(df, max));
  }
}

// 16-bit row elements -> f32, exactly: the only place where a softmax row's
// input type matters. Returns `max` raised by the converted values: pass 1
// of rows whose segments keep every key (NoSource) is done on the way
// (RowSegments::raw_max), so that their conversion costs no pass of its own.
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<DF> ConvertRowToF32(DF df,
                                       const Elem<kType>* HWY_RESTRICT in,
                                       float* HWY_RESTRICT out, std::size_t n,
                                       hn::Vec<DF> max) {
  const std::size_t N = hn::Lanes(df);
  std::size_t k = 0;
  auto max1 = max;
  for (; k + 2 * N <= n; k += 2 * N) {
    const auto v0 = LoadRow<kType>(df, in + k);
    const auto v1 = LoadRow<kType>(df, in + k + N);
    hn::StoreU(v0, df, out + k);
    hn::StoreU(v1, df, out + k + N);
    max = hn::Max(max, v0);
    max1 = hn::Max(max1, v1);
  }
  max = hn::Max(max, max1);
  for (; k + N <= n; k += N) {
    const auto v = LoadRow<kType>(df, in + k);
    hn::StoreU(v, df, out + k);
    max = hn::Max(max, v);
  }
  if (k < n) {
    const auto v = LoadRowTail<kType>(df, in + k, n - k);
    StoreRowTail<ScoreType::kF32>(df, v, out + k, n - k);
    max = hn::Max(max, hn::IfThenElse(hn::FirstN(df, n - k), v,
                                      hn::Set(df, hn::GetLane(max))));
  }
  return max;
}

// Whether a row whose maximum (with the sink) is `max` takes the plain
// exp argument of SegmentExp: its one FMA rounds -max log2 e, which shifts
// every argument by up to |max log2 e| 2^-24: a common factor that cancels
// in the normalisation while it stays small. |max log2 e| <= 2^20 keeps it
// below 2^(1/16); larger maxima (scores beyond 7e5) take the two-step
// argument, as do scales whose scale log2 e would overflow, and rows with a
// softcap. Rows with an additive part take the one FMA over the transformed
// scores pass 1 stored, scale, softcap and bias included, under the limit on
// max alone (PlainArgumentMax).
HWY_INLINE bool PlainArgumentMax(float max) {
  return std::fabs(max * kLog2e) <= 0x1p20;
}

HWY_INLINE bool PlainArgument(float max, const SoftmaxOptions& options) {
  return options.softcap <= 0.0f && PlainArgumentMax(max) &&
         std::fabs(options.scale * kLog2e) <= FLT_MAX;
}

// ln of the common factor 2^(c + max log2 e) of the plain path's exps (0 off
// it): every stored exp is exp(t - max + shift).
HWY_INLINE double PlainShift(float max, bool plain) {
  constexpr double kLn2 = 0.693147180559945309417;
  return plain ? (static_cast<double>(NegMaxLog2e(max)) + max * kLog2e) * kLn2
               : 0.0;
}

// The end of a row's pass 2, from the sum of its exps: the sink's term
// (-inf: none), the log-sum-exp into *lse (when not null), and *inv_sum,
// the reciprocal pass 3 multiplies by. False: the sum is NaN (a kept NaN
// score) and *lse NaN; the caller stores NaN on every kept key, as plain
// softmax gives, but leaves masked keys 0 (normalising them by NaN would
// not). The maximum's own exp is ~1, so the sum is never 0 otherwise.
//
// On the plain path every exp argument carries the rounding of
// -max log2 e (a common factor that cancels in the normalisation): the sink
// term and the log-sum-exp are computed with that same rounded constant, so
// that it still cancels.
HWY_INLINE bool FinishSum(double sum, float max, bool plain, float sink,
                          float* lse, float* inv_sum) {
  // The shift only where a term needs it: not on the common path.
  if (sink != -std::numeric_limits<float>::infinity()) {
    sum += std::exp(static_cast<double>(sink) - max + PlainShift(max, plain));
  }
  if (!(sum > 0.0)) {
    if (lse != nullptr) *lse = std::numeric_limits<float>::quiet_NaN();
    return false;
  }
  if (lse != nullptr) {
    *lse = static_cast<float>(max + (std::log(sum) - PlainShift(max, plain)));
  }
  *inv_sum = static_cast<float>(1.0 / sum);
  return true;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
