// SPDX-License-Identifier: MIT OR Apache-2.0
// The general row loop: rows that are not plain, one at a time. Per row:
// its kept segments, their keep bytes, the facts that ChooseRowPath
// (src/softmax/row_path.h) decides its path from, the prefetch of the next
// row, the f32 scratch of 16-bit rows, then SoftmaxRow
// (src/softmax/general_row-inl.h) and the fill of the masked keys. Also the
// loop of f32 rows of a dense mask alone (kDenseOnlyF32, DenseF32RowsOf).
// Re-included per target by src/softmax/row_loop.cc through
// src/softmax/row_loop-inl.h; arguments are validated by the caller
// (score_kernels.cc).

#if defined(RLX_SRC_SOFTMAX_GENERAL_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_GENERAL_LOOP_INL_H_
#undef RLX_SRC_SOFTMAX_GENERAL_LOOP_INL_H_
#else
#define RLX_SRC_SOFTMAX_GENERAL_LOOP_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_rows.h"
#include "src/mask/position_keep-inl.h"
#include "src/mask/row_keep_bytes.h"
#include "src/softmax/general_row-inl.h"
#include "src/softmax/row_loop_shared.h"
#include "src/softmax/row_path.h"
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

// A 64-byte line in keys: a 16-bit row's segment starts in its work buffer
// at its key's offset within a line, so that its stores align where an f32
// row's do.
constexpr std::size_t kAlignKeys = 64 / sizeof(float);

// The general loop of one row type: only the loop is compiled per row type
// (its addressing, conversions and fill), the passes once (SoftmaxRow).
// `part` (not null): step 1 of a split row, on its keys only
// (src/softmax/softmax_rows.h).
template <ScoreType kType>
class GeneralLoop {
  static constexpr bool kF32 = kType == ScoreType::kF32;
  static constexpr std::size_t kElemBytes = sizeof(Elem<kType>);

 public:
  GeneralLoop(const ScoreView& in, const ScoreView& out, const MaskSpec& mask,
              const SoftmaxOptions& options, RowRange rows,
              const detail::RowPart* part)
      : in_(in),
        out_(out),
        mask_(mask),
        options_(options),
        rows_(rows),
        part_(part),
        n_(in.shape.k_len),
        rules_(detail::RulesOf(mask)),
        call_(detail::CallFactsOf(rules_, options, kType, in.shape.q_len,
                                  part != nullptr)),
        // The keys each row's part covers: the whole row unless split. The
        // prefetch and the fill cover them alone.
        keys_(part != nullptr ? part->keys : KeyInterval{0, n_}) {}

