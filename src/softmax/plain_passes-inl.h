// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax of plain rows: rows that read no mask source (every key of
// their kept intervals is kept; no bias or softcap) and take the plain exp
// argument. Decode heads, causal and sliding-window rows. With ALiBi over
// implicit key positions (kAlibi) they take its term, exactly as
// AlibiSource<NoSource, ImplicitKeyDistance> does on the general path, for
// their maximum, and the plain argument's form for their exps (below).
// Consecutive rows run as a batch, pass by pass: every row's maximum, then
// every row's exps, then every row's normalisation. A row's passes are
// chains (the horizontal maximum feeds its exps, the sum's reduction and
// divide feed its normalisation); on a short row they, not the arithmetic,
// set the time. In a batch the next row's independent work fills them.
// 16-bit rows are converted into an f32 scratch first (their maximum taken
// on the way), or on AVX-512 as passes 1 and 2 load them
// (kPlainConvertOnLoad); pass 3 converts back. Re-included per target by
// src/softmax/row_loop.cc; src/softmax/plain_loop-inl.h gathers the batches.
//
// A row's arithmetic does not depend on its batch: a row's result never
// depends on its neighbours, on the row range of a call, or on the threads
// a call is split over. Nor on its address: rows are read and written
// unaligned, with no partial head vector per segment (on short rows the
// heads cost more than they save).

#if defined(RLX_SRC_SOFTMAX_PLAIN_PASSES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_PLAIN_PASSES_INL_H_
#undef RLX_SRC_SOFTMAX_PLAIN_PASSES_INL_H_
#else
#define RLX_SRC_SOFTMAX_PLAIN_PASSES_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of type kType with at most kPlainRowKeys<kType> kept keys are plain.
// At most kPlainBatchRows rows, and kPlainBatchKeys<kType> kept keys in
// all, per batch: the batch's rows stay in L1 from one pass to the next.
// f32 rows: batches of 8192 kept keys (32 KiB in place), and rows of up to
// a third of that, so that a batch takes at least three: long rows gain from
// the batch, not from the plain passes. 16-bit rows: batches of 4096 keys
// and rows of at most 1024, so that their scratch stays 16 KiB (on AVX2 it
// holds their converted keys too). Where rows run one by one (tensors from
// memory, src/softmax/plain_loop-inl.h), f32 rows too are plain up to
// kShortPlainRowKeys only: longer ones were slower as plain rows there.
constexpr std::size_t kPlainBatchRows = 8;
constexpr std::size_t kShortPlainRowKeys = 1024;
template <ScoreType kType>
constexpr std::size_t kPlainBatchKeys = kType == ScoreType::kF32 ? 8192 : 4096;
template <ScoreType kType>
constexpr std::size_t kPlainRowKeys =
    kType == ScoreType::kF32 ? kPlainBatchKeys<kType> / 3 : kShortPlainRowKeys;

// Where 16-bit plain rows are converted to f32: on AVX-512 as passes 1 and
// 2 load them from the row (twice, but with no pass, store or reload of
// their own), elsewhere into the batch's f32 scratch as they join it (their
// maximum taken on the way). On AVX-512 that, with the carried pass 1 a
// pass 1 without stores allows, is faster on decode rows; AVX2, whose
// vectors are half as wide, pays the second conversion in its exp-bound
// pass 2.
constexpr bool kPlainConvertOnLoad =
    HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;

// The element type passes 1 and 2 load: the row's, or f32 from the scratch.
template <ScoreType kType>
constexpr ScoreType kPlainLoadType =
    kPlainConvertOnLoad ? kType : ScoreType::kF32;

