// SPDX-License-Identifier: MIT OR Apache-2.0
// The general row code: the masked softmax of one row over its kept
// segments, through the mask source its path reads (SoftmaxRow, on the path
// src/softmax/row_path.h chose; plain rows: src/softmax/plain_loop-inl.h).
// Re-included per target by src/softmax/row_loop.cc and the units of
// src/softmax/general_row_units-inl.h.
//
// The passes (src/softmax/softmax_passes-inl.h) read and write f32 only. A
// 16-bit row's kept keys are converted into an f32 scratch first (on the stack,
// or the thread's exp buffer for long rows: src/softmax/thread_exp_buffer.h)
// and its results converted back after pass 3 (RowSegments): so the passes,
// instantiated once per mask source, are compiled once, not once per row
// type, and every 16-bit exp value that fits the scratch is kept.

#if defined(RLX_SRC_SOFTMAX_GENERAL_ROW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_GENERAL_ROW_INL_H_
#undef RLX_SRC_SOFTMAX_GENERAL_ROW_INL_H_
#else
#define RLX_SRC_SOFTMAX_GENERAL_ROW_INL_H_
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "rlx/softmax_split.h"
#include "src/mask/mask_rows.h"
#include "src/mask/mask_sources-inl.h"
#include "src/mask/position_keep-inl.h"
#include "src/mask/row_keep_bytes.h"
#include "src/softmax/row_path.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/softmax/softmax_vector_map-inl.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// The one source whose rows take a vector map
// (src/softmax/softmax_vector_map-inl.h): keep bytes alone, no bias, no ALiBi.
template <class Source>
constexpr bool kMapped = std::is_same_v<Source, KeptBytesSource<NoSource>>;

template <class Source>
constexpr bool kHasOrigin = false;
template <class Inner>
constexpr bool kHasOrigin<KeptBytesSource<Inner>> = true;
template <class Inner, class Distance>
constexpr bool kHasOrigin<AlibiSource<Inner, Distance>> = kHasOrigin<Inner>;

// The kept segments of one row (at most KeptKeys::kMaxIntervals + 1), as
// every pass visits them: ForEach(src, f) calls f(segment, out, source) for
// each, where `out` is the segment's first key in the output row (row type).
// `tiles` (rows whose keep bytes do not fit their buffer): each segment is
// visited in tiles of kKeepTileKeys keys (or fewer), the buffer refilled and
// the source rebased (WithOrigin) before each.
struct RowSegments {
  const Segment* segs;
  void* const* outs;
  std::size_t count;
  ScoreType type;
  const KeepTileFill* tiles;
  // 16-bit rows: the maximum of their segments' scores, taken as they were
  // converted; pass 1 of a source that keeps every key of the segments
  // (NoSource) is then done. NaN for f32 rows.
  float raw_max = std::numeric_limits<float>::quiet_NaN();
  // Not null: the row's one segment is classed by this map, and the passes
  // of its source skip the empty vectors (only kMapped sources read it).
  const VectorMap* map = nullptr;

  // One call of f, so that each pass is generated once per source (the
  // passes are inlined into it); rows without tiles take one step.
  template <class Source, class F>
  HWY_INLINE void ForEach(const Source& src, const F& f) const {
    for (std::size_t j = 0; j < count; ++j) {
      const Segment& seg = segs[j];
      bool tiled = false;
      if constexpr (kHasOrigin<Source>) tiled = tiles != nullptr;
      const std::size_t step = tiled ? kKeepTileKeys : seg.n;
      for (std::size_t t = 0; t < seg.n; t += step) {
        const std::size_t len = std::min(step, seg.n - t);
        Source tile_src = src;
        if constexpr (kHasOrigin<Source>) {
          if (tiled) {
            (*tiles)(seg.k0 + t, seg.k0 + t + len);
            tile_src = src.WithOrigin(seg.k0 + t);
          }
        }
        const Segment tile{seg.in + t, seg.work + t, seg.k0 + t, len,
                           seg.shift};
        void* out = type == ScoreType::kF32
                        ? static_cast<void*>(static_cast<float*>(outs[j]) + t)
                        : static_cast<std::uint16_t*>(outs[j]) + t;
        f(tile, out, tile_src);
      }
    }
  }

