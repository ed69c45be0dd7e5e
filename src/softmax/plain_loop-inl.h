// SPDX-License-Identifier: MIT OR Apache-2.0
// The plain row loop: gathers plain rows into batches for the passes of
// src/softmax/plain_passes-inl.h. Two ways through a call: decode runs
// (kDecodeRun: single-query rows without ALiBi, runs of heads that share
// their batch entry's kept intervals, taken with a stride and a counter)
// and rule rows (kPlainBatch, kPlainAlibiBatch: any query, kept intervals
// per batch and query). A row that does not fit a batch (ChooseRowPath,
// src/softmax/row_path.h) goes to the general loop, and so does a batch row
// handed off after its pass 1 (kPlainHandOff). The general loop is the
// caller's (`GeneralRows`), so that this file includes no other path's.
// Re-included per target through src/softmax/row_loop-inl.h.
//
// Whether a row is plain depends on the call's mask, options and tensor
// size and on the row alone (its kept intervals), never on the row range:
// a row's result is the same whichever range or thread it is computed in.

#if defined(RLX_SRC_SOFTMAX_PLAIN_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_PLAIN_LOOP_INL_H_
#undef RLX_SRC_SOFTMAX_PLAIN_LOOP_INL_H_
#else
#define RLX_SRC_SOFTMAX_PLAIN_LOOP_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <new>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/plain_passes-inl.h"
#include "src/softmax/row_loop_shared.h"
#include "src/softmax/row_path.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/util/row_prefetch.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// `general(in, options, rows)` runs rows through the general loop (reading
// `in`, writing the call's output).
template <ScoreType kType, class GeneralRows>
class PlainLoop {
  static constexpr bool kF32 = kType == ScoreType::kF32;
  static constexpr std::size_t kElemBytes = sizeof(Elem<kType>);

 public:
  PlainLoop(const ScoreView& in, const ScoreView& out, const MaskSpec& mask,
            const SoftmaxOptions& options, RowRange rows,
            const detail::Rules& rules, const detail::CallFacts& call,
            const GeneralRows& general)
      : in_(in),
        out_(out),
        mask_(mask),
        options_(options),
        rows_(rows),
        rules_(rules),
        call_(call),
        general_(general),
        shape_(in.shape),
        n_(in.shape.k_len),
        in_base_(static_cast<const Elem<kType>*>(in.data)),
        out_base_(static_cast<Elem<kType>*>(out.data)) {
    // Prefetch as the general loop does: calls beyond kPrefetchMinBytes (L1
    // and part of L2) fetch the next batch's rows over this one's exps.
    const std::size_t call_bytes = (rows.end - rows.begin) * n_ * kElemBytes;
    prefetch_rows_ = call_bytes > detail::kPrefetchMinBytes;
    // Rows from memory run one by one, as the general loop runs them: the
    // next row's prefetch then spreads over this row's exps.
    finish_prefetch_ = call_bytes > detail::kFinishMinBytes;
    batch_rows_ = finish_prefetch_ ? 1 : kPlainBatchRows;
    // Long rows are plain only where they batch (kPlainRowKeys): not in a
    // tensor whose rows come from memory. Decided on the whole tensor, not
    // on the row range as finish_prefetch_ is, so that a row's path (and
    // with it the last bit of its result) never depends on its range.
    plain_row_keys_ = shape_.rows() * n_ * kElemBytes > detail::kFinishMinBytes
                          ? kShortPlainRowKeys
                          : kPlainRowKeys<kType>;
  }

  HWY_INLINE void Run() {
    const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
    switch (batch_path_) {
      case detail::RowPath::kDecodeRun:
        return DecodeRuns();
      case detail::RowPath::kPlainBatch:
      case detail::RowPath::kPlainAlibiBatch:
        return RuleRows();
      case detail::RowPath::kPlainHandOff:
      case detail::RowPath::kDenseOnlyF32:
      case detail::RowPath::kDenseKeep:
      case detail::RowPath::kIntervals:
      case detail::RowPath::kBias:
      case detail::RowPath::kKeepBytes:
      case detail::RowPath::kKeepByteTiles:
      case detail::RowPath::kVectorMap:
      case detail::RowPath::kAlibiImplicit:
      case detail::RowPath::kAlibiExplicit:
      case detail::RowPath::kKeyList:
      case detail::RowPath::kBlockList:
        // Not a plain call: the caller sends it to its loop.
        return general_(in_, options_, rows_);
    }
  }

