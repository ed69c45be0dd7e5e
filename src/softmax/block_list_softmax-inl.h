// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over rows of a mask with a block list (src/mask/block_list.h,
// docs/KERNELS.md "Block lists"). A row walks only its query block's listed
// key blocks, as pieces of keys: a full block's keys through the interval
// code (its source reads the bias, ALiBi, nothing else; keep bytes only
// where empty slots or segments need them), a partial block's keys within
// the rules' intervals through the keep bytes of the per-element rules.
// The passes are those of every other row (src/softmax/softmax_passes-inl.h):
// the maximum over every piece, the exps and their one sum, the
// normalisation. Keys of no listed block are never read; the default mode
// writes them 0. Re-included per target by src/softmax/block_list_softmax.cc.

#if defined(RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_INL_H_
#undef RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_INL_H_
#else
#define RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/block_list.h"
#include "src/mask/mask_rows.h"
#include "src/mask/mask_sources-inl.h"
#include "src/softmax/general_row-inl.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/softmax/softmax_rows.h"
#include "src/softmax/thread_exp_buffer.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The sink logit of head h (-inf: none), and row r's log-sum-exp entry
// (null: none).
inline float BlockListHeadSink(const SoftmaxOptions& options, std::size_t h) {
  return options.sink_logits != nullptr
             ? options.sink_logits[h]
             : -std::numeric_limits<float>::infinity();
}
inline float* BlockListRowLse(const SoftmaxOptions& options, std::size_t r) {
  return options.row_lse != nullptr ? options.row_lse + r : nullptr;
}

// Keys [begin, end) of one listed block, within the row's window for its
// kind: at most kKeepTileKeys keys, one key shift (the Decode token alone).
struct BlockPiece {
  std::size_t begin, end;
  bool full;
};

// A row's listed pieces: the blocks of `row`, full ones within
// `full_window`, partial ones within `part_window`, cut where the Decode
// token starts (`split`) and into tiles of keep bytes.
struct BlockRowPieces {
  const BlockList* list;
  detail::BlockListRow row;
  std::size_t n;
  KeptKeys full_window, part_window;
  std::size_t split;  // the Decode token's slot, or SIZE_MAX

  template <class F>
  void ForEach(const F& f) const {
    const auto visit = [&](const std::int32_t* idx, std::size_t count,
                           const KeptKeys& window, bool full) {
      for (std::size_t e = 0; e < count; ++e) {
        const KeyInterval keys = detail::KeyBlockOf(*list, idx[e], n);
        for (std::size_t w = 0; w < window.count; ++w) {
          const std::size_t a = std::max(keys.begin, window.intervals[w].begin);
          const std::size_t b = std::min(keys.end, window.intervals[w].end);
          const auto tiles = [&](std::size_t from, std::size_t to) {
            for (std::size_t t = from; t < to; t += kKeepTileKeys) {
              f(BlockPiece{t, std::min(to, t + kKeepTileKeys), full});
            }
          };
          if (a < split && split < b) {
            tiles(a, split);
            tiles(split, b);
          } else {
            tiles(a, b);
          }
        }
      }
    };
    visit(row.full, row.full_count, full_window, true);
    visit(row.partial, row.partial_count, part_window, false);
  }
};

// What a row's passes need besides its sources.
struct BlockRowCode {
  const MaskSpec* mask;
  const detail::Rules* rules;
  const SoftmaxOptions* options;
  detail::RowIndex i;
  std::size_t q_len, n;
  ScoreType type;
  const char* in;  // the row's first key, in the row type
  char* out;       // likewise
  float* work;     // 16-bit rows: f32 key k at work[k]; f32 rows: null
  std::uint8_t* keep_bytes;  // kKeepTileKeys bytes
  bool bytes_by_key;         // keep_bytes[k] holds key k's byte (rows that fit)
  bool full_bytes, part_bytes;  // which pieces read keep bytes
  KeptKeys rule_kept;           // the rules' intervals (partial blocks)
  std::int64_t token_shift;     // p_k - k of the Decode token's piece
  std::size_t split;
  float sink;
  float* lse;
  SoftmaxPartStats* part;

