// SPDX-License-Identifier: MIT OR Apache-2.0
// The three passes over a segment whose vectors are classed by a map:
// a vector of N keys that holds no kept key is never
// loaded, exp'ed or summed, only stored as zero; one whose keys are all
// kept takes the plain passes (no keep byte read); the others take the
// per-element passes as before. Re-included per target;
// src/softmax/general_row-inl.h runs them for rows of per-element rules (keep
// bytes, no bias, no ALiBi) whose kept keys leave whole vectors empty (a paged
// cache's empty pages).
//
// The vectors are visited by the set (or clear) bits of the map, lowest
// first: the loops branch on the bits' count, not on each vector's class,
// so a class pattern that changes every few vectors (shuffled pages) costs
// no mispredicted branch per vector. (Each run of kept keys as a segment
// of its own is slower than reading the bytes, from the variable trip
// counts of every pass per run.)

#if defined(RLX_SRC_SOFTMAX_VECTOR_MAP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_VECTOR_MAP_INL_H_
#undef RLX_SRC_SOFTMAX_VECTOR_MAP_INL_H_
#else
#define RLX_SRC_SOFTMAX_VECTOR_MAP_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_sources-inl.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Bit v of full[v / 64] (bit v % 64): every key of [vN, vN + N) of the
// segment is kept; of partial[v / 64]: some are, not all. Only for
// v < vectors = n / N (whole vectors; the tail of n % N keys is not in the
// map and takes the partial path); bits at and past `vectors` are 0. A
// vector in neither is empty.
struct VectorMap {
  const std::uint64_t* full;
  const std::uint64_t* partial;
  std::size_t vectors;
};

enum class VectorClass { kFull, kPartial, kNonempty, kEmpty };

// The vectors a mapped pass reads through `Source`: the full ones through
// the source without masking (NoSource), the partial ones through the row's.
template <class Source>
constexpr VectorClass ClassOf() {
  return std::is_same_v<std::decay_t<Source>, NoSource> ? VectorClass::kFull
                                                        : VectorClass::kPartial;
}

// Calls four(v0, v1, v2, v3) for the vectors of class kClass, lowest
// first, four at a time (four accumulators), and one(v) for the up to three
// left in each word of the map.
template <VectorClass kClass, class One, class Four>
HWY_INLINE void ForEachVector(const VectorMap& map, const One& one,
                              const Four& four) {
  for (std::size_t w = 0; w * 64 < map.vectors; ++w) {
    std::uint64_t bits;
    switch (kClass) {
      case VectorClass::kFull:
        bits = map.full[w];
        break;
      case VectorClass::kPartial:
        bits = map.partial[w];
        break;
      case VectorClass::kNonempty:
        bits = map.full[w] | map.partial[w];
        break;
      case VectorClass::kEmpty:
        bits = ~(map.full[w] | map.partial[w]);
        break;
    }
    const std::size_t left = map.vectors - w * 64;
    if (left < 64) bits &= (std::uint64_t{1} << left) - 1;
    const std::size_t base = w * 64;
    const auto next = [&] {
      const std::size_t v = base + hwy::Num0BitsBelowLS1Bit_Nonzero64(bits);
      bits &= bits - 1;
      return v;
    };
    while (hwy::PopCount(bits) >= 4) {
      const std::size_t v0 = next(), v1 = next(), v2 = next(), v3 = next();
      four(v0, v1, v2, v3);
    }
    while (bits != 0) one(next());
  }
}

// Pass 1 over the nonempty vectors (full ones without reading the source)
// and the tail.
template <MaxOf kMaxOf, class DF, class Source>
HWY_INLINE hn::Vec<DF> MappedMax(DF df, const Segment& seg,
                                 const VectorMap& map, const Source& src,
                                 const SoftmaxOptions& options,
                                 hn::Vec<DF> max) {
  const std::size_t N = hn::Lanes(df);
  const auto value = [&](hn::Vec<DF> x, const auto& source, std::size_t k)
                         RLX_INLINE_LAMBDA {
                           return MaxValue<kMaxOf>(df, x, source, k, options);
                         };
  auto m1 = max, m2 = max, m3 = max;
  const auto pass = [&](const auto& source) RLX_INLINE_LAMBDA {
    const auto at = [&](std::size_t v) RLX_INLINE_LAMBDA {
      return value(hn::LoadU(df, seg.in + v * N), source, seg.k0 + v * N);
    };
    ForEachVector<ClassOf<decltype(source)>()>(
        map,
        [&](std::size_t v) RLX_INLINE_LAMBDA { max = hn::Max(max, at(v)); },
        [&](std::size_t v0, std::size_t v1, std::size_t v2, std::size_t v3)
            RLX_INLINE_LAMBDA {
              max = hn::Max(max, at(v0));
              m1 = hn::Max(m1, at(v1));
              m2 = hn::Max(m2, at(v2));
              m3 = hn::Max(m3, at(v3));
            });
  };
  pass(NoSource{});
  pass(src);
  max = hn::Max(hn::Max(max, m1), hn::Max(m2, m3));
  const std::size_t k = map.vectors * N;
  if (k < seg.n) {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const std::size_t count = seg.n - k;
    const auto v = value(LoadRowTail<ScoreType::kF32>(df, seg.in + k, count),
                         src.Tail(df, seg.k0 + k, count, buffer), 0);
    max = hn::Max(max, hn::IfThenElse(hn::FirstN(df, count), v,
                                      hn::Set(df, hn::GetLane(max))));
  }
  return max;
}