 private:
  struct BatchRow {
    std::size_t r;
    detail::RowIndex i;
  };

  // The path of a row by whether it fits a batch: one of the plain paths,
  // or the general path of its source (the general loop decides which).
  static detail::RowFacts FitFacts(bool fits) {
    detail::RowFacts facts;
    facts.fits_plain_batch = fits;
    return facts;
  }
  HWY_INLINE bool Fits(bool fits) const {
    return detail::IsPlainPath(fits ? batch_path_ : unfit_path_);
  }

  // A batch row whose pass 1 handed it off (kPlainHandOff: its maximum is
  // not finite or too large for the plain argument; nothing of it is
  // written) is finished by the general loop: from its input, or for f32
  // ALiBi rows from the t their pass 1 stored in place in the output row
  // (PlainRow): the general code's result from them with scale 1 and no
  // ALiBi is bit for bit the one it gives from the scores (StoredScores'
  // argument and maximum).
  void HandOff(const BatchRow& at) {
    detail::CountRowPaths(hand_off_path_, 1);
    if (kF32 && call_.alibi) {
      SoftmaxOptions stored = options_;
      stored.scale = 1.0f;
      stored.alibi_slopes = nullptr;
      general_(out_, stored, {at.r, at.r + 1});
    } else {
      general_(in_, options_, {at.r, at.r + 1});
    }
  }

  // After a batch's passes: the fill (its stores drain while the next rows
  // load, as in the general loop), then the rows handed off. Kept-only: a
  // plain row's passes cover its kept_keys exactly, so no masked key inside
  // them is left to write.
  void FinishBatch(const PlainRow* rows_of, const BatchRow* at,
                   std::size_t count, unsigned handed_off) {
    for (std::size_t g = 0; options_.zero_masked && g < count; ++g) {
      FillMasked<kType>(static_cast<Elem<kType>*>(rows_of[g].row), WholeRow(n_),
                        *rows_of[g].row_kept, Elem<kType>{});
    }
    for (std::size_t g = 0; handed_off != 0 && g < count; ++g) {
      if (handed_off & (1u << g)) HandOff(at[g]);
    }
  }

  // The plan of the next as many rows as the batch has, when they lie
  // within twice their own bytes (the rows of one head, or of a whole
  // decode step) and fit kMaxBatchPlanBytes; null: none. Kept-only rows:
  // no plan (a batch's plan is one span of whole rows, and the masked
  // keys' lines are never touched).
  detail::RowPrefetch* PlanNextBatch() {
    const hn::ScalableTag<float> df;
    const std::size_t next_r = batch_[batched_ - 1].r + 1;
    if (!(prefetch_rows_ && options_.zero_masked &&
          next_r + batched_ <= rows_.end)) {
      return nullptr;
    }
    detail::RowIndex first =
        detail::NextRowIndex(shape_, batch_[batched_ - 1].i);
    detail::RowIndex last = first;
    for (std::size_t g = 1; g < batched_; ++g) {
      last = detail::NextRowIndex(shape_, last);
    }
    const auto* in_first =
        in_base_ + detail::RowOffset(shape_, in_.strides, first);
    const auto* in_last =
        in_base_ + detail::RowOffset(shape_, in_.strides, last);
    auto* out_first =
        out_base_ + detail::RowOffset(shape_, out_.strides, first);
    auto* out_last = out_base_ + detail::RowOffset(shape_, out_.strides, last);
    const std::size_t span = 2 * batched_ * n_;
    if (!(in_last >= in_first && out_last >= out_first &&
          static_cast<std::size_t>(in_last - in_first) < span &&
          static_cast<std::size_t>(out_last - out_first) < span)) {
      return nullptr;
    }
    const void* begin[] = {in_first, out_first, nullptr};
    const std::size_t bytes[] = {
        (static_cast<std::size_t>(in_last - in_first) + n_) * kElemBytes,
        (static_cast<std::size_t>(out_last - out_first) + n_) * kElemBytes, 0};
    // In place, the two spans are one (Plan skips the second).
    const std::size_t plan_bytes =
        bytes[0] + (begin[1] == begin[0] ? 0 : bytes[1]);
    if (plan_bytes > detail::kMaxBatchPlanBytes) return nullptr;
    prefetch_.Plan(begin, bytes, batch_keys_ / (4 * hn::Lanes(df)));
    return &prefetch_;
  }

