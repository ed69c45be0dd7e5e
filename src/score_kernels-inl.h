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

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask_rows.h"
#include "src/position_keep-inl.h"
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
  static constexpr bool kMasks = true;
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
  HWY_INLINE hn::Mask<DF> Kept(DF df, std::size_t k) const {
    return Keep(df, k);
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
  static constexpr bool kMasks = true;  // a -inf bias masks its key
  const float* HWY_RESTRICT bias;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Kept(DF df, std::size_t k) const {
    return hn::Not(
        hn::Eq(hn::LoadU(df, bias + k),
               hn::Set(df, -std::numeric_limits<float>::infinity())));
  }
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
  static constexpr bool kMasks = false;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Kept(DF df, std::size_t) const {
    return hn::FirstN(df, hn::Lanes(df));
  }
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF, std::size_t, hn::Vec<DF> t) const {
    return t;
  }
  template <class DF>
  HWY_INLINE NoSource Tail(DF, std::size_t, std::size_t, float*) const {
    return {};
  }
};

// Keys of one tile of keep bytes: rows whose per-element keep bytes span
// more keys are decided tile by tile, so the buffer is fixed-size (on the
// stack: no allocation per call).
constexpr std::size_t kKeepTileKeys = 8192;
// Keys of one tile of a 16-bit row's exp values beyond its scratch (the
// spill buffer), a divisor of kKeepTileKeys; and a 64-byte line in keys:
// a spilled tile starts at its key's offset within a line, so that its
// stores align where its loads do.
constexpr std::size_t kSpillKeys = 2048;
constexpr std::size_t kAlignKeys = 64 / sizeof(float);
static_assert(kKeepTileKeys % kSpillKeys == 0);

// The per-element rules of a row (one byte per key, 1 = kept:
// detail::RowKeepBytes) on top of another source: masked keys become -inf,
// kept ones are adjusted by `inner` (a bias, or nothing). The byte of key k
// is bytes[k - origin]: the buffer holds the row's bytes from key origin
// (a fixed-size buffer, refilled tile by tile for long rows: WithOrigin).
template <class Inner>
struct KeptBytesSource {
  static constexpr bool kAdditive = Inner::kAdditive;
  static constexpr bool kMasks = true;
  const std::uint8_t* HWY_RESTRICT bytes;
  std::size_t origin;
  Inner inner;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Keep(DF df, std::size_t k) const {
    return KeepU8Source{bytes}.Keep(df, k - origin);
  }
  template <class DF>
  HWY_INLINE hn::Mask<DF> Kept(DF df, std::size_t k) const {
    return hn::And(Keep(df, k), inner.Kept(df, k));
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
    std::memcpy(copy, bytes + (k - origin), count);
    return {copy, 0, inner.Tail(df, k, count, buffer)};
  }
  HWY_INLINE KeptBytesSource WithOrigin(std::size_t key) const {
    return {bytes, key, inner};
  }
};

// The distances |p_q - p_k| of ALiBi for keys with implicit positions: a
// kept segment's keys sit at p_k = k + shift, so the distance is
// |center - k| with center = p_q - shift, computed per vector from an iota:
// nothing is materialised. ForShift sets the segment's center (the Decode
// token's segment has its own shift). A type of its own, not a runtime
// branch in one: the branch per vector measured 5-14% slower on P4alibi.
struct ImplicitKeyDistance {
  double p_q;     // the row's query position
  double center;  // p_q - shift of the current segment
  template <class DF>
  HWY_INLINE hn::Vec<DF> At(DF df, std::size_t k) const {
    return hn::Abs(hn::Sub(
        hn::Set(df, static_cast<float>(center - static_cast<double>(k))),
        hn::Iota(df, 0)));
  }
  HWY_INLINE ImplicitKeyDistance Tail(std::size_t k, std::size_t) const {
    return {p_q, center - static_cast<double>(k)};
  }
  HWY_INLINE ImplicitKeyDistance ForShift(std::int64_t shift) const {
    return {p_q, p_q - static_cast<double>(shift)};
  }
};