// One row of a batch. Pass 1 reads `in` over `in_kept`, as kPlainLoadType,
// and so does pass 2 (ALiBi rows: see below); pass 2 writes its f32 exps to
// `out` over `kept`. For f32 rows `in` is the input row and `out` the
// output row (the same memory in place), both over its kept intervals
// `row_kept`. For 16-bit rows `out` is the batch's f32 scratch, over
// `packed` (row_kept's intervals packed one after another), which pass 3
// converts back into the row; `in` is the input row over row_kept
// (kPlainConvertOnLoad) or the scratch, converted, over packed, with the
// keys' raw maximum. Also its head's sink logit (-inf: none), its row_lse
// entry (or null) and the output row itself (key 0, in its type).
//
// ALiBi rows carry their term: the first key of kept interval j is at the
// signed distance first[j] = p_q - shift - key from the query (the Decode
// token's slot sits at position past: its own shift), and each next key one
// less; the term is neg_slope |distance|. The distances are exact integers
// in f32 (a row whose distances reach 2^24 is not plain), so stepping a
// vector of them by N per vector gives exactly the f32 distances
// ImplicitKeyDistance computes per vector on the general path: the same
// maximum, at one subtraction per vector. Pass 1 stores each key's
// transformed score t into `work` over `work_kept`, and pass 2 takes its
// exps from there, as the general path's StoredScores does: no distance or
// term computed twice. f32 rows store t in place in their output row, over
// their kept keys: a separate scratch added up to 8 KiB to the L1 footprint
// of a batch (its rows, and the next batch's prefetched). A row handed off
// after pass 1 (kPlainHandOff, PlainMaxima) has then lost its scores in an
// in-place call: the general code finishes it from its t (HandOff,
// src/softmax/plain_loop-inl.h).
// 16-bit rows store t into the batch's f32 scratch, over `packed`, where
// their exps go.
struct PlainAlibi {
  float neg_slope;
  float first[KeptKeys::kMaxIntervals];
};

// Below this magnitude every distance is an exact f32 integer (and so is
// every step of one), less a vector's lanes of margin.
constexpr double kExactDistance = 0x1p24 - 1024;

// A Decode row's token key joins the vector before it. When a row's last
// kept interval is one key (the token) and the interval before it ends in
// a partial vector (count keys, 0 < count < N), rows without ALiBi (f32
// rows; 16-bit rows in the scratch or converted on load) read the token
// into that vector's free lanes (every lane from count on): passes 1 and 2
// take both in one vector, one exp, with no pass over an interval of its
// own. Pass 2's sum takes lane count alone of the token's lanes, so
// each lane of its last sum still adds at most four values
// (docs/KERNELS.md). Pass 3 runs the token as before: its one-key tail is
// one product either way. Whether interval j of `kept` takes it:
template <class DF>
HWY_INLINE bool TakesToken(DF df, const KeptKeys& kept, std::size_t j) {
  return j + 2 == kept.count && kept.intervals[j + 1].size() == 1 &&
         kept.intervals[j].size() % hn::Lanes(df) != 0;
}

struct PlainRow {
  const KeptKeys* kept;  // row_kept (f32 rows) or &packed (16-bit rows)
  const void* in;
  const KeptKeys* in_kept;  // row_kept or &packed
  float* out;
  float* lse;
  void* row;
  const KeptKeys* row_kept;  // shared by the rows of one batch and query
  float* work;  // ALiBi rows: their transformed scores, over work_kept
  const KeptKeys* work_kept;  // row_kept (f32 rows) or &packed
  KeptKeys packed;            // 16-bit rows: their kept keys in the scratch
  float sink;
  float raw_max;     // 16-bit rows converted into the scratch
  PlainAlibi alibi;  // kAlibi rows only
};

