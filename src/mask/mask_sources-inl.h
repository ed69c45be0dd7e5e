// SPDX-License-Identifier: MIT OR Apache-2.0
// Mask sources: what the kernels read per vector of keys to decide which are
// kept and how kept scores are adjusted (dense keep masks, a bias, the keep
// bytes of per-element rules, ALiBi on top). Re-included per target.

#if defined(RLX_SRC_MASK_SOURCES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_MASK_SOURCES_INL_H_
#undef RLX_SRC_MASK_SOURCES_INL_H_
#else
#define RLX_SRC_MASK_SOURCES_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
// branch in one: the branch per vector was slower on ALiBi rows.
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

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