// The same over explicit key positions (k_position): each key's distance is
// read per element into a vector on the stack (positions are int64, and
// such rows are decided per element anyway). The distance is exact in
// uint64 (any two int64 differ by less than 2^64) and rounded to f32 once,
// so positions beyond 2^53 keep it. `limit` bounds the keys a tail may read.
struct ExplicitKeyDistance {
  std::int64_t p_q;
  const std::int64_t* HWY_RESTRICT k_position;
  std::size_t limit;
  template <class DF>
  HWY_INLINE hn::Vec<DF> At(DF df, std::size_t k) const {
    HWY_ALIGN float distance[hn::MaxLanes(df)];
    const std::size_t N = hn::Lanes(df);
    const auto q = static_cast<std::uint64_t>(p_q);
    for (std::size_t i = 0; i < N; ++i) {
      const std::int64_t p_k = i < limit ? k_position[k + i] : p_q;
      const auto key = static_cast<std::uint64_t>(p_k);
      distance[i] = static_cast<float>(p_q >= p_k ? q - key : key - q);
    }
    return hn::Load(df, distance);
  }
  HWY_INLINE ExplicitKeyDistance Tail(std::size_t k, std::size_t count) const {
    return {p_q, k_position + k, count};
  }
  HWY_INLINE ExplicitKeyDistance ForShift(std::int64_t) const { return *this; }
};

// ALiBi (docs/SEMANTICS.md, "ALiBi"): t - slope * |p_q - p_k| before
// `inner` adjusts it (a bias after it, as ggml and BLOOM add theirs), with
// the distances of `Distance` (one of the two above).
template <class Inner, class Distance>
struct AlibiSource {
  static constexpr bool kAdditive = true;
  static constexpr bool kMasks = Inner::kMasks;
  float neg_slope;
  Distance distance;
  Inner inner;
  template <class DF>
  HWY_INLINE hn::Mask<DF> Kept(DF df, std::size_t k) const {
    return inner.Kept(df, k);
  }
  template <class DF>
  HWY_INLINE hn::Vec<DF> Adjust(DF df, std::size_t k, hn::Vec<DF> t) const {
    return inner.Adjust(
        df, k, hn::MulAdd(distance.At(df, k), hn::Set(df, neg_slope), t));
  }
  template <class DF>
  HWY_INLINE AlibiSource Tail(DF df, std::size_t k, std::size_t count,
                              float* buffer) const {
    return {neg_slope, distance.Tail(k, count),
            inner.Tail(df, k, count, buffer)};
  }
  HWY_INLINE AlibiSource WithOrigin(std::size_t key) const {
    return {neg_slope, distance, inner.WithOrigin(key)};
  }
  HWY_INLINE AlibiSource ForShift(std::int64_t shift) const {
    return {neg_slope, distance.ForShift(shift), inner};
  }
};

template <class Source>
constexpr bool kIsKeptBytes = false;
template <class Inner>
constexpr bool kIsKeptBytes<KeptBytesSource<Inner>> = true;

template <class Source>
constexpr bool kHasShift = false;
template <class Inner, class Distance>
constexpr bool kHasShift<AlibiSource<Inner, Distance>> = true;

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

// The keys of `outer` outside `inner` become `value` (both sorted,
// disjoint; every interval of inner lies within one of outer).
template <ScoreType kType>
HWY_INLINE void FillMasked(Elem<kType>* HWY_RESTRICT s, const KeptKeys& outer,
                           const KeptKeys& inner, Elem<kType> value) {
  std::size_t j = 0;
  for (std::size_t o = 0; o < outer.count; ++o) {
    std::size_t next = outer.intervals[o].begin;
    const std::size_t end = outer.intervals[o].end;
    for (; j < inner.count && inner.intervals[j].begin < end; ++j) {
      FillRun<kType>(s, next, inner.intervals[j].begin, value);
      next = inner.intervals[j].end;
    }
    FillRun<kType>(s, next, end, value);
  }
}

// The whole row [0, n) as intervals.
inline KeptKeys WholeRow(std::size_t n) { return {{KeyInterval{0, n}}, 1}; }