  std::size_t ElemBytes() const {
    return type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
  }
  Segment SegmentOf(const BlockPiece& p) const {
    const std::int64_t shift = p.begin == split ? token_shift : 0;
    if (work == nullptr) {
      const float* x = reinterpret_cast<const float*>(in) + p.begin;
      float* o = reinterpret_cast<float*>(out) + p.begin;
      return {x, o, p.begin, p.end - p.begin, shift};
    }
    return {work + p.begin, work + p.begin, p.begin, p.end - p.begin, shift};
  }
  void* OutOf(const BlockPiece& p) const { return out + p.begin * ElemBytes(); }
  bool ReadsBytes(const BlockPiece& p) const {
    return p.full ? full_bytes : part_bytes;
  }
  // The piece's keep bytes, at keep_bytes[k] or from keep_bytes[0].
  void FillBytes(const BlockPiece& p) const {
    std::uint8_t* at = keep_bytes + (bytes_by_key ? p.begin : 0);
    if (p.full) {
      detail::FullBlockKeepBytes(*mask, *rules, i, q_len, n, p.begin, p.end,
                                 at);
    } else {
      detail::PartialBlockKeepBytes(*mask, *rules, i, q_len, n, rule_kept,
                                    p.begin, p.end, at);
    }
  }
};

// Calls f(segment, out, source) for each piece, with the plain source or,
// for pieces that read keep bytes, the bytes source at the piece's origin
// (refilled per piece unless the row's bytes are held by key).
template <class PlainSrc, class BytesSrc, class F>
HWY_INLINE void ForEachPiece(const BlockRowPieces& pieces,
                             const BlockRowCode& code, const PlainSrc& plain,
                             const BytesSrc& bytes, const F& f) {
  pieces.ForEach([&](const BlockPiece& p) {
    const Segment seg = code.SegmentOf(p);
    if (!code.ReadsBytes(p)) return f(seg, code.OutOf(p), plain);
    if (code.bytes_by_key) return f(seg, code.OutOf(p), bytes);
    code.FillBytes(p);
    f(seg, code.OutOf(p), bytes.WithOrigin(p.begin));
  });
}

// The one-piece RowSegments of a segment, for the rare-case helpers of
// src/softmax/general_row-inl.h.
inline RowSegments OnePiece(const Segment& seg, void* const* out,
                            ScoreType type) {
  return RowSegments{&seg, out, 1, type, nullptr};
}