// The ALiBi term of pass 1, over a run of keys whose distances d share one
// sign (PlainRowMax): Distances(df, first) is the vector of the run's first
// N signed distances, Next(df, d, i) those i vectors further on, and the
// term is d times the run's signed slope, neg_slope or -neg_slope: exactly
// neg_slope |d| (a sign flip is exact), with no Abs per vector. Scalars
// only: SVE vectors
// cannot be class members (the compiler hoists the Sets out of the loops).
struct PlainTerm {
  float scale;
  float slope;  // the run's; a copy (stores of t might alias the row's)
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Distances(DF df, float first) {
    return hn::Sub(hn::Set(df, first), hn::Iota(df, 0));
  }
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Next(DF df, hn::Vec<DF> d,
                                     std::size_t vectors) {
    return hn::Sub(d, hn::Set(df, static_cast<float>(vectors * hn::Lanes(df))));
  }
  // x scale plus the term of distances d.
  template <class DF>
  HWY_INLINE hn::Vec<DF> Transformed(DF df, hn::Vec<DF> x,
                                     hn::Vec<DF> d) const {
    return hn::MulAdd(d, hn::Set(df, slope), hn::Mul(x, hn::Set(df, scale)));
  }
};

// The passes below are those of src/softmax/softmax_passes-inl.h (SegmentMax,
// SegmentExp, SegmentNormalize) cut down for rows without a mask source,
// and are kept separate on purpose: calling those per kept interval with
// the aligning head turned off (the same sums, the same results) was
// slower on short rows: the cost of their eight max accumulators, per-step
// prefetch and partial-vector paths on rows of a few vectors.
//
// Pass 1: the raw maximum of the kept keys, four accumulators. kAlibi: the
// maximum of the transformed scores t, x scale plus the ALiBi term, each t
// stored into row.work over row.work_kept (in place where `in` is the work:
// f32 rows in an in-place call, 16-bit rows converted beforehand).
template <ScoreType kType, bool kAlibi, class DF>
HWY_INLINE float PlainRowMax(DF df, const PlainRow& row, float scale) {
  using V = hn::Vec<DF>;
  const std::size_t N = hn::Lanes(df);
  constexpr ScoreType kLoad = kPlainLoadType<kType>;
  const KeptKeys& kept = *row.in_kept;
  const V neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  V m0 = neg_inf, m1 = neg_inf, m2 = neg_inf, m3 = neg_inf;
  const auto* in = static_cast<const Elem<kLoad>*>(row.in);
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t begin = kept.intervals[j].begin;
    const std::size_t end = kept.intervals[j].end;
    if constexpr (kAlibi) {
      // Key k: in[k], its t into t_out[k - begin]. Keys [k, run_end) from
      // distance d_first on, each next one less, with the term's `slope`.
      float* t_out = row.work + row.work_kept->intervals[j].begin;
      const auto run = [&](std::size_t k, std::size_t run_end, float d_first,
                           float slope) RLX_INLINE_LAMBDA {
        const PlainTerm term{scale, slope};
        const auto at = [&](std::size_t key, V d) RLX_INLINE_LAMBDA {
          const V t = term.Transformed(df, LoadRow<kLoad>(df, in + key), d);
          hn::StoreU(t, df, t_out + (key - begin));
          return t;
        };
        V d = PlainTerm::Distances(df, d_first);
        for (; k + 4 * N <= run_end;
             k += 4 * N, d = PlainTerm::Next(df, d, 4)) {
          m0 = hn::Max(m0, at(k, d));
          m1 = hn::Max(m1, at(k + N, PlainTerm::Next(df, d, 1)));
          m2 = hn::Max(m2, at(k + 2 * N, PlainTerm::Next(df, d, 2)));
          m3 = hn::Max(m3, at(k + 3 * N, PlainTerm::Next(df, d, 3)));
        }
        for (; k + N <= run_end; k += N, d = PlainTerm::Next(df, d, 1)) {
          m0 = hn::Max(m0, at(k, d));
        }
        if (k < run_end) {
          const std::size_t count = run_end - k;
          const V t =
              term.Transformed(df, LoadRowTail<kLoad>(df, in + k, count), d);
          StoreRowTail<ScoreType::kF32>(df, t, t_out + (k - begin), count);
          m1 = hn::Max(m1, hn::IfThenElse(hn::FirstN(df, count), t, neg_inf));
        }
      };
      // The keys up to the query (distance >= 0), then those past it: runs
      // of one sign, whose term neg_slope |d| is neg_slope d in the first
      // and -neg_slope d in the second.
      const float first = row.alibi.first[j];
      const std::size_t ahead =
          first < 0.0f
              ? 0
              : std::min(end - begin, static_cast<std::size_t>(first) + 1);
      run(begin, begin + ahead, first, row.alibi.neg_slope);
      run(begin + ahead, end, first - static_cast<float>(ahead),
          -row.alibi.neg_slope);
      continue;
    }
    std::size_t k = begin;
    if constexpr (kLoad == ScoreType::kBF16) {
      // bf16 converted on load: each full load gives two vectors, its even
      // and odd keys apart (a maximum needs no order), with no widening
      // shuffle.
      for (; k + 4 * N <= end; k += 4 * N) {
        V even0, odd0, even1, odd1;
        LoadBF16EvenOdd(df, in + k, even0, odd0);
        LoadBF16EvenOdd(df, in + k + 2 * N, even1, odd1);
        m0 = hn::Max(m0, even0);
        m1 = hn::Max(m1, odd0);
        m2 = hn::Max(m2, even1);
        m3 = hn::Max(m3, odd1);
      }
    } else {
      for (; k + 4 * N <= end; k += 4 * N) {
        m0 = hn::Max(m0, LoadRow<kLoad>(df, in + k));
        m1 = hn::Max(m1, LoadRow<kLoad>(df, in + k + N));
        m2 = hn::Max(m2, LoadRow<kLoad>(df, in + k + 2 * N));
        m3 = hn::Max(m3, LoadRow<kLoad>(df, in + k + 3 * N));
      }
    }
    for (; k + N <= end; k += N) m0 = hn::Max(m0, LoadRow<kLoad>(df, in + k));
    if (k < end) {
      const std::size_t count = end - k;
      const V x = LoadRowTail<kLoad>(df, in + k, count);
      if (TakesToken(df, kept, j)) {
        m1 = hn::Max(m1,
                     hn::IfThenElse(hn::FirstN(df, count), x,
                                    LoadRowBroadcast<kLoad>(
                                        df, in + kept.intervals[j + 1].begin)));
        break;
      }
      m1 = hn::Max(m1, hn::IfThenElse(hn::FirstN(df, count), x, neg_inf));
    }
  }
  return MaxOfLanesExact(df, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)));
}