  // The batch's passes, then FinishBatch. The per-batch functions
  // (RunBatch, FinishBatch, PlanNextBatch, HandOff) are left to the
  // compiler: they run once per batch of rows, and forced inline their
  // bodies were copied into each of their call sites, a larger unit to
  // compile (docs/PERFORMANCE.md, "Build cost").
  void RunBatch() {
    const hn::ScalableTag<float> df;
    detail::CountRowPaths(batch_path_, batched_);
    detail::RowPrefetch* plan = PlanNextBatch();
    const unsigned handed_off =
        call_.alibi
            ? PlainRows<kType, true>(df, plain_, batched_, options_, plan)
            : PlainRows<kType, false>(df, plain_, batched_, options_, plan);
    // As in the general loop: the rest of the plan, then the fill.
    if (plan != nullptr && finish_prefetch_) prefetch_.Finish();
    FinishBatch(plain_, batch_, batched_, handed_off);
    batched_ = 0;
    batch_keys_ = 0;
  }

  // The batch row of row r (index i, at s and o), its kept intervals at
  // `row_kept`: f32 rows run in place in it (an ALiBi row's transformed
  // scores too). For 16-bit rows the scratch from float `work_at` holds
  // their kept keys packed (PlainRow): an ALiBi row's transformed scores
  // (pass 1), the row's exps, and unless kPlainConvertOnLoad, first its
  // keys converted, their maximum taken on the way (pass 1).
  HWY_INLINE void FillRow(PlainRow& row, std::size_t r, detail::RowIndex i,
                          const Elem<kType>* s, Elem<kType>* o,
                          const KeptKeys* row_kept, std::size_t work_at) {
    row.sink = detail::HeadSink(options_, i.h);
    row.lse = detail::RowLse(options_, r);
    row.row = o;
    row.row_kept = row_kept;
    row.in = s;
    row.in_kept = row_kept;
    if constexpr (kF32) {
      row.kept = row_kept;
      row.out = o;
      if (call_.alibi) {  // their t, in place over their kept keys
        row.work = o;
        row.work_kept = row_kept;
      }
    } else {
      std::size_t at = 0;
      for (std::size_t j = 0; j < row_kept->count; ++j) {
        const KeyInterval& iv = row_kept->intervals[j];
        row.packed.intervals[j] = {at, at + iv.size()};
        at += iv.size();
      }
      row.packed.count = row_kept->count;
      row.work = scratch_ + work_at;
      row.work_kept = &row.packed;
      row.kept = &row.packed;
      row.out = row.work;
      if constexpr (!kPlainConvertOnLoad) {
        const hn::ScalableTag<float> df;
        auto max = hn::Set(df, -std::numeric_limits<float>::infinity());
        for (std::size_t j = 0; j < row_kept->count; ++j) {
          const KeyInterval& iv = row_kept->intervals[j];
          max = ConvertRowToF32<kType>(df, s + iv.begin,
                                       row.work + row.packed.intervals[j].begin,
                                       iv.size(), max);
        }
        row.in = row.work;
        row.in_kept = &row.packed;
        row.raw_max = MaxOfLanesExact(df, max);
      }
    }
  }

  // Row r joins the batch.
  HWY_INLINE void JoinBatch(std::size_t r, detail::RowIndex i,
                            const Elem<kType>* s, Elem<kType>* o,
                            const KeptKeys* row_kept) {
    FillRow(plain_[batched_], r, i, s, o, row_kept, batch_keys_);
    batch_[batched_++] = {r, i};
    batch_keys_ += keys_;  // row_kept->size()
  }

  HWY_INLINE void DecodeRuns();
  HWY_INLINE void CarriedRun(std::size_t& r, std::size_t run_end,
                             detail::RowIndex& i, std::uintptr_t& s_at,
                             std::uintptr_t& o_at, std::size_t per_batch,
                             const KeptKeys* run_kept);
  HWY_INLINE bool SetAlibiTerm(PlainRow& row, const detail::RowIndex& i,
                               const detail::CallKeptKeys& kept_of,
                               bool distances_exact) const;
  HWY_INLINE void RuleRows();