  HWY_INLINE void Run() {
    const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
    // 16-bit rows are converted to f32 into the scratch (32 KiB) or, for
    // rows longer than it, into this thread's exp buffer
    // (src/softmax/thread_exp_buffer.h: had by the caller before any row
    // was written, allocated once per thread), at a fixed offset from a
    // 64-byte boundary: SegmentExp aligns its stores to `work`, so the split
    // of a row's sums, and with it every result, is the same in either. The
    // passes run there in place, as on an f32 row, and pass 3 converts
    // back, so every exp value is kept. f32 rows need neither.
    static_assert(detail::kThreadExpBufferAlign == 64);
    work_base_ = kF32 || n_ <= detail::kStackExpKeys
                     ? scratch_
                     : detail::ThreadExpBuffer(detail::ExpWorkFloats(n_));
    if (work_base_ == nullptr) return;  // unreachable: the caller had it
    const KeptKeys all_keys{{keys_}, keys_.begin < keys_.end ? 1u : 0u};
    const detail::CallPrefetch call_prefetch = detail::CallPrefetchOf(
        (rows_.end - rows_.begin) * keys_.size() * kElemBytes);
    const detail::CallKeptKeys kept_of(mask_, rules_, in_.shape.q_len, n_);
    const auto* in_base = static_cast<const char*>(in_.data);
    auto* out_base = static_cast<char*>(out_.data);
    detail::RowWalk walk(in_.shape, in_.strides, out_.strides, mask_,
                         rows_.begin);
    for (std::size_t r = rows_.begin; r < rows_.end; ++r, walk.Advance()) {
      const detail::RowIndex& i = walk.index();
      const detail::RowOffsets& at = walk.at();
      // [0, n) for dense-only masks.
      KeptKeys kept = rules_.dense_only ? WholeRow(n_) : kept_of.Of(i.b, i.q);
      if (part_ != nullptr) detail::ClipKeptKeys(&kept, keys_);
      // `kept` stays what kept_keys reports for the row (within the part's
      // keys); the passes run over `pass_kept`: the same, or the intervals
      // the keep bytes narrow it to. A pointer, not a copy: the copy's
      // vector loads of the scalar stores that had just built it stalled
      // store forwarding in every row.
      const KeptKeys* pass_kept = &kept;
      const KeepTileFill tile_fill{&mask_,          &rules_, i,
                                   in_.shape.q_len, n_,      keep_bytes_};
      const std::size_t origin = kept.count > 0 ? kept.intervals[0].begin : 0;
      detail::RowFacts facts;
      facts.fits_plain_batch = false;  // the plain loop's rows never come here
      facts.kept_any = kept.count > 0;
      if (detail::CallReadsKeepBytes(call_) && facts.kept_any) {
        facts = ReadKeepBytes(i, kept, origin, facts, &pass_kept);
      }
      const detail::RowPath path = detail::ChooseRowPath(call_, facts);
      detail::CountRowPaths(path, 1);
      PlanPrefetch(r, walk, *pass_kept, path, call_prefetch);
      // The segments: f32 rows in place in the output (in the input, for
      // the passes that read); 16-bit rows converted into the work buffer.
      const char* s = in_base + at.in * kElemBytes;
      char* o = out_base + at.out * kElemBytes;
      Segment segs[KeptKeys::kMaxIntervals];
      void* outs[KeptKeys::kMaxIntervals];
      float raw_max = std::numeric_limits<float>::quiet_NaN();
      const std::size_t count =
          BuildSegments(s, o, *pass_kept, segs, outs, &raw_max);
      RowSegments row{segs, outs, count, kType,
                      facts.bytes_tiled ? &tile_fill : nullptr};
      row.raw_max = raw_max;
      const VectorMap map{full_words_, partial_words_, map_vectors_};
      if (path == detail::RowPath::kVectorMap) row.map = &map;
      const RowCode code{
          &mask_, &options_, &rules_, i, in_.shape.q_len, n_, at.mask,
          detail::RowReadsKeepBytes(call_, facts), keep_bytes_, origin,
          // A part has no sink and no lse: the finish adds
          // them.
          part_ == nullptr ? detail::HeadSink(options_, i.h)
                           : -std::numeric_limits<float>::infinity(),
          part_ == nullptr ? detail::RowLse(options_, r) : nullptr,
          part_ != nullptr ? part_->stats + r : nullptr};
      SoftmaxRow(path, row, code, prefetch_);
      // The rest of the next row's prefetch plan, before the fill: a row
      // with few kept keys has too few exp steps to issue it, and its lines
      // then arrive while the fill's stores drain instead of as misses of
      // the next row's passes.
      if (call_prefetch.finish) prefetch_.Finish();
      // The masked keys last (the fill never touches a kept key, so the
      // order does not change a result): its stores then drain while the
      // next row's max pass loads, instead of queueing in front of this
      // row's exp stores. Kept-only writes leave the keys outside kept_keys
      // alone, but write the masked ones inside it, as the default mode
      // does. Rows of a dense part read directly have no key outside their
      // one whole segment (within the part's keys), so nothing to fill.
      if (!detail::ReadsDenseRows(call_)) {
        FillMasked<kType>(reinterpret_cast<Elem<kType>*>(o),
                          options_.zero_masked ? all_keys : kept, *pass_kept,
                          Elem<kType>{});
      }
    }
  }

 private:
  // Per-element rules: the row's keep bytes from its first kept key, in
  // one piece (shared by the heads whose bytes coincide) or tile by tile.
  // In one piece, the intervals are narrowed to the kept bytes (packed
  // documents: a causal row keeps only its own document's run), and the
  // facts say whether every key of them is kept and whether a vector map
  // pays (a paged cache's empty pages). Returns the row's facts.
  HWY_INLINE detail::RowFacts ReadKeepBytes(const detail::RowIndex& i,
                                            const KeptKeys& kept,
                                            std::size_t origin,
                                            detail::RowFacts facts,
                                            const KeptKeys** pass_kept) {
    const hn::ScalableTag<float> df;
    if (kept.intervals[kept.count - 1].end - origin > kKeepTileKeys) {
      keep_cache_.valid = false;  // the tiles overwrite the bytes
      facts.bytes_tiled = true;
      return facts;
    }
    if (detail::RowKeepBytes(mask_, rules_, i, in_.shape.q_len, n_, kept,
                             keep_bytes_, origin, &keep_cache_,
                             &PositionKeepBytes)) {
      narrowed_ = detail::NarrowToKeptBytes(kept, keep_bytes_, origin,
                                            &narrowed_all_kept_);
      map_vectors_ = 0;
      if (may_map_ && narrowed_.count == 1 && !narrowed_all_kept_) {
        const std::size_t lanes = hn::Lanes(df);
        const std::size_t vectors = narrowed_.intervals[0].size() / lanes;
        const std::size_t empty = detail::ClassVectors(
            keep_bytes_ + (narrowed_.intervals[0].begin - origin), vectors,
            lanes, full_words_, partial_words_);
        // At least an eighth of the vectors empty: the map pays.
        if (vectors > 0 && empty * 8 >= vectors) {
          map_vectors_ = vectors;
          map_steps_ = (vectors - empty) * lanes / (4 * lanes);
        }
      }
    }
    *pass_kept = &narrowed_;
    facts.bytes_all_kept = narrowed_all_kept_;
    facts.map_pays = map_vectors_ > 0;
    return facts;
  }