// The softmax of one row over its pieces: as SoftmaxSegments does over a
// row's segments, with two sources (plain and keep-byte pieces).
template <class PlainSrc, class BytesSrc>
HWY_NOINLINE void BlockListRowSoftmax(const BlockRowPieces& pieces,
                                      const BlockRowCode& code,
                                      const PlainSrc& plain_src,
                                      const BytesSrc& bytes_src) {
  static_assert(PlainSrc::kAdditive == BytesSrc::kAdditive);
  constexpr bool kAdditive = kStoresTransformed<PlainSrc>;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const hn::ScalableTag<float> df;
  const SoftmaxOptions& options = *code.options;
  detail::RowPrefetch prefetch;
  prefetch.Clear();
  const auto each = [&](const auto& f) {
    ForEachPiece(pieces, code, plain_src, bytes_src, f);
  };
  // The keep bytes of a row that fits the buffer, once.
  if (code.bytes_by_key) {
    pieces.ForEach([&](const BlockPiece& p) {
      if (code.ReadsBytes(p)) code.FillBytes(p);
    });
  }
  // 16-bit rows: every piece's keys in f32 first.
  if (code.work != nullptr) {
    pieces.ForEach([&](const BlockPiece& p) {
      const std::size_t count = p.end - p.begin;
      auto ignored = hn::Set(df, -kInf);
      switch (code.type) {
        case ScoreType::kBF16:
          ignored = ConvertRowToF32<ScoreType::kBF16>(
              df,
              reinterpret_cast<const Elem<ScoreType::kBF16>*>(code.in) +
                  p.begin,
              code.work + p.begin, count, ignored);
          break;
        case ScoreType::kF16:
          ignored = ConvertRowToF32<ScoreType::kF16>(
              df,
              reinterpret_cast<const Elem<ScoreType::kF16>*>(code.in) + p.begin,
              code.work + p.begin, count, ignored);
          break;
        case ScoreType::kF32:
          break;
      }
      (void)ignored;
    });
  }
  // Pass 1, then the scale and softcap on the maximum alone (RowMax).
  const bool raw = !kAdditive && options.scale >= 0.0f;
  auto max_v = hn::Set(df, -kInf);
  each([&](const Segment& seg, void*, const auto& src) {
    if constexpr (kAdditive) {
      max_v =
          SegmentMax<MaxOf::kTransformed, true>(df, seg, src, options, max_v);
    } else {
      max_v =
          raw ? SegmentMax<MaxOf::kRaw>(df, seg, src, options, max_v)
              : SegmentMax<MaxOf::kTransformed>(df, seg, src, options, max_v);
    }
  });
  float row_max = MaxOfLanesExact(df, max_v);
  const auto any_kept = [&] {
    bool any = false;
    each([&](const Segment& seg, void* out, const auto& src) {
      void* outs[] = {out};
      any = any || AnyKept(df, OnePiece(seg, outs, code.type), src);
    });
    return any;
  };
  if (raw) {
    if (row_max == -kInf && options.softcap > 0.0f && any_kept()) {
      row_max = std::numeric_limits<float>::lowest();
    }
    if (row_max != -kInf) {
      const float scaled = options.scale * row_max;
      row_max = options.softcap > 0.0f
                    ? hn::GetLane(Transform(df, hn::Set(df, scaled), 1.0f,
                                            options.softcap))
                    : scaled;
    }
  }
  const auto store_kept = [&](float value) {
    each([&](const Segment& seg, void* out, const auto& src) {
      void* outs[] = {out};
      StoreKeptRow(df, OnePiece(seg, outs, code.type), src, value);
    });
  };
  if (row_max == -kInf) {
    bool nan = false;
    each([&](const Segment& seg, void* out, const auto& src) {
      void* outs[] = {out};
      nan = nan || KeptNaN(df, OnePiece(seg, outs, code.type), src, options);
    });
    store_kept(nan ? kNaN : 0.0f);
    if (code.lse != nullptr) *code.lse = nan ? kNaN : -kInf;
    if (code.part != nullptr) {
      *code.part =
          nan ? SoftmaxPartStats{kNaN, kNaN} : SoftmaxPartStats{-kInf, 0.0};
    }
    return;
  }
  if (row_max == kInf) {
    store_kept(kNaN);
    if (code.lse != nullptr) *code.lse = kNaN;
    if (code.part != nullptr) *code.part = {kNaN, kNaN};
    return;
  }
  const float max = std::max(row_max, code.sink);
  const bool plain =
      kAdditive ? PlainArgumentMax(max) : PlainArgument(max, options);
  // Pass 2: one sum for the row.
  const WideTag<decltype(df)> dd;
  auto sum_lo = hn::Zero(dd), sum_hi = hn::Zero(dd);
  each([&](const Segment& seg, void*, const auto& src) {
    if constexpr (kAdditive) {
      (void)src;
      RowExp(df, Segment{seg.work, seg.work, seg.k0, seg.n}, StoredScores{},
             options, max, plain, prefetch, sum_lo, sum_hi);
    } else {
      RowExp(df, seg, src, options, max, plain, prefetch, sum_lo, sum_hi);
    }
  });
  const double sum = WideTotal(dd, sum_lo, sum_hi);
  float inv_sum;
  if (code.part != nullptr) {
    if (!(sum > 0.0)) {
      *code.part = {kNaN, kNaN};
      store_kept(kNaN);
      return;
    }
    *code.part = {max - PlainShift(max, plain), sum};
    if (code.type == ScoreType::kF32) return;  // the exps, in place
    inv_sum = 1.0f;  // 16-bit rows: pass 3 converts the exps as they are
  } else if (!FinishSum(sum, max, plain, code.sink, code.lse, &inv_sum)) {
    store_kept(kNaN);
    return;
  }
  // Pass 3.
  pieces.ForEach([&](const BlockPiece& p) {
    const Segment seg = code.SegmentOf(p);
    void* outs[] = {code.OutOf(p)};
    OnePiece(seg, outs, code.type).Store(df, seg, outs[0], inv_sum);
  });
}