  const ScoreView& in_;
  const ScoreView& out_;
  const MaskSpec& mask_;
  const SoftmaxOptions& options_;
  const RowRange rows_;
  const detail::Rules& rules_;
  const detail::CallFacts& call_;
  const GeneralRows& general_;
  const Shape4& shape_;
  const std::size_t n_;
  const Elem<kType>* const in_base_;
  Elem<kType>* const out_base_;
  // The paths ChooseRowPath gives the call's rows: those that fit a batch,
  // those that do not, and a batch row that its pass 1 hands off.
  const detail::RowPath batch_path_ =
      detail::ChooseRowPath(call_, FitFacts(true));
  const detail::RowPath unfit_path_ =
      detail::ChooseRowPath(call_, FitFacts(false));
  const detail::RowPath hand_off_path_ = [this] {
    detail::RowFacts facts = FitFacts(true);
    facts.plain_max_fits = false;
    return detail::ChooseRowPath(call_, facts);
  }();
  bool prefetch_rows_ = false;
  bool finish_prefetch_ = false;
  std::size_t batch_rows_ = kPlainBatchRows;
  std::size_t plain_row_keys_ = 0;
  // The batch's kept keys in f32, packed (16 KiB, so that calls do not
  // allocate): 16-bit rows' exps (and their keys converted, or with ALiBi
  // their transformed scores). Not needed by f32 rows.
  static_assert(kPlainRowKeys<kType> <= kPlainBatchKeys<kType>);
  float scratch_[kF32 ? 1 : kPlainBatchKeys<kType>];
  // A row's kept intervals depend on its batch and query only: decided once
  // for all the heads that share them (a decode step's), into a slot of a
  // ring that the batch's rows point into. A slot no batched row points to
  // is refilled in place (rows that go to the general loop take none); the
  // ring moves on only from a taken slot. So the slots in use are the
  // current one and those of the batch's rows, at most kPlainBatchRows + 1
  // of the last filled: a ring of twice kPlainBatchRows never overwrites
  // one. Rows point instead of copying them: the copy cost every row of a
  // decode batch, and its vector loads of KeptKeysOf's scalar stores
  // stalled store forwarding. Not initialised: each slot is constructed as
  // it is filled (zeroing the ring cost every call a 900-byte rep stos).
  union KeptRing {
    KeptRing() {}
    KeptKeys slots[2 * kPlainBatchRows];
  } kept_ring_;
  std::size_t keys_ = 0;  // the kept keys of the rows joining the batch
  detail::RowPrefetch prefetch_;
  BatchRow batch_[kPlainBatchRows];
  std::size_t batched_ = 0;
  PlainRow plain_[kPlainBatchRows];
  std::size_t batch_keys_ = 0;
};