template <ScoreType kType>
void ApplyMaskRows(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                   float fill_value) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = scores.shape;
  const std::size_t n = shape.k_len;
  const Elem<kType> fill = ElemFromF32<kType>(fill_value);
  auto* base = static_cast<Elem<kType>*>(scores.data);
  const detail::Rules rules = detail::RulesOf(mask);
  // The keep bytes of per-element rules, one tile of keys at a time (on the
  // stack: no allocation per call).
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
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
    FillMasked<kType>(s, WholeRow(n), kept, fill);
    // Rows whose kept keys span one tile take their bytes in one piece
    // (shared by the heads whose bytes coincide); longer ones per tile.
    const bool one_tile = kept.count > 0 && kept.intervals[kept.count - 1].end -
                                                    kept.intervals[0].begin <=
                                                kKeepTileKeys;
    if (rules.per_element && one_tile) {
      detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept, keep_bytes,
                           kept.intervals[0].begin, &keep_cache,
                           &PositionKeepBytes);
    } else {
      keep_cache.valid = false;
    }
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeyInterval& iv = kept.intervals[j];
      // The bias first: a key it lands on and the rules mask is filled next.
      if (rules.dense == DenseKind::kBias) {
        ApplyBiasRow<kType>(df, BiasSource{bias + m + iv.begin}, s + iv.begin,
                            iv.size());
      }
      if (!rules.per_element) continue;
      for (std::size_t t = iv.begin; t < iv.end; t += kKeepTileKeys) {
        const std::size_t len = std::min(kKeepTileKeys, iv.end - t);
        std::size_t at = t - kept.intervals[0].begin;
        if (!one_tile) {
          detail::RowKeepBytes(mask, rules, i, shape.q_len, n,
                               KeptKeys{{KeyInterval{t, t + len}}, 1},
                               keep_bytes, t, /*cache=*/nullptr,
                               &PositionKeepBytes);
          at = 0;
        }
        ApplyKeepRow<kType>(df, KeepU8Source{keep_bytes + at}, s + t, len,
                            fill);
      }
    }
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
  std::int64_t shift = 0;  // p_k - k of its keys (implicit positions)
  // `work` holds its exp values between passes 2 and 3 (f32 rows: the
  // output itself; 16-bit rows: the part of the kept keys that fits the
  // stack scratch); otherwise `work` is the spill buffer, which each pass
  // fills tile by tile (RowSegments) and pass 3 refills before it
  // normalises.
  bool stored = true;
};