// Keys of `keys` (a block's, within the row's part) outside the intervals
// `kept` (sorted) become 0.
template <ScoreType kType>
HWY_INLINE void ZeroOutside(Elem<kType>* o, KeyInterval keys,
                            const KeptKeys& kept) {
  std::size_t next = keys.begin;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t a = std::max(next, kept.intervals[j].begin);
    const std::size_t b = std::min(keys.end, kept.intervals[j].end);
    if (a >= b) continue;
    FillRun<kType>(o, next, a, Elem<kType>{});
    next = b;
  }
  if (next < keys.end) FillRun<kType>(o, next, keys.end, Elem<kType>{});
}

// Prefetches the listed blocks of row `next` (index and offsets): a row's
// pieces are short runs scattered over the row, which the hardware
// prefetchers do not foresee, and the next row of a query block lists the
// same blocks one row further on. Issued before this row's passes, so that
// its lines arrive over them. Out of place, the output's lines too.
constexpr std::size_t kPrefetchRows = 4;
inline void PrefetchListedBlocks(const BlockList& list, std::size_t n,
                                 const detail::RowIndex& next, const char* in,
                                 const char* out, std::size_t elem_bytes) {
  constexpr std::size_t kLine = 64;
  const detail::BlockListRow row =
      detail::BlockListRowOf(list, next.b, next.h, next.q);
  const auto fetch = [&](const std::int32_t* idx, std::size_t count) {
    for (std::size_t e = 0; e < count; ++e) {
      const KeyInterval keys = detail::KeyBlockOf(list, idx[e], n);
      const std::size_t begin = keys.begin * elem_bytes;
      const std::size_t end = keys.end * elem_bytes;
      for (std::size_t b = begin; b < end; b += kLine) {
        hwy::Prefetch(in + b);
        if (out != in) hwy::Prefetch(out + b);
        // A loop of prefetches alone has no side effect C++ sees: GCC
        // deletes it (-ffinite-loops) unless something in it must stay.
        asm volatile("" : : "r"(b));
      }
    }
  };
  fetch(row.full, row.full_count);
  fetch(row.partial, row.partial_count);
}

// Zeros on keys [begin, end) of row o, the whole 64-byte lines among them
// by non-temporal stores: the default mode's fill of a large call's
// unlisted keys, whose lines no pass has read, would otherwise read each
// line for ownership before writing it (the zeros are most of such a
// row). The caller issues hwy::FlushStream once after its rows.
template <ScoreType kType>
HWY_INLINE void StreamZeros(Elem<kType>* o, std::size_t begin,
                            std::size_t end) {
  const hn::ScalableTag<float> df;
  constexpr std::size_t kLine = 64;
  auto* first = reinterpret_cast<char*>(o + begin);
  auto* last = reinterpret_cast<char*>(o + end);
  char* line = reinterpret_cast<char*>(
      (reinterpret_cast<std::uintptr_t>(first) + kLine - 1) / kLine * kLine);
  const std::size_t vector_bytes = hn::Lanes(df) * sizeof(float);
  if (last - line < static_cast<std::ptrdiff_t>(kLine) ||
      kLine % vector_bytes != 0) {
    FillRun<kType>(o, begin, end, Elem<kType>{});
    return;
  }
  std::memset(first, 0, static_cast<std::size_t>(line - first));
  const auto zero = hn::Zero(df);
  for (; line + kLine <= last; line += kLine) {
    for (std::size_t b = 0; b < kLine; b += vector_bytes) {
      hn::Stream(zero, df, reinterpret_cast<float*>(line + b));
    }
  }
  std::memset(line, 0, static_cast<std::size_t>(last - line));
}