  // Prefetch the next row's input, output and dense mask row (unless
  // broadcast: this row's) over this row's exp steps.
  HWY_INLINE void PlanPrefetch(std::size_t r, const detail::RowWalk& walk,
                               const KeptKeys& pass_kept, detail::RowPath path,
                               detail::CallPrefetch call_prefetch) {
    const hn::ScalableTag<float> df;
    if (!call_prefetch.rows || r + 1 == rows_.end) {
      prefetch_.Clear();
      return;
    }
    const detail::RowOffsets& next_at = walk.next_at();
    const bool new_mask_row =
        rules_.dense != DenseKind::kNone && next_at.mask != walk.at().mask;
    const KeyInterval fetch =
        options_.zero_masked ? keys_ : detail::LargestInterval(pass_kept);
    const auto* in_base = static_cast<const char*>(in_.data);
    auto* out_base = static_cast<char*>(out_.data);
    const void* begin[] = {
        in_base + (next_at.in + fetch.begin) * kElemBytes,
        out_base + (next_at.out + fetch.begin) * kElemBytes,
        static_cast<const char*>(mask_.data) +
            next_at.mask * detail::DenseUnitBytes(rules_.dense)};
    const std::size_t bytes[] = {
        fetch.size() * kElemBytes, fetch.size() * kElemBytes,
        new_mask_row ? detail::DenseRowBytes(rules_.dense, n_) : 0};
    const std::size_t exp_step = 4 * hn::Lanes(df);  // keys per SegmentExp step
    prefetch_.Plan(begin, bytes,
                   path == detail::RowPath::kVectorMap
                       ? map_steps_
                       : pass_kept.size() / exp_step);
  }

  // The row's segments into segs and outs (returns their count): f32 rows in
  // place in the output (reading the input); 16-bit rows converted into the
  // work buffer, each interval at its key index modulo 64 bytes (so that pass 2
  // aligns its stores at the same key as on f32 rows) and the next from the
  // line after it (ExpWorkFloats(n) floats suffice), their maximum taken on
  // the way (*raw_max; f32 rows leave it NaN).
  HWY_INLINE std::size_t BuildSegments(const char* s, char* o,
                                       const KeptKeys& pass_kept, Segment* segs,
                                       void** outs, float* raw_max_out) const {
    const hn::ScalableTag<float> df;
    std::size_t count = 0;
    std::size_t work_keys = 0;
    auto raw_max = hn::Set(df, -std::numeric_limits<float>::infinity());
    for (std::size_t j = 0; j < pass_kept.count; ++j) {
      const KeyInterval& iv = pass_kept.intervals[j];
      const std::int64_t shift = detail::KeyShift(mask_, rules_, iv);
      const char* first_in = s + iv.begin * kElemBytes;
      outs[count] = o + iv.begin * kElemBytes;
      if constexpr (kF32) {
        float* work = reinterpret_cast<float*>(o) + iv.begin;
        segs[count++] = {reinterpret_cast<const float*>(first_in), work,
                         iv.begin, iv.size(), shift};
      } else {
        float* work = work_base_ + work_keys + iv.begin % kAlignKeys;
        segs[count++] = {work, work, iv.begin, iv.size(), shift};
        raw_max = ConvertRowToF32<kType>(
            df, reinterpret_cast<const Elem<kType>*>(first_in), work, iv.size(),
            raw_max);
        work_keys += (iv.begin % kAlignKeys + iv.size() + kAlignKeys - 1) /
                     kAlignKeys * kAlignKeys;
      }
    }
    if (!kF32) *raw_max_out = MaxOfLanesExact(df, raw_max);
    return count;
  }