// Decode steps (q_len 1, no ALiBi): the heads of a batch entry share its
// kept intervals and lie one head stride apart, so a run of them takes its
// rows with a stride and a counter, not the rule rows' per-row index,
// offsets and slot bookkeeping.
template <ScoreType kType, class GeneralRows>
HWY_INLINE void PlainLoop<kType, GeneralRows>::DecodeRuns() {
  const std::size_t in_head = shape_.heads == 1 ? 0 : in_.strides.head;
  const std::size_t out_head = shape_.heads == 1 ? 0 : out_.strides.head;
  for (std::size_t r = rows_.begin; r < rows_.end;) {
    const detail::RowIndex first = detail::RowIndexOf(shape_, r);
    const std::size_t run_end =
        std::min(rows_.end, r + (shape_.heads - first.h));
    KeptKeys* const run_kept = &kept_ring_.slots[0];
    ::new (static_cast<void*>(run_kept))
        KeptKeys(detail::KeptKeysOf(mask_, rules_, first.b, 0, 1, n_));
    keys_ = run_kept->size();
    if (!Fits(run_kept->count != 0 && keys_ <= plain_row_keys_)) {
      general_(in_, options_, {r, run_end});
      r = run_end;
      continue;
    }
    const std::size_t per_batch =
        std::min(batch_rows_, kPlainBatchKeys<kType> / keys_);
    // The rows' addresses as integers: after a run's last head they step
    // one head stride on, which may lie past the tensor (heads outermost),
    // where a pointer may not point. (Offsets from the base cost an add at
    // every use.)
    std::uintptr_t s_at = reinterpret_cast<std::uintptr_t>(
        in_base_ + detail::RowOffset(shape_, in_.strides, first));
    std::uintptr_t o_at = reinterpret_cast<std::uintptr_t>(
        out_base_ + detail::RowOffset(shape_, out_.strides, first));
    const std::size_t in_step = in_head * kElemBytes;
    const std::size_t out_step = out_head * kElemBytes;
    detail::RowIndex i = first;
    // A step whose batches take no plan (a small step, kept-only, or rows
    // too long for kMaxBatchPlanBytes), unless its rows stream from memory
    // one by one (finish_prefetch_): each batch's exps carry the next
    // batch's pass 1, so that its reads from L2 overlap arithmetic. f32
    // rows, and 16-bit rows converted on load: a pass 1 that stores its
    // conversion waits beside the exps' stores.
    if constexpr (kF32 || kPlainConvertOnLoad) {
      // As PlanNextBatch decides for a batch of contiguous heads.
      const bool planned =
          prefetch_rows_ && options_.zero_masked &&
          per_batch * n_ * kElemBytes * (in_.data == out_.data ? 1 : 2) <=
              detail::kMaxBatchPlanBytes;
      if (!planned && !finish_prefetch_) {
        CarriedRun(r, run_end, i, s_at, o_at, per_batch, run_kept);
        continue;
      }
    }
    for (; r < run_end; ++r, ++i.h, s_at += in_step, o_at += out_step) {
      JoinBatch(r, i, reinterpret_cast<const Elem<kType>*>(s_at),
                reinterpret_cast<Elem<kType>*>(o_at), run_kept);
      if (batched_ == per_batch) RunBatch();
    }
    if (batched_ != 0) RunBatch();
  }
}

// The batches of a decode run, each carrying the next one's pass 1
// (PlainRowsCarrying). Advances r, i, s_at and o_at to the run's end.
template <ScoreType kType, class GeneralRows>
HWY_INLINE void PlainLoop<kType, GeneralRows>::CarriedRun(
    std::size_t& r, std::size_t run_end, detail::RowIndex& i,
    std::uintptr_t& s_at, std::uintptr_t& o_at, std::size_t per_batch,
    const KeptKeys* run_kept) {
  const hn::ScalableTag<float> df;
  const std::size_t in_step =
      (shape_.heads == 1 ? 0 : in_.strides.head) * kElemBytes;
  const std::size_t out_step =
      (shape_.heads == 1 ? 0 : out_.strides.head) * kElemBytes;
  PlainRow next_plain[kPlainBatchRows];
  BatchRow next_batch[kPlainBatchRows];
  PlainRow* cur = plain_;
  PlainRow* nxt = next_plain;
  BatchRow* cur_at = batch_;
  BatchRow* nxt_at = next_batch;
  const auto take = [&](PlainRow* to, BatchRow* at) {
    std::size_t count = 0;
    for (; count < per_batch && r < run_end;
         ++count, ++r, ++i.h, s_at += in_step, o_at += out_step) {
      FillRow(to[count], r, i, reinterpret_cast<const Elem<kType>*>(s_at),
              reinterpret_cast<Elem<kType>*>(o_at), run_kept, count * keys_);
      at[count] = {r, i};
    }
    return count;
  };
  PlainMaxima maxima[2];
  std::size_t count = take(cur, cur_at);
  for (std::size_t g = 0; g < count; ++g) {
    PlainRowMaxOf<kType, false>(df, cur, g, options_, &maxima[0]);
  }
  for (std::size_t slot = 0; count != 0; slot ^= 1) {
    detail::CountRowPaths(batch_path_, count);
    const std::size_t next_count = take(nxt, nxt_at);
    maxima[slot ^ 1] = PlainMaxima{};
    PlainRowsCarrying<kType>(df, cur, count, options_, maxima[slot], nxt,
                             next_count, &maxima[slot ^ 1]);
    FinishBatch(cur, cur_at, count, maxima[slot].handed_off);
    std::swap(cur, nxt);
    std::swap(cur_at, nxt_at);
    count = next_count;
  }
}