  // Key `k` of segment j in the output row.
  void* OutAt(std::size_t j, std::size_t k) const {
    const std::size_t size = type == ScoreType::kF32 ? sizeof(float) : 2;
    return static_cast<char*>(outs[j]) + k * size;
  }

  // Stores 0 on keys [begin, end) of segment j (0 has the same bits in
  // every row type).
  void StoreZeros(std::size_t j, std::size_t begin, std::size_t end) const {
    if (begin >= end) return;
    std::memset(OutAt(j, begin), 0,
                static_cast<char*>(OutAt(j, end)) -
                    static_cast<char*>(OutAt(j, begin)));
  }

  // Pass 3 of a mapped row's segment: as Store, the empty vectors zero.
  template <class DF>
  HWY_NOINLINE void StoreMapped(DF df, const Segment& seg, void* out,
                                float scale) const {
    switch (type) {
      case ScoreType::kF32:
        return MappedNormalize<ScoreType::kF32>(
            df, seg, *map, static_cast<float*>(out), scale);
      case ScoreType::kBF16:
        return MappedNormalize<ScoreType::kBF16>(
            df, seg, *map, static_cast<Elem<ScoreType::kBF16>*>(out), scale);
      case ScoreType::kF16:
        return MappedNormalize<ScoreType::kF16>(
            df, seg, *map, static_cast<Elem<ScoreType::kF16>*>(out), scale);
    }
  }

  // Pass 3 of a tile: its work times `scale` into `out`, in the row type
  // (an f32 row's work is its output: normalised in place). Inlined for
  // every type: out of line, the call per segment made short 16-bit rows
  // slower.
  template <class DF>
  HWY_INLINE void Store(DF df, const Segment& tile, void* out,
                        float scale) const {
    switch (type) {
      case ScoreType::kF32:
        return SegmentNormalize<ScoreType::kF32>(
            df, tile.work, static_cast<float*>(out), tile.n, scale);
      case ScoreType::kBF16:
        return SegmentNormalize<ScoreType::kBF16>(
            df, tile.work, static_cast<Elem<ScoreType::kBF16>*>(out), tile.n,
            scale);
      case ScoreType::kF16:
        return SegmentNormalize<ScoreType::kF16>(
            df, tile.work, static_cast<Elem<ScoreType::kF16>*>(out), tile.n,
            scale);
    }
  }
};