// The row's source as segment `seg` sees it (ALiBi: the segment's center).
template <ScoreType kType, class Source>
HWY_INLINE Source ForSegment(const Source& src, const Segment<kType>& seg) {
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

// Pass 1: the running maximum over one segment.
template <ScoreType kType, MaxOf kMaxOf, class DF, class Source>
HWY_INLINE hn::Vec<DF> SegmentMax(DF df, const Segment<kType>& seg,
                                  const Source& row_src,
                                  const SoftmaxOptions& options,
                                  hn::Vec<DF> max) {
  const std::size_t N = hn::Lanes(df);
  const Source src = ForSegment(row_src, seg);
  const auto value = [&](hn::Vec<DF> x, const auto& source,
                         std::size_t k) RLX_INLINE_LAMBDA {
    if constexpr (kMaxOf == MaxOf::kRaw) {
      return source.Adjust(df, k, x);
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
//
// The exp of N transformed scores x at key k of `source`, as above; the
// constants come from ExpConstants.
template <bool kPlain, class DF, class Source>
HWY_INLINE hn::Vec<DF> ExpOf(DF df, hn::Vec<DF> x, const Source& source,
                             std::size_t k, hn::Vec<DF> log2e,
                             hn::Vec<DF> neg_max_log2e, hn::Vec<DF> max_v,
                             const SoftmaxOptions& options) {
  if constexpr (kPlain) {
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

template <ScoreType kType, bool kPlain, class DF, class Source>
HWY_INLINE void SegmentExp(DF df, const Segment<kType>& seg,
                           const Source& row_src, const SoftmaxOptions& options,
                           float max, detail::RowPrefetch& prefetch,
                           hn::Vec<WideTag<DF>>& sum_lo,
                           hn::Vec<WideTag<DF>>& sum_hi) {
  const std::size_t N = hn::Lanes(df);
  constexpr std::size_t kBlock = 4;
  const Source src = ForSegment(row_src, seg);
  const auto log2e =
      hn::Set(df, static_cast<float>(kPlain ? options.scale * kLog2e : kLog2e));
  const auto neg_max_log2e = hn::Set(df, NegMaxLog2e(max));
  const auto max_v = hn::Set(df, max);
  const auto exp_at = [&](hn::Vec<DF> x, const auto& source, std::size_t k)
                          RLX_INLINE_LAMBDA {
                            return ExpOf<kPlain>(df, x, source, k, log2e,
                                                 neg_max_log2e, max_v, options);
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

// Pass 2 (and pass 3's recompute of 16-bit keys beyond the scratch) of one
// segment with the row's choice of the plain argument (never with a bias:
// only sources without one instantiate it). Inlined: out of line, the call
// per segment measured 4-9% slower on short 16-bit rows (D2wf16).
template <ScoreType kType, class DF, class Source>
HWY_INLINE void RowExp(DF df, const Segment<kType>& seg, const Source& src,
                       const SoftmaxOptions& options, float max, bool plain,
                       detail::RowPrefetch& prefetch,
                       hn::Vec<WideTag<DF>>& sum_lo,
                       hn::Vec<WideTag<DF>>& sum_hi) {
  if constexpr (!Source::kAdditive) {
    if (plain) {
      return SegmentExp<kType, true>(df, seg, src, options, max, prefetch,
                                     sum_lo, sum_hi);
    }
  }
  SegmentExp<kType, false>(df, seg, src, options, max, prefetch, sum_lo,
                           sum_hi);
}

// Fills the keep bytes of keys [begin, end) of one row into `bytes` from
// its start (detail::RowKeepBytes with origin begin).
struct KeepTileFill {
  const MaskSpec* mask;
  const detail::Rules* rules;
  detail::RowIndex row;
  std::size_t q_len, k_len;
  std::uint8_t* bytes;
  void operator()(std::size_t begin, std::size_t end) const {
    const KeptKeys tile{{KeyInterval{begin, end}}, 1};
    detail::RowKeepBytes(*mask, *rules, row, q_len, k_len, tile, bytes, begin,
                         /*cache=*/nullptr, &PositionKeepBytes);
  }
};

template <class Source>
constexpr bool kHasOrigin = false;
template <class Inner>
constexpr bool kHasOrigin<KeptBytesSource<Inner>> = true;
template <class Inner, class Distance>
constexpr bool kHasOrigin<AlibiSource<Inner, Distance>> = kHasOrigin<Inner>;

// The kept segments of one row (at most KeptKeys::kMaxIntervals), as every
// pass visits them: ForEach(src, f) calls f(segment, out, source) for each.
// A segment's `stored` says where pass 3 finds its exp values; one that is
// not is visited in tiles of kSpillKeys keys, each with the spill buffer as
// its work. `tiles` (rows whose keep bytes do not fit their buffer): each
// segment is visited in tiles of kKeepTileKeys keys (or fewer), the buffer
// refilled and the source rebased (WithOrigin) before each.
template <ScoreType kType>
struct RowSegments {
  const Segment<kType>* segs;
  Elem<kType>* const* outs;
  std::size_t count;
  const KeepTileFill* tiles;

  // One call of f, so that each pass is generated once per source (the
  // passes are inlined into it); rows without tiles take one step.
  template <class Source, class F>
  HWY_INLINE void ForEach(const Source& src, const F& f) const {
    for (std::size_t j = 0; j < count; ++j) {
      const Segment<kType>& seg = segs[j];
      bool tiled = false;
      if constexpr (kHasOrigin<Source>) tiled = tiles != nullptr;
      std::size_t step = tiled ? kKeepTileKeys : seg.n;
      if (kType != ScoreType::kF32 && !seg.stored) {
        step = std::min(step, kSpillKeys);
      }
      for (std::size_t t = 0; t < seg.n; t += step) {
        const std::size_t len = std::min(step, seg.n - t);
        Source tile_src = src;
        if constexpr (kHasOrigin<Source>) {
          if (tiled) {
            (*tiles)(seg.k0 + t, seg.k0 + t + len);
            tile_src = src.WithOrigin(seg.k0 + t);
          }
        }
        float* work =
            seg.stored ? seg.work + t : seg.work + (seg.k0 + t) % kAlignKeys;
        const Segment<kType> tile{seg.in + t, work,      seg.k0 + t,
                                  len,        seg.shift, seg.stored};
        f(tile, outs[j] + t, tile_src);
      }
    }
  }
};

// Whether the row keeps any key. Only called for softcap rows whose raw
// maximum came out -inf, so its cost does not matter.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE bool AnyKept(DF df, const RowSegments<kType>& row,
                          const Source& row_src) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  bool any = false;
  row.ForEach(
      row_src, [&](const Segment<kType>& seg, Elem<kType>*, const Source& src) {
        const Source seg_src = ForSegment(src, seg);
        for (std::size_t k = 0; k < seg.n && !any; k += N) {
          const std::size_t n = std::min(N, seg.n - k);
          const auto kept = seg_src.Tail(df, seg.k0 + k, n, buffer).Kept(df, 0);
          any = !hn::AllFalse(df, hn::And(kept, hn::FirstN(df, n)));
        }
      });
  return any;
}

// The maximum of the row's transformed kept scores: pass 1 over every
// segment, then the scale and softcap applied to the maximum alone where
// that is exact (see MaxOf).
template <ScoreType kType, class DF, class Source>
HWY_INLINE float RowMax(DF df, const RowSegments<kType>& row,
                        const Source& row_src, const SoftmaxOptions& options) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const bool raw = !Source::kAdditive && options.scale >= 0.0f;
  auto max = hn::Set(df, kNegInf);
  row.ForEach(row_src, [&](const Segment<kType>& seg, Elem<kType>*,
                           const Source& src) RLX_INLINE_LAMBDA {
    max = raw ? SegmentMax<kType, MaxOf::kRaw>(df, seg, src, options, max)
              : SegmentMax<kType, MaxOf::kTransformed>(df, seg, src, options,
                                                       max);
  });
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
  if (!raw) return m;
  // No key kept, or every kept score is -inf: the caller zero-fills. Checked
  // before the scale and softcap, which would turn -inf into something else.
  // Except that the softcap maps a kept -inf score to -c, which takes part:
  // it is raised to the lowest finite value, whose softcap is -c as well.
  if (m == kNegInf) {
    if (!(options.softcap > 0.0f) || !AnyKept<kType>(df, row, row_src)) {
      return m;
    }
    m = std::numeric_limits<float>::lowest();
  }
  const float scaled = options.scale * m;
  return options.softcap > 0.0f ? hn::GetLane(Transform(df, hn::Set(df, scaled),
                                                        1.0f, options.softcap))
                                : scaled;
}

// Whether any kept transformed score of the row is NaN. Only called for
// rows whose maximum came out -inf, so its cost does not matter.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE bool KeptNaN(DF df, const RowSegments<kType>& row,
                          const Source& row_src,
                          const SoftmaxOptions& options) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  bool nan = false;
  row.ForEach(row_src, [&](const Segment<kType>& seg, Elem<kType>*,
                           const Source& src) {
    const Source seg_src = ForSegment(src, seg);
    for (std::size_t k = 0; k < seg.n && !nan; k += N) {
      const std::size_t n = std::min(N, seg.n - k);
      const auto x = LoadRowTail<kType>(df, seg.in + k, n);
      const auto t =
          seg_src.Tail(df, seg.k0 + k, n, buffer)
              .Adjust(df, 0, Transform(df, x, options.scale, options.softcap));
      nan = !hn::AllFalse(df, hn::And(hn::IsNaN(t), hn::FirstN(df, n)));
    }
  });
  return nan;
}

// `value` on every kept key of the segments, 0 on their masked keys.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE void StoreKeptRow(DF df, const RowSegments<kType>& row,
                               const Source& row_src, float value) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  row.ForEach(row_src, [&](const Segment<kType>& seg, Elem<kType>* out,
                           const Source& src) {
    const Source seg_src = ForSegment(src, seg);
    for (std::size_t k = 0; k < seg.n; k += N) {
      const std::size_t n = std::min(N, seg.n - k);
      const auto kept = seg_src.Tail(df, seg.k0 + k, n, buffer).Kept(df, 0);
      StoreRowTail<kType>(df, hn::IfThenElseZero(kept, hn::Set(df, value)),
                          out + k, n);
    }
  });
}

// A NaN row: NaN on every kept key, 0 on the masked keys of the segments
// (those outside them are the caller's). Rare, so not tuned.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE void StoreNaNRow(DF df, const RowSegments<kType>& row,
                              const Source& src) {
  StoreKeptRow(df, row, src, std::numeric_limits<float>::quiet_NaN());
}