// Pass 2: out = exp(x - max) on the kept keys, returning their sum. x is
// the row's raw key times the call's scale, read from `in` over `in_kept`,
// or (kStored: ALiBi rows) the t pass 1 stored into `work` over
// `work_kept` (f32 rows: the keys' own places in the output row).
// The argument is the plain one, one FMA: x (scale log2 e) + (-max log2 e),
// or for stored t, t log2 e + (-max log2 e) (the general path's
// StoredScores argument, so the same exp as there). The sums are
// SegmentExp's: four f32 sums of kLaneSumValues steps of four vectors, widened
// into f64, so the error bound of docs/KERNELS.md holds unchanged.
template <ScoreType kType, bool kStored, class DF>
HWY_INLINE double PlainRowExp(DF df, const PlainRow& row, float scale,
                              float max, detail::RowPrefetch* prefetch) {
  using V = hn::Vec<DF>;
  const WideTag<DF> dd;
  const std::size_t N = hn::Lanes(df);
  const V log2e =
      hn::Set(df, static_cast<float>((kStored ? 1.0f : scale) * kLog2e));
  const V bias = hn::Set(df, NegMaxLog2e(max));
  const auto exp_of = [&](V x) RLX_INLINE_LAMBDA {
    return SoftmaxExp2(df, hn::MulAdd(x, log2e, bias));
  };
  // Interval j's keys k in [0, end) from `in` and `out`.
  constexpr ScoreType kLoad = kStored ? ScoreType::kF32 : kPlainLoadType<kType>;
  const auto* in_row = static_cast<const Elem<kLoad>*>(
      kStored ? static_cast<const void*>(row.work) : row.in);
  const KeptKeys& in_kept = kStored ? *row.work_kept : *row.in_kept;
  const Elem<kLoad>* in;
  float* out;
  const auto exp_store = [&](std::size_t k) RLX_INLINE_LAMBDA {
    const V e = exp_of(LoadRow<kLoad>(df, in + k));
    hn::StoreU(e, df, out + k);
    return e;
  };
  auto lo = hn::Zero(dd), hi = lo;
  for (std::size_t j = 0; j < row.kept->count; ++j) {
    in = in_row + in_kept.intervals[j].begin;
    out = row.out + row.kept->intervals[j].begin;
    const std::size_t end = row.kept->intervals[j].size();
    std::size_t k = 0;
    while (k + 4 * N <= end) {
      V s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
      for (std::size_t step = 0; step < kLaneSumValues && k + 4 * N <= end;
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
      if constexpr (!kStored) {
        if (TakesToken(df, *row.kept, j)) {
          const V e = exp_of(hn::IfThenElse(
              hn::FirstN(df, count), LoadRowTail<kLoad>(df, in + k, count),
              LoadRowBroadcast<kLoad>(
                  df, in_row + in_kept.intervals[j + 1].begin)));
          StoreRowTail<ScoreType::kF32>(df, e, out + k, count);
          row.out[row.kept->intervals[j + 1].begin] =
              hn::GetLane(hn::Reverse(df, e));
          AddWide(
              df,
              hn::Add(rest, hn::IfThenElseZero(hn::FirstN(df, count + 1), e)),
              lo, hi);
          break;
        }
      }
      const V e = hn::IfThenElseZero(
          hn::FirstN(df, count), exp_of(LoadRowTail<kLoad>(df, in + k, count)));
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

// Pass 1 of a batch: each row's maximum, with its sink, and a bit per row
// handed off to the general code (kPlainHandOff: its maximum is not finite, or
// too large for the plain argument).
struct PlainMaxima {
  float max[kPlainBatchRows];
  unsigned handed_off = 0;
};

// Pass 1 of row g of `rows` into *maxima.
template <ScoreType kType, bool kAlibi, class DF>
HWY_INLINE void PlainRowMaxOf(DF df, const PlainRow* rows, std::size_t g,
                              const SoftmaxOptions& options,
                              PlainMaxima* maxima) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // Rows whose pass 1 loads their keys here; the others (16-bit rows in
  // the scratch) took their maximum as they were converted.
  const float raw = kPlainLoadType<kType> == kType || kAlibi
                        ? PlainRowMax<kType, kAlibi>(df, rows[g], options.scale)
                        : rows[g].raw_max;
  // As RowMax and SoftmaxSegments decide: the scale applies to the raw
  // maximum alone (scale >= 0; ALiBi's maximum is already transformed), and
  // the sink joins it.
  const float scaled = kAlibi ? raw : options.scale * raw;
  const float max = std::max(scaled, rows[g].sink);
  maxima->max[g] = max;
  // ALiBi rows' exps take the stored t, under the stored argument's limit.
  if (!(std::fabs(scaled) < kInf) ||
      !(kAlibi ? PlainArgumentMax(max) : PlainArgument(max, options))) {
    maxima->handed_off |= 1u << g;
  }
}

// Pass 3 of a row whose exps summed to 1 / inv_sum (nan: to NaN, a kept
// NaN score: NaN on every kept key, as plain softmax gives).
template <ScoreType kType, class DF>
HWY_INLINE void PlainRowNormalizeOf(DF df, const PlainRow& plain_row,
                                    float inv_sum, bool nan) {
  const KeptKeys& kept = *plain_row.row_kept;
  auto* row = static_cast<Elem<kType>*>(plain_row.row);
  if (nan) {
    const Elem<kType> value =
        ElemFromF32<kType>(std::numeric_limits<float>::quiet_NaN());
    for (std::size_t j = 0; j < kept.count; ++j) {
      FillRun<kType>(row, kept.intervals[j].begin, kept.intervals[j].end,
                     value);
    }
  } else if constexpr (kType == ScoreType::kF32) {
    PlainRowNormalize(df, kept, row, inv_sum);
  } else {
    // Into the row type, interval by interval from the packed scratch.
    for (std::size_t j = 0; j < kept.count; ++j) {
      SegmentNormalize<kType>(
          df, plain_row.out + plain_row.kept->intervals[j].begin,
          row + kept.intervals[j].begin, kept.intervals[j].size(), inv_sum);
    }
  }
}

// The softmax of `count` (<= kPlainBatchRows) rows of type kType, pass by
// pass: every row's maximum, every row's exps, every reciprocal (their
// divides overlap), every normalisation. `prefetch` (or null) steps once per
// exp step. Returns the bits of the rows that left (PlainMaxima): nothing
// of theirs is written, and the caller runs them with the general code.
template <ScoreType kType, bool kAlibi, class DF>
HWY_NOINLINE unsigned PlainRows(DF df, const PlainRow* rows, std::size_t count,
                                const SoftmaxOptions& options,
                                detail::RowPrefetch* prefetch) {
  PlainMaxima maxima;
  for (std::size_t g = 0; g < count; ++g) {
    PlainRowMaxOf<kType, kAlibi>(df, rows, g, options, &maxima);
  }
  const unsigned handed_off = maxima.handed_off;
  double sum[kPlainBatchRows];
  for (std::size_t g = 0; g < count; ++g) {
    if (handed_off & (1u << g)) continue;
    sum[g] = PlainRowExp<kType, kAlibi>(df, rows[g], options.scale,
                                        maxima.max[g], prefetch);
  }
  float inv_sum[kPlainBatchRows];
  unsigned nan = 0;
  for (std::size_t g = 0; g < count; ++g) {
    if (handed_off & (1u << g)) continue;
    if (!FinishSum(sum[g], maxima.max[g], /*plain=*/true, rows[g].sink,
                   rows[g].lse, &inv_sum[g])) {
      nan |= 1u << g;
    }
  }
  for (std::size_t g = 0; g < count; ++g) {
    if (handed_off & (1u << g)) continue;
    PlainRowNormalizeOf<kType>(df, rows[g], inv_sum[g], (nan >> g) & 1u);
  }
  return handed_off;
}

// PlainRows for a batch whose pass 1 is done (`maxima`), carrying the next
// batch's: its `next_count` rows (`next`) take their pass 1 here, into
// *next_maxima, one row between two of this batch's exps. A batch's pass 1
// reads its rows from L2 when they outgrow L1 (a decode step's), and alone
// it has no arithmetic to hide the reads behind; beside these exps the
// out-of-order core overlaps them, as it does for a plain softmax run row
// by row, while each row's own passes stay a whole batch apart (a short
// row's chains need that). No row's arithmetic changes.
template <ScoreType kType, class DF>
HWY_NOINLINE void PlainRowsCarrying(
    DF df, const PlainRow* rows, std::size_t count,
    const SoftmaxOptions& options, const PlainMaxima& maxima,
    const PlainRow* next, std::size_t next_count, PlainMaxima* next_maxima) {
  const unsigned handed_off = maxima.handed_off;
  float inv_sum[kPlainBatchRows];
  unsigned nan = 0;
  for (std::size_t g = 0; g < std::max(count, next_count); ++g) {
    if (g < next_count) {
      PlainRowMaxOf<kType, false>(df, next, g, options, next_maxima);
    }
    if (g >= count || (handed_off & (1u << g))) continue;
    const double sum = PlainRowExp<kType, false>(df, rows[g], options.scale,
                                                 maxima.max[g], nullptr);
    if (!FinishSum(sum, maxima.max[g], /*plain=*/true, rows[g].sink,
                   rows[g].lse, &inv_sum[g])) {
      nan |= 1u << g;
    }
  }
  for (std::size_t g = 0; g < count; ++g) {
    if (handed_off & (1u << g)) continue;
    PlainRowNormalizeOf<kType>(df, rows[g], inv_sum[g], (nan >> g) & 1u);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