// The ALiBi term of a row joining the batch (PlainAlibi); false: some
// distance of the row is not exact in f32, so it does not fit a batch.
template <ScoreType kType, class GeneralRows>
HWY_INLINE bool PlainLoop<kType, GeneralRows>::SetAlibiTerm(
    PlainRow& row, const detail::RowIndex& i,
    const detail::CallKeptKeys& kept_of, bool distances_exact) const {
  const KeptKeys& kept = *row.row_kept;
  row.alibi.neg_slope = -options_.alibi_slopes[i.h];
  if (distances_exact) {
    // One interval, no key shift (not Decode), every distance exact.
    row.alibi.first[0] =
        static_cast<float>(kept_of.QueryPositionOf(i.q) -
                           static_cast<std::int64_t>(kept.intervals[0].begin));
    return true;
  }
  // As the general path sets ImplicitKeyDistance up.
  const double p_q = static_cast<double>(
      detail::QueryPosition(mask_, i.b, i.q, shape_.q_len, n_));
  bool exact = true;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const KeyInterval& iv = kept.intervals[j];
    const double first =
        p_q - static_cast<double>(detail::KeyShift(mask_, rules_, iv)) -
        static_cast<double>(iv.begin);
    const double last = first - static_cast<double>(iv.size());
    exact &=
        std::fabs(first) < kExactDistance && std::fabs(last) < kExactDistance;
    row.alibi.first[j] = static_cast<float>(first);
  }
  return exact;
}

// Rows of interval rules, with or without ALiBi over implicit positions:
// rows that fit join the batch, runs of the others go to the general loop.
template <ScoreType kType, class GeneralRows>
HWY_INLINE void PlainLoop<kType, GeneralRows>::RuleRows() {
  const detail::CallKeptKeys kept_of(mask_, rules_, shape_.q_len, n_);
  // ALiBi distances need no check per row where the call's are all exact:
  // with the moving interval, p_q - k lies in [-q_len, k_len).
  const bool distances_exact =
      kept_of.moving() &&
      static_cast<double>(std::max(n_, shape_.q_len + 1)) < kExactDistance;
  std::size_t ring_at = 0;
  bool slot_taken = false;
  const KeptKeys* kept = nullptr;
  std::size_t kept_b = SIZE_MAX, kept_q = SIZE_MAX;
  // Rows [general_begin, r) wait for the general loop.
  std::size_t general_begin = rows_.begin;
  detail::RowIndex i = detail::RowIndexOf(shape_, rows_.begin);
  for (std::size_t r = rows_.begin; r < rows_.end;
       ++r, i = detail::NextRowIndex(shape_, i)) {
    if (i.b != kept_b || i.q != kept_q) {
      if (slot_taken) {
        ring_at = (ring_at + 1) % std::size(kept_ring_.slots);
        slot_taken = false;
      }
      KeptKeys* const slot = &kept_ring_.slots[ring_at];
      // Constructed in place from the returned value (no copy).
      kept = ::new (static_cast<void*>(slot)) KeptKeys(kept_of.Of(i.b, i.q));
      kept_b = i.b;
      kept_q = i.q;
      keys_ = kept->size();
    }
    if (!Fits(kept->count != 0 && keys_ <= plain_row_keys_)) continue;
    // A full batch runs before this row takes its slot, so that its ALiBi
    // term is written there in place: built on the side and copied, the
    // copy's vector load of the scalar stores stalled store forwarding.
    if (batched_ == batch_rows_ ||
        batch_keys_ + keys_ > kPlainBatchKeys<kType>) {
      RunBatch();
    }
    if (call_.alibi) {
      plain_[batched_].row_kept = kept;
      if (!Fits(SetAlibiTerm(plain_[batched_], i, kept_of, distances_exact))) {
        continue;
      }
    }
    if (general_begin < r) general_(in_, options_, {general_begin, r});
    general_begin = r + 1;
    JoinBatch(r, i, in_base_ + detail::RowOffset(shape_, in_.strides, i),
              out_base_ + detail::RowOffset(shape_, out_.strides, i), kept);
    slot_taken = true;
  }
  if (batched_ != 0) RunBatch();
  if (general_begin < rows_.end)
    general_(in_, options_, {general_begin, rows_.end});
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