template <ScoreType kType>
HWY_NOINLINE void BlockListRowsOf(const ScoreView& in, const ScoreView& out,
                                  const MaskSpec& mask,
                                  const SoftmaxOptions& options, RowRange rows,
                                  const detail::RowPart* part) {
  constexpr bool f32 = kType == ScoreType::kF32;
  constexpr std::size_t elem_bytes = sizeof(Elem<kType>);
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  const detail::Rules rules = detail::RulesOf(mask);
  const BlockList& list = mask.block_list;
  // 16-bit rows in f32: key k at work[k], in the stack scratch or this
  // thread's exp buffer (had by the caller before any row was written).
  alignas(
      64) float scratch[f32 ? 1 : detail::ExpWorkFloats(detail::kStackExpKeys)];
  float* const work =
      f32 ? nullptr
          : (n <= detail::kStackExpKeys
                 ? scratch
                 : detail::ThreadExpBuffer(detail::ExpWorkFloats(n)));
  if (!f32 && work == nullptr) return;  // unreachable: the caller had it
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
  const KeyInterval keys = part != nullptr ? part->keys : KeyInterval{0, n};
  const KeptKeys all_keys{{keys}, keys.begin < keys.end ? 1u : 0u};
  const std::size_t split =
      rules.decode ? mask.upper : std::numeric_limits<std::size_t>::max();
  const bool alibi = options.alibi_slopes != nullptr;
  const bool bias = rules.dense == DenseKind::kBias;
  const auto* in_base = static_cast<const char*>(in.data);
  auto* out_base = static_cast<char*>(out.data);
  // Calls beyond the L2 and most of an L3 share stream their zeros.
  constexpr std::size_t kStreamMinBytes = 8 * 1024 * 1024;
  const bool stream_zeros =
      options.zero_masked &&
      (rows.end - rows.begin) * keys.size() * elem_bytes > kStreamMinBytes;
  detail::RowWalk walk(shape, in.strides, out.strides, mask, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end; ++r, walk.Advance()) {
    const detail::RowIndex& i = walk.index();
    const detail::RowOffsets& at = walk.at();
    auto* o = reinterpret_cast<Elem<kType>*>(out_base + at.out * elem_bytes);
    const detail::BlockListRow row =
        detail::BlockListRowOf(list, i.b, i.h, i.q);
    if (r + kPrefetchRows < rows.end) {
      detail::RowIndex ahead = i;
      for (std::size_t a = 0; a < kPrefetchRows; ++a) {
        ahead = detail::NextRowIndex(shape, ahead);
      }
      PrefetchListedBlocks(
          list, n, ahead,
          in_base + detail::RowOffset(shape, in.strides, ahead) * elem_bytes,
          out_base + detail::RowOffset(shape, out.strides, ahead) * elem_bytes,
          elem_bytes);
    }
    KeptKeys rule_kept;
    if (row.partial_count > 0) {
      rule_kept = detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n);
      detail::ClipKeptKeys(&rule_kept, keys);
    }
    // The same pieces in both modes (so the kept-only mode's values are the
    // default mode's, bit for bit): full blocks whole, partial blocks within
    // the rules' intervals, which kept_keys covers.
    const BlockRowPieces pieces{&list, row, n, all_keys, rule_kept, split};
    BlockRowCode code{&mask,
                      &rules,
                      &options,
                      i,
                      shape.q_len,
                      n,
                      kType,
                      in_base + at.in * elem_bytes,
                      reinterpret_cast<char*>(o),
                      work,
                      keep_bytes,
                      n <= kKeepTileKeys,
                      detail::FullBlocksPerElement(rules),
                      rules.per_element,
                      rule_kept,
                      rules.decode ? static_cast<std::int64_t>(mask.past) -
                                         static_cast<std::int64_t>(mask.upper)
                                   : 0,
                      split,
                      part == nullptr ? BlockListHeadSink(options, i.h)
                                      : -std::numeric_limits<float>::infinity(),
                      part == nullptr ? BlockListRowLse(options, r) : nullptr,
                      part != nullptr ? part->stats + r : nullptr};
    const float* row_bias =
        bias ? static_cast<const float*>(mask.data) + at.mask : nullptr;
    const auto run = [&](const auto& inner) {
      using Inner = std::decay_t<decltype(inner)>;
      const KeptBytesSource<Inner> bytes{keep_bytes, 0, inner};
      if (!alibi) return BlockListRowSoftmax(pieces, code, inner, bytes);
      const float neg_slope = -options.alibi_slopes[i.h];
      const std::int64_t p_q =
          detail::QueryPosition(mask, i.b, i.q, shape.q_len, n);
      if (rules.explicit_keys) {
        const ExplicitKeyDistance d{p_q, mask.k_position + i.b * n,
                                    std::numeric_limits<std::size_t>::max()};
        return BlockListRowSoftmax(
            pieces, code,
            AlibiSource<Inner, ExplicitKeyDistance>{neg_slope, d, inner},
            AlibiSource<KeptBytesSource<Inner>, ExplicitKeyDistance>{neg_slope,
                                                                     d, bytes});
      }
      const double p = static_cast<double>(p_q);
      const ImplicitKeyDistance d{p, p};
      BlockListRowSoftmax(
          pieces, code,
          AlibiSource<Inner, ImplicitKeyDistance>{neg_slope, d, inner},
          AlibiSource<KeptBytesSource<Inner>, ImplicitKeyDistance>{neg_slope, d,
                                                                   bytes});
    };
    if (bias) {
      run(BiasSource{row_bias});
    } else {
      run(NoSource{});
    }
    if (!options.zero_masked) {
      // Kept-only: a partial block's keys inside kept_keys but outside the
      // rules' intervals are written 0 too; nothing else.
      KeptKeys cover =
          detail::BlockListKeptKeys(mask, rules, i.b, i.q, shape.q_len, n);
      detail::ClipKeptKeys(&cover, keys);
      for (std::size_t e = 0; e < row.partial_count; ++e) {
        const KeyInterval block = detail::KeyBlockOf(list, row.partial[e], n);
        for (std::size_t j = 0; j < cover.count; ++j) {
          const KeyInterval inside{
              std::max(block.begin, cover.intervals[j].begin),
              std::min(block.end, cover.intervals[j].end)};
          if (inside.begin < inside.end) {
            ZeroOutside<kType>(o, inside, rule_kept);
          }
        }
      }
      continue;
    }
    // The default mode's zeros: keys of no listed block, and a partial
    // block's keys outside the rules' intervals (within the part's keys).
    detail::ForEachUnlistedRun(list, row, n,
                               [&](std::size_t begin, std::size_t end) {
                                 begin = std::max(begin, keys.begin);
                                 end = std::min(end, keys.end);
                                 if (begin >= end) return;
                                 if (stream_zeros) {
                                   StreamZeros<kType>(o, begin, end);
                                 } else {
                                   FillRun<kType>(o, begin, end, Elem<kType>{});
                                 }
                               });
    for (std::size_t e = 0; e < row.partial_count; ++e) {
      KeyInterval block = detail::KeyBlockOf(list, row.partial[e], n);
      block.begin = std::max(block.begin, keys.begin);
      block.end = std::min(block.end, keys.end);
      if (block.begin < block.end) ZeroOutside<kType>(o, block, rule_kept);
    }
  }
  if (stream_zeros) hwy::FlushStream();
}

void BlockListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                          const MaskSpec& mask, const SoftmaxOptions& options,
                          RowRange rows, const detail::RowPart* part) {
  switch (in.type) {
    case ScoreType::kF32:
      return BlockListRowsOf<ScoreType::kF32>(in, out, mask, options, rows,
                                              part);
    case ScoreType::kBF16:
      return BlockListRowsOf<ScoreType::kBF16>(in, out, mask, options, rows,
                                               part);
    case ScoreType::kF16:
      return BlockListRowsOf<ScoreType::kF16>(in, out, mask, options, rows,
                                              part);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
