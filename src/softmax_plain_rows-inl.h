// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax of plain rows: rows that read no mask source (every key of
// their kept intervals is kept; no bias, softcap or ALiBi) and take the
// plain exp argument. Decode heads, causal and sliding-window rows.
// Consecutive rows run as a batch, pass by pass: every row's maximum, then
// every row's exps, then every row's normalisation. A row's passes are
// chains (the horizontal maximum feeds its exps, the sum's reduction and
// divide feed its normalisation); on a short row they, not the arithmetic,
// set the time. In a batch the next row's independent work fills them.
// 16-bit rows are converted into an f32 scratch first (their maximum taken
// on the way), and pass 3 converts back. Re-included per target by
// src/softmax_rows.cc; src/softmax_rows-inl.h chooses the rows.
//
// A row's arithmetic does not depend on its batch: a row's result never
// depends on its neighbours, on the row range of a call, or on the threads
// a call is split over. Nor on its address: rows are read and written
// unaligned, with no partial head vector per segment (on short rows the
// heads cost 5-8%).

#if defined(RLX_SRC_SOFTMAX_PLAIN_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_PLAIN_ROWS_INL_H_
#undef RLX_SRC_SOFTMAX_PLAIN_ROWS_INL_H_
#else
#define RLX_SRC_SOFTMAX_PLAIN_ROWS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/row_convert-inl.h"
#include "src/row_prefetch.h"
#include "src/softmax_exp-inl.h"
#include "src/softmax_passes-inl.h"
#include "src/softmax_row-inl.h"
#include "src/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of at most kPlainRowKeys kept keys are plain (longer ones have
// little fixed cost to save, and prefetch better row by row). At most
// kPlainBatchRows rows, and kPlainBatchKeys kept keys in all, per batch:
// the batch's rows stay in L1 from one pass to the next.
constexpr std::size_t kPlainRowKeys = 1024;
constexpr std::size_t kPlainBatchRows = 8;
constexpr std::size_t kPlainBatchKeys = 4096;

// One row of a batch. The passes run over `kept` of `in` and `out` (the
// same memory for an in-place row): an f32 row itself, or a 16-bit row's
// kept keys packed into the batch's f32 scratch. Also its head's sink logit
// (-inf: none), its row_lse entry (or null), the row itself (key 0, in its
// type) and its kept intervals there; 16-bit rows carry their raw maximum,
// taken as they were converted.
struct PlainRow {
  KeptKeys kept;
  const float* in;
  float* out;
  float sink;
  float* lse;
  void* row;
  KeptKeys row_kept;
  float raw_max;
};

// The passes below are those of src/softmax_passes-inl.h (SegmentMax,
// SegmentExp, SegmentNormalize) cut down for rows without a mask source,
// and are kept separate on purpose: calling those per kept interval with
// the aligning head turned off (the same sums, the same results) measured
// D1head16 1.23x, D1 and P1 1.09x, D2w 1.04x slower (AVX3, 5 alternated
// runs), the cost of their eight max accumulators, per-step prefetch and
// partial-vector paths on rows of a few vectors.
//
// Pass 1: the raw maximum of the kept keys, four accumulators.
template <class DF>
HWY_INLINE float PlainRowMax(DF df, const KeptKeys& kept,
                             const float* HWY_RESTRICT in) {
  using V = hn::Vec<DF>;
  const std::size_t N = hn::Lanes(df);
  const V neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  V m0 = neg_inf, m1 = neg_inf, m2 = neg_inf, m3 = neg_inf;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t k = kept.intervals[j].begin;
    for (; k + 4 * N <= end; k += 4 * N) {
      m0 = hn::Max(m0, hn::LoadU(df, in + k));
      m1 = hn::Max(m1, hn::LoadU(df, in + k + N));
      m2 = hn::Max(m2, hn::LoadU(df, in + k + 2 * N));
      m3 = hn::Max(m3, hn::LoadU(df, in + k + 3 * N));
    }
    for (; k + N <= end; k += N) m0 = hn::Max(m0, hn::LoadU(df, in + k));
    if (k < end) {
      const std::size_t count = end - k;
      m1 = hn::Max(
          m1, hn::IfThenElse(hn::FirstN(df, count),
                             LoadRowTail<ScoreType::kF32>(df, in + k, count),
                             neg_inf));
    }
  }
  return MaxOfLanesExact(df, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)));
}

// Pass 2: out = exp(in scale - max) on the kept keys (the plain argument:
// one FMA), returning their sum. The sums are SegmentExp's: four f32 sums
// of kBlock steps of four vectors, widened into f64, so the error bound of
// docs/KERNELS.md holds unchanged.
template <class DF>
HWY_INLINE double PlainRowExp(DF df, const KeptKeys& kept, const float* in,
                              float* out, float scale, float max,
                              detail::RowPrefetch* prefetch) {
  using V = hn::Vec<DF>;
  const WideTag<DF> dd;
  const std::size_t N = hn::Lanes(df);
  constexpr std::size_t kBlock = 4;
  const V log2e = hn::Set(df, static_cast<float>(scale * kLog2e));
  const V bias = hn::Set(df, NegMaxLog2e(max));
  auto lo = hn::Zero(dd), hi = lo;
  const auto exp_store = [&](std::size_t k) RLX_INLINE_LAMBDA {
    const V e = SoftmaxExp2(df, hn::MulAdd(hn::LoadU(df, in + k), log2e, bias));
    hn::StoreU(e, df, out + k);
    return e;
  };
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t k = kept.intervals[j].begin;
    while (k + 4 * N <= end) {
      V s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
      for (std::size_t step = 0; step < kBlock && k + 4 * N <= end;
           ++step, k += 4 * N) {
        s0 = hn::Add(s0, exp_store(k));
        s1 = hn::Add(s1, exp_store(k + N));
        s2 = hn::Add(s2, exp_store(k + 2 * N));
        s3 = hn::Add(s3, exp_store(k + 3 * N));
        if (prefetch != nullptr) prefetch->Step();
      }
      AddWide(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), lo, hi);
    }
    V rest = hn::Zero(df);
    for (; k + N <= end; k += N) rest = hn::Add(rest, exp_store(k));
    if (k < end) {
      const std::size_t count = end - k;
      const V e = hn::IfThenElseZero(
          hn::FirstN(df, count),
          SoftmaxExp2(
              df, hn::MulAdd(LoadRowTail<ScoreType::kF32>(df, in + k, count),
                             log2e, bias)));
      StoreRowTail<ScoreType::kF32>(df, e, out + k, count);
      rest = hn::Add(rest, e);
    }
    AddWide(df, rest, lo, hi);
  }
  return WideTotal(dd, lo, hi);
}