// Whether the row keeps any key. Only called for softcap rows whose raw
// maximum came out -inf, so its cost does not matter.
template <class DF, class Source>
HWY_NOINLINE bool AnyKept(DF df, const RowSegments& row,
                          const Source& row_src) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  bool any = false;
  row.ForEach(row_src, [&](const Segment& seg, void*, const Source& src) {
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
template <class DF, class Source>
HWY_INLINE float RowMax(DF df, const RowSegments& row, const Source& row_src,
                        const SoftmaxOptions& options) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const bool raw = !Source::kAdditive && options.scale >= 0.0f;
  float m;
  if (std::is_same_v<Source, NoSource> && raw && !std::isnan(row.raw_max)) {
    m = row.raw_max;  // taken by the conversion of a 16-bit row
  } else {
    auto max = hn::Set(df, kNegInf);
    row.ForEach(row_src, [&](const Segment& seg, void*,
                             const Source& src) RLX_INLINE_LAMBDA {
      if constexpr (kMapped<Source>) {
        if (row.map != nullptr) {
          max =
              raw ? MappedMax<MaxOf::kRaw>(df, seg, *row.map, src, options, max)
                  : MappedMax<MaxOf::kTransformed>(df, seg, *row.map, src,
                                                   options, max);
          return;
        }
      }
      if constexpr (kStoresTransformed<Source>) {
        max = SegmentMax<MaxOf::kTransformed, /*kStore=*/true>(df, seg, src,
                                                               options, max);
      } else {
        max = raw ? SegmentMax<MaxOf::kRaw>(df, seg, src, options, max)
                  : SegmentMax<MaxOf::kTransformed>(df, seg, src, options, max);
      }
    });
    m = MaxOfLanesExact(df, max);
  }
  if (!raw) return m;
  // No key kept, or every kept score is -inf: the caller zero-fills. Checked
  // before the scale and softcap, which would turn -inf into something else.
  // Except that the softcap maps a kept -inf score to -c, which takes part:
  // it is raised to the lowest finite value, whose softcap is -c as well.
  if (m == kNegInf) {
    if (!(options.softcap > 0.0f) || !AnyKept(df, row, row_src)) {
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
// rows whose maximum came out -inf, so its cost does not matter. Sources
// that stored their transformed scores in pass 1 (kStoresTransformed) are
// read there: an in-place row's scores are overwritten by then, and a
// masked key's stored value is -inf, never NaN.
template <class DF, class Source>
HWY_NOINLINE bool KeptNaN(DF df, const RowSegments& row, const Source& row_src,
                          const SoftmaxOptions& options) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  bool nan = false;
  if constexpr (kStoresTransformed<Source>) {
    (void)row_src, (void)options, (void)buffer;
    for (std::size_t j = 0; j < row.count && !nan; ++j) {
      const Segment& seg = row.segs[j];
      for (std::size_t k = 0; k < seg.n && !nan; k += N) {
        const std::size_t n = std::min(N, seg.n - k);
        const auto t = LoadRowTail<ScoreType::kF32>(df, seg.work + k, n);
        nan = !hn::AllFalse(df, hn::And(hn::IsNaN(t), hn::FirstN(df, n)));
      }
    }
    return nan;
  }
  row.ForEach(row_src, [&](const Segment& seg, void*, const Source& src) {
    const Source seg_src = ForSegment(src, seg);
    for (std::size_t k = 0; k < seg.n && !nan; k += N) {
      const std::size_t n = std::min(N, seg.n - k);
      const auto x = LoadRowTail<ScoreType::kF32>(df, seg.in + k, n);
      const auto t =
          seg_src.Tail(df, seg.k0 + k, n, buffer)
              .Adjust(df, 0, Transform(df, x, options.scale, options.softcap));
      nan = !hn::AllFalse(df, hn::And(hn::IsNaN(t), hn::FirstN(df, n)));
    }
  });
  return nan;
}

// `value` on every kept key of the segments, 0 on their masked keys. Rare
// (fully masked and NaN rows), so not tuned.
template <class DF, class Source>
HWY_NOINLINE void StoreKeptRow(DF df, const RowSegments& row,
                               const Source& row_src, float value) {
  const std::size_t N = hn::Lanes(df);
  HWY_ALIGN float buffer[kTailVectors * hn::MaxLanes(df)];
  row.ForEach(row_src, [&](const Segment& seg, void* out, const Source& src) {
    const Source seg_src = ForSegment(src, seg);
    for (std::size_t k = 0; k < seg.n; k += N) {
      const std::size_t n = std::min(N, seg.n - k);
      const auto kept = seg_src.Tail(df, seg.k0 + k, n, buffer).Kept(df, 0);
      StoreRowTail<ScoreType::kF32>(
          df, hn::IfThenElseZero(kept, hn::Set(df, value)), seg.work + k, n);
    }
    // An f32 row's work is its output; 16-bit rows convert it.
    if (row.type != ScoreType::kF32) row.Store(df, seg, out, 1.0f);
  });
}

// The whole softmax of one row over its kept segments (one whole-row
// segment for dense-only masks). Masked keys outside the segments are the
// caller's (zero-filled in the default mode). `sink` is the head's sink
// logit (-inf: none); the row's log-sum-exp goes to *lse when lse is not
// null. `part` (not null: step 1 of a split row, rlx/softmax_split.h): no
// normalisation; the exps stay (16-bit rows: in their type) and *part
// receives their statistics.
//
// With a sink the maximum is M = max(max_k t_k, sink) and the denominator
// gains exp(sink - M), computed in double. On the plain path every exp
// argument carries the rounding of -M log2 e (a common factor that cancels
// in the normalisation): the sink term and the log-sum-exp are computed
// with that same rounded constant, so that it still cancels.
template <class DF, class Source>
HWY_NOINLINE void SoftmaxSegments(DF df, const RowSegments& row,
                                  const Source& src,
                                  const SoftmaxOptions& options, float sink,
                                  float* lse, SoftmaxPartStats* part,
                                  detail::RowPrefetch& prefetch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float row_max = RowMax(df, row, src, options);
  if (row_max == -kInf) {
    // Fully masked, unless Max dropped a NaN (on x86 it returns its second
    // operand when either is NaN): a kept NaN still makes a NaN row.
    const bool nan = KeptNaN(df, row, src, options);
    StoreKeptRow(df, row, src, nan ? kNaN : 0.0f);
    if (lse != nullptr) *lse = nan ? kNaN : -kInf;
    if (part != nullptr) {
      *part = nan ? SoftmaxPartStats{kNaN, kNaN} : SoftmaxPartStats{-kInf, 0.0};
    }
    return;
  }
  if (row_max == kInf) {
    // A kept score is +inf after scaling (or overflowed to it): plain
    // softmax gives inf - inf = NaN.
    StoreKeptRow(df, row, src, kNaN);
    if (lse != nullptr) *lse = kNaN;
    if (part != nullptr) *part = {kNaN, kNaN};
    return;
  }
  const float max = std::max(row_max, sink);
  // Stored transformed scores t (kStoresTransformed: every source with an
  // additive part) take the one-FMA argument t log2 e + (-max log2 e) under
  // the same limit on max as the plain path (the scale and softcap are
  // already in t).
  const bool plain = kStoresTransformed<Source> ? PlainArgumentMax(max)
                                                : PlainArgument(max, options);
  // Passes 2 and 3 run over `live`: for sources that find masked ends,
  // each segment's live keys, the ends stored as 0 here.
  RowSegments live = row;
  Segment live_segs[KeptKeys::kMaxIntervals + 1];
  void* live_outs[KeptKeys::kMaxIntervals + 1];
  if constexpr (kFindsMaskedEnds<Source>) {
    for (std::size_t j = 0; j < row.count; ++j) {
      const Segment& seg = row.segs[j];
      const auto [begin, end] = BiasLiveKeys(df, seg, ForSegment(src, seg));
      live_segs[j] = {seg.in + begin, seg.work + begin, seg.k0 + begin,
                      end - begin, seg.shift};
      live_outs[j] = row.OutAt(j, begin);
      row.StoreZeros(j, 0, begin);
      row.StoreZeros(j, end, seg.n);
    }
    live.segs = live_segs;
    live.outs = live_outs;
  }
  // One sum for the row: its horizontal reduction is paid once.
  const WideTag<DF> dd;
  auto sum_lo = hn::Zero(dd), sum_hi = hn::Zero(dd);
  if constexpr (kStoresTransformed<Source>) {
    // The transformed scores pass 1 stored: the source is not read again
    // (nor its keep bytes refilled tile by tile).
    live.ForEach(StoredScores{}, [&](const Segment& seg, void*,
                                     const StoredScores&) RLX_INLINE_LAMBDA {
      RowExp(df, Segment{seg.work, seg.work, seg.k0, seg.n}, StoredScores{},
             options, max, plain, prefetch, sum_lo, sum_hi);
    });
  } else {
    live.ForEach(src, [&](const Segment& seg, void*,
                          const Source& seg_src) RLX_INLINE_LAMBDA {
      if constexpr (kMapped<Source>) {
        if (row.map != nullptr) {
          return plain ? MappedExp<true>(df, seg, *row.map, seg_src, options,
                                         max, prefetch, sum_lo, sum_hi)
                       : MappedExp<false>(df, seg, *row.map, seg_src, options,
                                          max, prefetch, sum_lo, sum_hi);
        }
      }
      RowExp(df, seg, seg_src, options, max, plain, prefetch, sum_lo, sum_hi);
    });
  }
  float inv_sum;
  const double sum = WideTotal(dd, sum_lo, sum_hi);
  if (part != nullptr) {
    // exp(t) = stored * exp(max - shift). A NaN sum: a kept NaN score.
    if (!(sum > 0.0)) {
      *part = {kNaN, kNaN};
      StoreKeptRow(df, row, src, kNaN);
      return;
    }
    *part = {max - PlainShift(max, plain), sum};
    if (row.type == ScoreType::kF32) {  // stored in place by pass 2
      if constexpr (kMapped<Source>) {
        if (row.map != nullptr) {  // but for the empty vectors' zeros
          row.ForEach(src, [&](const Segment&, void* out, const Source&) {
            MappedZeros<ScoreType::kF32>(df, *row.map,
                                         static_cast<float*>(out));
          });
        }
      }
      return;
    }
    inv_sum = 1.0f;  // 16-bit rows: pass 3 converts the exps as they are
  } else if (!FinishSum(sum, max, plain, sink, lse, &inv_sum)) {
    StoreKeptRow(df, row, src, kNaN);
    return;
  }
  // Pass 3 normalises the stored values (16-bit rows: into the row type).
  // It reads no source: visited as NoSource, so a tiled row's keep bytes
  // are not refilled for it.
  live.ForEach(NoSource{}, [&](const Segment& seg, void* out,
                               const NoSource&) RLX_INLINE_LAMBDA {
    if constexpr (kMapped<Source>) {
      if (row.map != nullptr) return row.StoreMapped(df, seg, out, inv_sum);
    }
    row.Store(df, seg, out, inv_sum);
  });
}

// What a row's code reads besides its segments: the mask, the options,
// the row, and the per-element keep bytes when the row reads them.
struct RowCode {
  const MaskSpec* mask;
  const SoftmaxOptions* options;
  const detail::Rules* rules;
  detail::RowIndex i;
  std::size_t q_len, n;
  std::size_t m;    // the row's offset in the dense part
  bool read_bytes;  // per-element rules: keep bytes from key `origin`
  const std::uint8_t* keep_bytes;
  std::size_t origin;
  float sink;              // the head's sink logit, -inf for none
  float* lse;              // the row's row_lse entry, or null
  SoftmaxPartStats* part;  // step 1 of a split row: its statistics, or null
};

// The row of a dense bias, from the row's offset in the dense part.
HWY_INLINE const float* RowBias(const RowCode& code) {
  return static_cast<const float*>(code.mask->data) + code.m;
}

// The seam: the paths compiled in units of their own
// (src/softmax/general_row_units-inl.h, one macro per unit), so that no unit
// takes long to compile; src/softmax/row_path.h's table names the units.
void SoftmaxDenseKeepRow(const RowSegments& row, const RowCode& code,
                         detail::RowPrefetch& prefetch);
void SoftmaxKeepByteRow(const RowSegments& row, const RowCode& code,
                        detail::RowPrefetch& prefetch);
void SoftmaxAlibiRow(const RowSegments& row, const RowCode& code,
                     detail::RowPrefetch& prefetch);
void SoftmaxAlibiExplicitRow(const RowSegments& row, const RowCode& code,
                             detail::RowPrefetch& prefetch);

// The softmax of a row of the general loop on the path ChooseRowPath
// (src/softmax/row_path.h) chose for it: which source its passes read.
inline void SoftmaxRow(detail::RowPath path, const RowSegments& row,
                       const RowCode& code, detail::RowPrefetch& prefetch) {
  using detail::RowPath;
  const hn::ScalableTag<float> df;
  const SoftmaxOptions& options = *code.options;
  switch (path) {
    case RowPath::kDenseOnlyF32:
      // A dense bias alone is the bias path's BiasSource.
      if (code.rules->dense == DenseKind::kBias) break;
      return SoftmaxDenseKeepRow(row, code, prefetch);
    case RowPath::kDenseKeep:
      return SoftmaxDenseKeepRow(row, code, prefetch);
    case RowPath::kKeepBytes:
    case RowPath::kKeepByteTiles:
    case RowPath::kVectorMap:  // row.map set by the loop
      return SoftmaxKeepByteRow(row, code, prefetch);
    case RowPath::kAlibiImplicit:
      return SoftmaxAlibiRow(row, code, prefetch);
    case RowPath::kAlibiExplicit:
      return SoftmaxAlibiExplicitRow(row, code, prefetch);
    case RowPath::kBias:
      break;
    case RowPath::kIntervals:
      return SoftmaxSegments(df, row, NoSource{}, options, code.sink, code.lse,
                             code.part, prefetch);
    case RowPath::kPlainBatch:
    case RowPath::kPlainAlibiBatch:
    case RowPath::kDecodeRun:
    case RowPath::kPlainHandOff:
    case RowPath::kKeyList:  // the list kernels', a whole call
    case RowPath::kBlockList:
      HWY_DASSERT(false);  // never a general row's path
      return;
  }
  SoftmaxSegments(df, row, BiasSource{RowBias(code)}, options, code.sink,
                  code.lse, code.part, prefetch);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