// The whole softmax of one row over its kept segments (one whole-row
// segment for dense-only masks). Masked keys outside the segments are the
// caller's (zero-filled in the default mode). `sink` is the head's sink
// logit (-inf: none); the row's log-sum-exp goes to *lse when lse is not
// null.
//
// With a sink the maximum is M = max(max_k t_k, sink) and the denominator
// gains exp(sink - M), computed in double. On the plain path every exp
// argument carries the rounding of -M log2 e (a common factor that cancels
// in the normalisation): the sink term and the log-sum-exp are computed
// with that same rounded constant, so that it still cancels.
template <ScoreType kType, class DF, class Source>
HWY_NOINLINE void SoftmaxSegments(DF df, const RowSegments<kType>& row,
                                  const Source& src,
                                  const SoftmaxOptions& options, float sink,
                                  float* lse, detail::RowPrefetch& prefetch) {
  constexpr bool kBias = Source::kAdditive;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float row_max = RowMax<kType>(df, row, src, options);
  if (row_max == -kInf) {
    // Fully masked, unless Max dropped a NaN (on x86 it returns its second
    // operand when either is NaN): a kept NaN still makes a NaN row.
    if (KeptNaN<kType>(df, row, src, options)) {
      StoreNaNRow(df, row, src);
      if (lse != nullptr) *lse = kNaN;
    } else {
      if constexpr (Source::kMasks) {
        StoreKeptRow(df, row, src, 0.0f);
      } else {
        row.ForEach(src, [&](const Segment<kType>& seg, Elem<kType>* out,
                             const Source&) {
          FillRun<kType>(out, 0, seg.n, Elem<kType>{});
        });
      }
      if (lse != nullptr) *lse = -kInf;
    }
    return;
  }
  if (row_max == kInf) {
    // A kept score is +inf after scaling (or overflowed to it): plain
    // softmax gives inf - inf = NaN.
    StoreNaNRow(df, row, src);
    if (lse != nullptr) *lse = kNaN;
    return;
  }
  const float max = std::max(row_max, sink);
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
  row.ForEach(src, [&](const Segment<kType>& seg, Elem<kType>*,
                       const Source& seg_src) RLX_INLINE_LAMBDA {
    // Values beyond the scratch go to the spill buffer and are dropped.
    RowExp<kType>(df, seg, seg_src, options, max, plain, prefetch, sum_lo,
                  sum_hi);
  });
  double sum = WideTotal(dd, sum_lo, sum_hi);
  // ln of the common factor 2^(c + max log2 e) of the plain path's exps.
  constexpr double kLn2 = 0.693147180559945309417;
  const double shift =
      plain ? (static_cast<double>(NegMaxLog2e(max)) + max * kLog2e) * kLn2
            : 0.0;
  if (sink != -kInf) sum += std::exp(static_cast<double>(sink) - max + shift);
  if (!(sum > 0.0)) {
    // A kept NaN score (NaN sum): NaN on every kept key, as plain softmax
    // gives, but masked keys stay 0 (normalising them by NaN would not).
    // The maximum's own exp is ~1, so the sum is never 0 otherwise.
    StoreNaNRow(df, row, src);
    if (lse != nullptr) *lse = kNaN;
    return;
  }
  if (lse != nullptr) {
    *lse = static_cast<float>(max + (std::log(sum) - shift));
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  row.ForEach(src, [&](const Segment<kType>& seg, Elem<kType>* out,
                       const Source& seg_src) RLX_INLINE_LAMBDA {
    // Pass 3 normalises the stored values; 16-bit keys whose values did
    // not fit the scratch are recomputed into the spill buffer first, by
    // pass 2's code (whose sums are not used here).
    if constexpr (kType != ScoreType::kF32) {
      if (!seg.stored) {
        auto unused_lo = hn::Zero(dd), unused_hi = unused_lo;
        RowExp<kType>(df, seg, seg_src, options, max, plain, prefetch,
                      unused_lo, unused_hi);
      }
    }
    SegmentNormalize<kType>(df, seg.work, out, seg.n, inv_sum);
  });
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
  // Fixed-size buffers on the stack, so that no call allocates. 16-bit
  // rows keep their exp values in f32 scratch while the kept keys fit it
  // (32 KiB), at a fixed offset from a 64-byte boundary: SegmentExp aligns
  // its stores to `work`, so the split of a row's sums, and with it every
  // result, is the same in every call. The kept keys beyond it go through
  // the spill buffer tile by tile and are recomputed in pass 3 with pass 2's
  // code (one more exp per such key: measured in docs/PERFORMANCE.md). The
  // keep bytes of per-element rules: one tile of kKeepTileKeys keys (8 KiB).
  constexpr bool kF32 = kType == ScoreType::kF32;
  constexpr std::size_t kScratchKeys = kF32 ? 1 : 8192;
  alignas(64) float scratch[kScratchKeys];
  alignas(64) float spill[kF32 ? 1 : kSpillKeys + kAlignKeys];
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
  detail::RowKeepCache keep_cache;
  const auto* bias = static_cast<const float*>(mask.data);
  const std::size_t mask_unit = DenseUnitBytes(rules.dense);
  const std::size_t exp_step = 4 * hn::Lanes(df);  // keys per SegmentExp step
  // Dense-only rows read their dense part directly, unless ALiBi wraps the
  // source: the rule path (keep bytes, or the bias) then serves them, so
  // that the ALiBi wrappers exist for fewer sources.
  // Bit masks always go through the bytes.
  const bool dense_rows = rules.dense_only && options.alibi_slopes == nullptr &&
                          rules.dense != DenseKind::kKeepBits;
  const bool per_element =
      !dense_rows && (rules.per_element ||
                      (rules.dense_only && rules.dense != DenseKind::kBias));
  // The narrowed intervals of the row whose bytes keep_bytes holds.
  KeptKeys narrowed;
  bool narrowed_all_kept = false;
  detail::RowPrefetch prefetch;
  // Calls whose rows total at most kPrefetchMinBytes are not prefetched:
  // they sit in L1 or L2 already (a decode step at a short context, just
  // written by QK^T), and the prefetches only take load slots. Measured
  // (AVX3, docs/PERFORMANCE.md): D1 (66 KiB) 7% faster without them, while
  // P2 (128 MiB) is 1.55x slower without them.
  constexpr std::size_t kPrefetchMinBytes = 128 * 1024;
  // Calls above kFinishMinBytes (beyond the L2 and most of an L3 share:
  // rows come from memory) also issue the part of the next row's plan that
  // the exp steps did not reach, before the fill (see below). Measured
  // (AVX3): P2w (128 MiB) 1.3x faster with it; SL (1 MiB, from L2) 1.1-1.25x
  // slower, as the burst waits on miss buffers that L2 hits free soon anyway.
  constexpr std::size_t kFinishMinBytes = 8 * 1024 * 1024;
  const std::size_t call_bytes =
      (rows.end - rows.begin) * n * sizeof(Elem<kType>);
  const bool prefetch_rows = call_bytes > kPrefetchMinBytes;
  const bool finish_prefetch = call_bytes > kFinishMinBytes;
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    const Elem<kType>* s = in_base + detail::RowOffset(shape, in.strides, i);
    Elem<kType>* o = out_base + detail::RowOffset(shape, out.strides, i);
    const std::size_t m = detail::RowOffset(mask.shape, mask.strides, i);
    // [0, n) for dense-only masks.
    KeptKeys kept = rules.dense_only ? WholeRow(n)
                                     : detail::KeptKeysOf(mask, rules, i.b, i.q,
                                                          shape.q_len, n);
    // What kept_keys reports for the row, before the keep bytes narrow it.
    const KeptKeys reported = kept;
    // Per-element rules: the row's keep bytes from its first kept key, in
    // one piece (shared by the heads whose bytes coincide) or tile by tile.
    // In one piece, the intervals are narrowed to the kept bytes (packed
    // documents: a causal row keeps only its own document's run), and rows
    // whose narrowed intervals keep every key drop the bytes (with implicit
    // key positions: ALiBi over explicit ones needs the per-element path).
    const KeepTileFill tile_fill{&mask, &rules, i, shape.q_len, n, keep_bytes};
    const KeepTileFill* tiles = nullptr;
    const std::size_t origin = kept.count > 0 ? kept.intervals[0].begin : 0;
    bool read_bytes = per_element && kept.count > 0;
    if (read_bytes) {
      if (kept.intervals[kept.count - 1].end - origin <= kKeepTileKeys) {
        if (detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept,
                                 keep_bytes, origin, &keep_cache,
                                 &PositionKeepBytes)) {
          narrowed = detail::NarrowToKeptBytes(kept, keep_bytes, origin,
                                               &narrowed_all_kept);
        }
        kept = narrowed;
        read_bytes = !(narrowed_all_kept && !rules.explicit_keys);
      } else {
        keep_cache.valid = false;  // the tiles overwrite the bytes
        tiles = &tile_fill;
      }
    }
    // Prefetch the next row's input, output and dense mask row (unless
    // broadcast: this row's) over this row's exp steps.
    if (!prefetch_rows || r + 1 == rows.end) {
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
    // The segments: exp values in the output (f32) or, for 16-bit rows, at
    // 64-byte aligned offsets of the scratch while it lasts: the interval
    // that overflows it is split into a stored part and a spilled one,
    // and the intervals after it are recomputed (so one more segment than
    // intervals at most).
    Segment<kType> segs[KeptKeys::kMaxIntervals + 1];
    Elem<kType>* outs[KeptKeys::kMaxIntervals + 1];
    std::size_t count = 0;
    std::size_t scratch_keys = 0;
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeyInterval& iv = kept.intervals[j];
      // The Decode token at slot upper sits at position past.
      const std::int64_t shift = rules.decode && iv.begin == mask.upper
                                     ? static_cast<std::int64_t>(mask.past) -
                                           static_cast<std::int64_t>(mask.upper)
                                     : 0;
      const auto add = [&](std::size_t begin, std::size_t size, float* work,
                           bool stored) {
        segs[count] = {s + begin, work, begin, size, shift, stored};
        outs[count++] = o + begin;
      };
      if constexpr (kType == ScoreType::kF32) {
        add(iv.begin, iv.size(), o + iv.begin, true);
      } else {
        // Each part's work starts at its key index modulo 64 bytes, so that
        // pass 2 aligns its scratch stores and its input loads at the same
        // key.
        const std::size_t offset = scratch_keys + iv.begin % kAlignKeys;
        const std::size_t fits =
            offset < kScratchKeys ? std::min(iv.size(), kScratchKeys - offset)
                                  : 0;
        if (fits > 0) add(iv.begin, fits, scratch + offset, true);
        if (fits < iv.size()) {
          add(iv.begin + fits, iv.size() - fits, spill, false);
          scratch_keys = kScratchKeys;
        } else {
          scratch_keys =
              (offset + fits + kAlignKeys - 1) / kAlignKeys * kAlignKeys;
        }
      }
    }
    const RowSegments<kType> row{segs, outs, count, tiles};
    const float sink = options.sink_logits != nullptr
                           ? options.sink_logits[i.h]
                           : -std::numeric_limits<float>::infinity();
    float* lse = options.row_lse != nullptr ? options.row_lse + r : nullptr;
    if (dense_rows) {
      switch (rules.dense) {
        case DenseKind::kKeepF32:
          SoftmaxSegments<kType>(
              df, row, KeepF32Source{static_cast<const float*>(mask.data) + m},
              options, sink, lse, prefetch);
          continue;
        case DenseKind::kKeepU8:
          SoftmaxSegments<kType>(
              df, row,
              KeepU8Source{static_cast<const std::uint8_t*>(mask.data) + m},
              options, sink, lse, prefetch);
          continue;
        case DenseKind::kBias:
          SoftmaxSegments<kType>(df, row, BiasSource{bias + m}, options, sink,
                                 lse, prefetch);
          continue;
        case DenseKind::kKeepBits:  // not dense_rows
        case DenseKind::kNone:      // not dense_only
          break;
      }
    }
    // ALiBi wraps the row's source: its term comes after the transform and
    // before the bias or keep decision of `inner`.
    const auto run = [&](const auto& inner) {
      using Inner = std::decay_t<decltype(inner)>;
      if (options.alibi_slopes == nullptr) {
        SoftmaxSegments<kType>(df, row, inner, options, sink, lse, prefetch);
        return;
      }
      const float neg_slope = -options.alibi_slopes[i.h];
      const std::int64_t p_q =
          detail::QueryPosition(mask, i.b, i.q, shape.q_len, n);
      // Explicit key positions reach ALiBi through the keep bytes only.
      if constexpr (kIsKeptBytes<Inner>) {
        if (rules.explicit_keys) {
          SoftmaxSegments<kType>(df, row,
                                 AlibiSource<Inner, ExplicitKeyDistance>{
                                     neg_slope,
                                     {p_q, mask.k_position + i.b * n,
                                      std::numeric_limits<std::size_t>::max()},
                                     inner},
                                 options, sink, lse, prefetch);
          return;
        }
      }
      const double p = static_cast<double>(p_q);
      SoftmaxSegments<kType>(
          df, row,
          AlibiSource<Inner, ImplicitKeyDistance>{neg_slope, {p, p}, inner},
          options, sink, lse, prefetch);
    };
    const bool has_bias = rules.dense == DenseKind::kBias;
    if (read_bytes) {
      if (has_bias) {
        run(KeptBytesSource<BiasSource>{keep_bytes, origin, {bias + m}});
      } else {
        run(KeptBytesSource<NoSource>{keep_bytes, origin, {}});
      }
    } else if (has_bias) {
      run(BiasSource{bias + m});
    } else {
      run(NoSource{});
    }
    // The rest of the next row's prefetch plan, before the fill: a row with
    // few kept keys (P2w: 257 of 2048) has too few exp steps to issue it
    // (on AVX3 a step is 64 keys, 4 steps of 16 lines for a 128-line row),
    // and its lines then arrive while the fill's stores drain instead of as
    // misses of the next row's passes.
    if (finish_prefetch) prefetch.Finish();
    // The masked keys last (the fill never touches a kept key, so the
    // order does not change a result): its stores then drain while the
    // next row's max pass loads, instead of queueing in front of this
    // row's exp stores. Kept-only writes leave the keys outside kept_keys
    // alone, but write the masked ones inside it, as the default mode does.
    FillMasked<kType>(o, options.zero_masked ? WholeRow(n) : reported, kept,
                      Elem<kType>{});
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