// Pass 2 over the nonempty vectors (full ones without reading the source)
// and the tail: their exps stored to work and summed, in f32 sums of at most
// kLaneSumValues values a lane widened into f64, as SegmentExp's. The empty
// vectors' work is left as it is: pass 3 stores their zeros.
template <bool kPlain, class DF, class Source>
HWY_INLINE void MappedExp(DF df, const Segment& seg, const VectorMap& map,
                          const Source& src, const SoftmaxOptions& options,
                          float max, detail::RowPrefetch& prefetch,
                          hn::Vec<WideTag<DF>>& sum_lo,
                          hn::Vec<WideTag<DF>>& sum_hi) {
  const std::size_t N = hn::Lanes(df);
  const auto log2e =
      hn::Set(df, static_cast<float>(kPlain ? options.scale * kLog2e : kLog2e));
  const auto neg_max_log2e = hn::Set(df, NegMaxLog2e(max));
  const auto max_v = hn::Set(df, max);
  const float* in = seg.in;
  float* work = seg.work;
  detail::RowPrefetch pf = prefetch;
  auto s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
  // The values each lane of s0 added since the sums were last widened. s0
  // takes the words' leftover vectors as well as a fourth of each four, so
  // its count bounds the others'. Counting the fours alone let a row whose
  // words each leave a few vectors (no four) add all of them to s0 in f32.
  std::size_t added = 0;
  const auto count_added = [&]() RLX_INLINE_LAMBDA {
    if (++added == kLaneSumValues) {
      AddWide(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), sum_lo, sum_hi);
      s0 = s1 = s2 = s3 = hn::Zero(df);
      added = 0;
    }
  };
  const auto pass = [&](const auto& source) RLX_INLINE_LAMBDA {
    const auto exp_store = [&](std::size_t v) RLX_INLINE_LAMBDA {
      const std::size_t k = v * N;
      const auto e =
          ExpOf<kPlain>(df, hn::LoadU(df, in + k), source, seg.k0 + k, log2e,
                        neg_max_log2e, max_v, options);
      hn::StoreU(e, df, work + k);
      return e;
    };
    ForEachVector<ClassOf<decltype(source)>()>(
        map,
        [&](std::size_t v) RLX_INLINE_LAMBDA {
          s0 = hn::Add(s0, exp_store(v));
          count_added();
        },
        [&](std::size_t v0, std::size_t v1, std::size_t v2, std::size_t v3)
            RLX_INLINE_LAMBDA {
              s0 = hn::Add(s0, exp_store(v0));
              s1 = hn::Add(s1, exp_store(v1));
              s2 = hn::Add(s2, exp_store(v2));
              s3 = hn::Add(s3, exp_store(v3));
              // A prefetch step per 4 vectors, as SegmentExp's.
              pf.Step();
              count_added();
            });
  };
  pass(NoSource{});
  pass(src);
  const std::size_t k = map.vectors * N;
  if (k < seg.n) {
    HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
    const std::size_t count = seg.n - k;
    const auto e = hn::IfThenElseZero(
        hn::FirstN(df, count),
        ExpOf<kPlain>(df, LoadRowTail<ScoreType::kF32>(df, in + k, count),
                      src.Tail(df, seg.k0 + k, count, buffer), 0, log2e,
                      neg_max_log2e, max_v, options));
    StoreRowTail<ScoreType::kF32>(df, e, work + k, count);
    s1 = hn::Add(s1, e);  // s1 holds at most added < kLaneSumValues values
  }
  AddWide(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), sum_lo, sum_hi);
  prefetch = pf;
}

// Zeros over the empty vectors of the output (the row type).
template <ScoreType kType, class DF>
HWY_INLINE void MappedZeros(DF df, const VectorMap& map, Elem<kType>* out) {
  const std::size_t N = hn::Lanes(df);
  const auto zero = hn::Zero(df);
  ForEachVector<VectorClass::kEmpty>(
      map,
      [&](std::size_t v)
          RLX_INLINE_LAMBDA { StoreRow<kType>(df, zero, out + v * N); },
      [&](std::size_t v0, std::size_t v1, std::size_t v2, std::size_t v3)
          RLX_INLINE_LAMBDA {
            StoreRow<kType>(df, zero, out + v0 * N);
            StoreRow<kType>(df, zero, out + v1 * N);
            StoreRow<kType>(df, zero, out + v2 * N);
            StoreRow<kType>(df, zero, out + v3 * N);
          });
}

// Pass 3: the nonempty vectors and the tail normalised into the output
// (the row type), the empty ones zero.
template <ScoreType kType, class DF>
HWY_INLINE void MappedNormalize(DF df, const Segment& seg, const VectorMap& map,
                                Elem<kType>* out, float inv_sum) {
  const std::size_t N = hn::Lanes(df);
  const auto inv = hn::Set(df, inv_sum);
  // A local, as SegmentExp's: through seg.work, GCC reloaded the pointer
  // after every store (the stores might alias the segment). Not restrict: an
  // f32 row's work is its output.
  const float* work = seg.work;
  const auto scaled = [&](std::size_t v) RLX_INLINE_LAMBDA {
    StoreRow<kType>(df, hn::Mul(hn::LoadU(df, work + v * N), inv), out + v * N);
  };
  ForEachVector<VectorClass::kNonempty>(
      map, scaled,
      [&](std::size_t v0, std::size_t v1, std::size_t v2, std::size_t v3)
          RLX_INLINE_LAMBDA {
            scaled(v0);
            scaled(v1);
            scaled(v2);
            scaled(v3);
          });
  MappedZeros<kType>(df, map, out);
  const std::size_t k = map.vectors * N;
  if (k < seg.n) {
    const std::size_t count = seg.n - k;
    const auto v = LoadRowTail<ScoreType::kF32>(df, seg.work + k, count);
    StoreRowTail<kType>(df, hn::Mul(v, inv), out + k, count);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