// Pass 3: out *= inv_sum on the kept keys.
template <class DF>
HWY_INLINE void PlainRowNormalize(DF df, const KeptKeys& kept, float* out,
                                  float inv_sum) {
  const std::size_t N = hn::Lanes(df);
  const auto inv = hn::Set(df, inv_sum);
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t k = kept.intervals[j].begin;
    for (; k + 4 * N <= end; k += 4 * N) {
      const auto v0 = hn::LoadU(df, out + k);
      const auto v1 = hn::LoadU(df, out + k + N);
      const auto v2 = hn::LoadU(df, out + k + 2 * N);
      const auto v3 = hn::LoadU(df, out + k + 3 * N);
      hn::StoreU(hn::Mul(v0, inv), df, out + k);
      hn::StoreU(hn::Mul(v1, inv), df, out + k + N);
      hn::StoreU(hn::Mul(v2, inv), df, out + k + 2 * N);
      hn::StoreU(hn::Mul(v3, inv), df, out + k + 3 * N);
    }
    for (; k + N <= end; k += N) {
      hn::StoreU(hn::Mul(hn::LoadU(df, out + k), inv), df, out + k);
    }
    if (k < end) {
      const std::size_t count = end - k;
      StoreRowTail<ScoreType::kF32>(
          df, hn::Mul(LoadRowTail<ScoreType::kF32>(df, out + k, count), inv),
          out + k, count);
    }
  }
}

// The softmax of `count` (<= kPlainBatchRows) rows of type kType, pass by
// pass; `prefetch`
// (or null) steps once per exp step. Returns a bit per row that it did not
// take: rows whose maximum is not finite, or too large for the plain argument;
// nothing of theirs is written, and the caller runs them with the general code.
template <ScoreType kType, class DF>
HWY_NOINLINE unsigned PlainRows(DF df, const PlainRow* rows, std::size_t count,
                                const SoftmaxOptions& options,
                                detail::RowPrefetch* prefetch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float max[kPlainBatchRows];
  for (std::size_t g = 0; g < count; ++g) {
    max[g] = kType == ScoreType::kF32
                 ? PlainRowMax(df, rows[g].kept, rows[g].in)
                 : rows[g].raw_max;
  }
  unsigned general = 0;
  for (std::size_t g = 0; g < count; ++g) {
    // As RowMax and SoftmaxSegments decide: the scale applies to the raw
    // maximum alone (scale >= 0), and the sink joins it.
    const float scaled = options.scale * max[g];
    max[g] = std::max(scaled, rows[g].sink);
    if (!(std::fabs(scaled) < kInf) || !PlainArgument(max[g], options)) {
      general |= 1u << g;
    }
  }
  double sum[kPlainBatchRows];
  for (std::size_t g = 0; g < count; ++g) {
    if (general & (1u << g)) continue;
    sum[g] = PlainRowExp(df, rows[g].kept, rows[g].in, rows[g].out,
                         options.scale, max[g], prefetch);
  }
  // Every reciprocal before any normalisation: their divides overlap.
  float inv_sum[kPlainBatchRows];
  unsigned nan = 0;
  for (std::size_t g = 0; g < count; ++g) {
    if (general & (1u << g)) continue;
    if (!FinishSum(sum[g], max[g], /*plain=*/true, rows[g].sink, rows[g].lse,
                   &inv_sum[g])) {
      nan |= 1u << g;
    }
  }
  for (std::size_t g = 0; g < count; ++g) {
    if (general & (1u << g)) continue;
    const KeptKeys& kept = rows[g].row_kept;
    auto* row = static_cast<Elem<kType>*>(rows[g].row);
    if (nan & (1u << g)) {
      const Elem<kType> value =
          ElemFromF32<kType>(std::numeric_limits<float>::quiet_NaN());
      for (std::size_t j = 0; j < kept.count; ++j) {
        FillRun<kType>(row, kept.intervals[j].begin, kept.intervals[j].end,
                       value);
      }
    } else if constexpr (kType == ScoreType::kF32) {
      PlainRowNormalize(df, kept, row, inv_sum[g]);
    } else {
      // Into the row type, interval by interval from the packed scratch.
      for (std::size_t j = 0; j < kept.count; ++j) {
        SegmentNormalize<kType>(df,
                                rows[g].out + rows[g].kept.intervals[j].begin,
                                row + kept.intervals[j].begin,
                                kept.intervals[j].size(), inv_sum[g]);
      }
    }
  }
  return general;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