  const ScoreView& in_;
  const ScoreView& out_;
  const MaskSpec& mask_;
  const SoftmaxOptions& options_;
  const RowRange rows_;
  const detail::RowPart* const part_;
  const std::size_t n_;
  const detail::Rules rules_;
  const detail::CallFacts call_;
  const KeyInterval keys_;
  // Whether a row of the call may take the vector map: ChooseRowPath's
  // answer for a row whose map would pay.
  const bool may_map_ = detail::ChooseRowPath(call_, [] {
                          detail::RowFacts f;
                          f.fits_plain_batch = false;
                          f.map_pays = true;
                          return f;
                        }()) == detail::RowPath::kVectorMap;
  // Fixed-size buffers, so that calls do not allocate: the 16-bit rows'
  // scratch, and the keep bytes of per-element rules, one tile of
  // kKeepTileKeys keys (8 KiB).
  alignas(
      64) float scratch_[kF32 ? 1
                              : detail::ExpWorkFloats(detail::kStackExpKeys)];
  float* work_base_ = nullptr;
  alignas(64) std::uint8_t keep_bytes_[kKeepTileKeys];
  detail::RowKeepCache keep_cache_;
  // The narrowed intervals of the row whose bytes keep_bytes_ holds, and
  // the class of each whole vector of its one interval (map_vectors_ 0:
  // none; src/softmax/softmax_vector_map-inl.h).
  KeptKeys narrowed_;
  bool narrowed_all_kept_ = false;
  std::uint64_t full_words_[kKeepTileKeys / 64];
  std::uint64_t partial_words_[kKeepTileKeys / 64];
  std::size_t map_vectors_ = 0;
  std::size_t map_steps_ = 0;  // the exp steps of a mapped row
  detail::RowPrefetch prefetch_;
};

template <ScoreType kType>
HWY_NOINLINE void GeneralRowsOf(const ScoreView& in, const ScoreView& out,
                                const MaskSpec& mask,
                                const SoftmaxOptions& options, RowRange rows,
                                const detail::RowPart* part = nullptr) {
  GeneralLoop<kType>(in, out, mask, options, rows, part).Run();
}

// The loop of kDenseOnlyF32 rows: f32 rows whose mask is a dense part alone,
// read directly (a host-built bias or keep mask, not split). A row is one
// whole-row segment with no key outside it, so the loop keeps only its
// addresses and the next row's prefetch, none of the general loop's kept
// intervals, keep bytes, 16-bit scratch or fill, which cost such rows a
// measurable share of their time. 16-bit rows, which convert into a
// scratch, take the general loop (kDenseKeep, kBias).
HWY_NOINLINE void DenseF32RowsOf(const ScoreView& in, const ScoreView& out,
                                 const MaskSpec& mask,
                                 const detail::Rules& rules,
                                 const SoftmaxOptions& options, RowRange rows) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  const auto* in_base = static_cast<const float*>(in.data);
  auto* out_base = static_cast<float*>(out.data);
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  const std::size_t mask_unit = detail::DenseUnitBytes(rules.dense);
  const std::size_t mask_row_bytes = detail::DenseRowBytes(rules.dense, n);
  const std::size_t exp_steps = n / (4 * hn::Lanes(df));  // SegmentExp's
  // As the general loop prefetches (every row plans its whole keys).
  const detail::CallPrefetch call_prefetch =
      detail::CallPrefetchOf((rows.end - rows.begin) * n * sizeof(float));
  detail::CountRowPaths(detail::RowPath::kDenseOnlyF32, rows.end - rows.begin);
  detail::RowPrefetch prefetch;
  detail::RowWalk walk(shape, in.strides, out.strides, mask, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end; ++r, walk.Advance()) {
    const detail::RowIndex& i = walk.index();
    const detail::RowOffsets& at = walk.at();
    const detail::RowOffsets& next_at = walk.next_at();
    if (!call_prefetch.rows || r + 1 == rows.end) {
      prefetch.Clear();
    } else {
      const void* begin[] = {
          in_base + next_at.in, out_base + next_at.out,
          static_cast<const char*>(mask.data) + next_at.mask * mask_unit};
      const std::size_t bytes[] = {
          n * sizeof(float), n * sizeof(float),
          next_at.mask != at.mask ? mask_row_bytes : 0};
      prefetch.Plan(begin, bytes, exp_steps);
    }
    float* o = out_base + at.out;
    const Segment seg{in_base + at.in, o, 0, n, 0};
    void* const outs[] = {o};
    const RowSegments row{&seg, outs, 1, ScoreType::kF32, nullptr};
    const RowCode code{&mask,
                       &options,
                       &rules,
                       i,
                       shape.q_len,
                       n,
                       at.mask,
                       /*read_bytes=*/false,
                       /*keep_bytes=*/nullptr,
                       /*origin=*/0,
                       detail::HeadSink(options, i.h),
                       detail::RowLse(options, r),
                       /*part=*/nullptr};
    SoftmaxRow(detail::RowPath::kDenseOnlyF32, row, code, prefetch);
    if (call_prefetch.finish) prefetch.Finish();
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
