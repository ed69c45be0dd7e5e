// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows of any row type. Plain rows run in
// batches (SoftmaxRowsOf, src/softmax/softmax_plain_rows-inl.h); f32 rows of a
// dense mask alone in a loop of their own (DenseF32RowsOf); every other row
// goes through GeneralRowsOf: per row, its kept segments, their keep bytes, the
// prefetch of the next row, the f32 scratch of 16-bit rows, then SoftmaxRow
// (src/softmax/softmax_row-inl.h) and the fill of the masked keys. Re-included
// per target by src/softmax/softmax_rows.cc; arguments are validated by the
// caller (score_kernels.cc).

#if defined(RLX_SRC_SOFTMAX_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_ROWS_INL_H_
#undef RLX_SRC_SOFTMAX_ROWS_INL_H_
#else
#define RLX_SRC_SOFTMAX_ROWS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <new>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_rows.h"
#include "src/mask/position_keep-inl.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/softmax/softmax_plain_rows-inl.h"
#include "src/softmax/softmax_row-inl.h"
#include "src/softmax/softmax_rows.h"
#include "src/softmax/thread_exp_buffer.h"
#include "src/util/row_convert-inl.h"
#include "src/util/row_prefetch.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// Calls whose rows total at most kPrefetchMinBytes are not prefetched:
// they sit in L1 or L2 already (a decode step at a short context, just
// written by QK^T), and the prefetches only take load slots. Measured
// (AVX3): D1 (66 KiB) 7% faster without them, while
// P2 (128 MiB) is 1.55x slower without them.
constexpr std::size_t kPrefetchMinBytes = 128 * 1024;
// Calls above kFinishMinBytes (beyond the L2 and most of an L3 share:
// rows come from memory) also issue the part of the next row's plan that
// the exp steps did not reach, before the fill. Measured (AVX3): P2w
// (128 MiB) 1.3x faster with it; SL (1 MiB, from L2) 1.1-1.25x slower, as
// the burst waits on miss buffers that L2 hits free soon anyway.
constexpr std::size_t kFinishMinBytes = 8 * 1024 * 1024;
// A plain batch's plan fetches the next batch's whole rows into L1 over
// its exps, and is issued only when they fit in this many bytes. A plan
// larger than L1 evicts its own first lines, and the batch's rows, before
// their passes read them: D2w's batches of 7 rows of 4097 keys planned
// 112 KiB and took 1.07-1.09x the time they take without one (AVX3 on Zen
// 5). The bound keeps the plans of P1's batches (8
// rows of 512 keys: 16 KiB in place, 32 KiB out of place); sizes between
// it and D2w's are not measured.
constexpr std::size_t kMaxBatchPlanBytes = 32 * 1024;

// Whether a call whose rows span `call_bytes` prefetches each next row
// (kPrefetchMinBytes), and issues the rest of its plan before the fill
// (kFinishMinBytes).
struct CallPrefetch {
  bool rows, finish;
};
inline CallPrefetch CallPrefetchOf(std::size_t call_bytes) {
  return {call_bytes > kPrefetchMinBytes, call_bytes > kFinishMinBytes};
}

// The keys of the next row that a call's prefetch fetches (over this row's
// exp steps): in the default mode all the row's (or the part's) keys, as
// its fill writes the masked ones. The kept-only mode never touches those:
// it fetches this row's largest kept interval, which the next head of a
// decode step shares and the next row of a causal head differs from by a
// key. Kept-only, fetching whole rows measured D2w 1.22x and D3 1.08x
// slower than no prefetch at all (AVX3 on Zen 5), while D2, which keeps
// half its row, gained 6% from it.
inline KeyInterval LargestInterval(const KeptKeys& kept) {
  KeyInterval largest;
  for (std::size_t j = 0; j < kept.count; ++j) {
    if (kept.intervals[j].size() > largest.size()) largest = kept.intervals[j];
  }
  return largest;
}

// p_k - k of the keys of kept interval iv with implicit positions (a
// segment's shift, ALiBi's): 0, except for the Decode token, whose slot
// upper sits at position past.
inline std::int64_t KeyShift(const MaskSpec& mask, const detail::Rules& rules,
                             const KeyInterval& iv) {
  return rules.decode && iv.begin == mask.upper
             ? static_cast<std::int64_t>(mask.past) -
                   static_cast<std::int64_t>(mask.upper)
             : 0;
}

// Whether rows are those of a dense-only mask read directly: not when ALiBi
// wraps the source, as the rule path (keep bytes, or the bias) then serves
// them, so that the ALiBi wrappers exist for fewer sources. Bit masks always
// go through the bytes.
inline bool ReadsDenseRows(const detail::Rules& rules,
                           const SoftmaxOptions& options) {
  return rules.dense_only && options.alibi_slopes == nullptr &&
         rules.dense != DenseKind::kKeepBits;
}

// The sink logit of head h (-inf: none), and row r's log-sum-exp entry
// (null: none).
inline float HeadSink(const SoftmaxOptions& options, std::size_t h) {
  return options.sink_logits != nullptr
             ? options.sink_logits[h]
             : -std::numeric_limits<float>::infinity();
}
inline float* RowLse(const SoftmaxOptions& options, std::size_t r) {
  return options.row_lse != nullptr ? options.row_lse + r : nullptr;
}

// The row loop of one row type, for rows of every kind (plain rows also
// take PlainRows, below): only the loop is compiled per row type (its
// addressing, conversions and fill), the passes once (SoftmaxRow).
// `part` (not null): step 1 of a split row, on its keys only
// (src/softmax/softmax_rows.h).
template <ScoreType kType>
HWY_NOINLINE void GeneralRowsOf(const ScoreView& in, const ScoreView& out,
                                const MaskSpec& mask,
                                const SoftmaxOptions& options, RowRange rows,
                                const detail::RowPart* part = nullptr) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  constexpr ScoreType type = kType;
  constexpr bool f32 = kType == ScoreType::kF32;
  constexpr std::size_t elem_bytes = sizeof(Elem<kType>);
  const auto* in_base = static_cast<const char*>(in.data);
  auto* out_base = static_cast<char*>(out.data);
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  const detail::Rules rules = detail::RulesOf(mask);
  // Fixed-size buffers on the stack, so that calls do not allocate. 16-bit
  // rows are converted to f32 into the scratch (32 KiB) or, for rows longer
  // than it, into this thread's exp buffer (src/softmax/thread_exp_buffer.h:
  // had by the caller before any row was written, allocated once per thread),
  // at a fixed offset from a 64-byte boundary: SegmentExp aligns its stores to
  // `work`, so the split of a row's sums, and with it every result, is the
  // same in either. The passes run there in place, as on an f32 row, and
  // pass 3 converts back, so every exp value is kept. f32 rows need neither.
  // The keep bytes of per-element rules: one tile of kKeepTileKeys keys
  // (8 KiB).
  alignas(
      64) float scratch[f32 ? 1 : detail::ExpWorkFloats(detail::kStackExpKeys)];
  static_assert(detail::kThreadExpBufferAlign == 64);
  float* const work_base =
      f32 || n <= detail::kStackExpKeys
          ? scratch
          : detail::ThreadExpBuffer(detail::ExpWorkFloats(n));
  if (work_base == nullptr) return;  // unreachable: the caller had it
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
  detail::RowKeepCache keep_cache;
  const std::size_t mask_unit = DenseUnitBytes(rules.dense);
  const std::size_t exp_step = 4 * hn::Lanes(df);  // keys per SegmentExp step
  const bool dense_rows = ReadsDenseRows(rules, options);
  const bool per_element =
      !dense_rows && (rules.per_element ||
                      (rules.dense_only && rules.dense != DenseKind::kBias));
  // The narrowed intervals of the row whose bytes keep_bytes holds, and the
  // class of each whole vector of its one interval (map_vectors 0: none).
  // Rows of per-element rules without a bias or ALiBi that leave at least an
  // eighth of their vectors empty (a paged cache's empty pages) take the
  // map: their passes never load or exp an empty vector
  // (src/softmax/softmax_vector_map-inl.h).
  KeptKeys narrowed;
  bool narrowed_all_kept = false;
  const bool may_map = per_element && rules.dense != DenseKind::kBias &&
                       options.alibi_slopes == nullptr;
  std::uint64_t full_words[kKeepTileKeys / 64];
  std::uint64_t partial_words[kKeepTileKeys / 64];
  std::size_t map_vectors = 0;
  std::size_t map_steps = 0;  // the exp steps of a mapped row
  detail::RowPrefetch prefetch;
  // The keys each row's part covers: the whole row unless split. The
  // prefetch and the fill cover them alone.
  const KeyInterval keys = part != nullptr ? part->keys : KeyInterval{0, n};
  const KeptKeys all_keys{{keys}, keys.begin < keys.end ? 1u : 0u};
  const CallPrefetch call_prefetch =
      CallPrefetchOf((rows.end - rows.begin) * keys.size() * elem_bytes);
  const detail::CallKeptKeys kept_of(mask, rules, shape.q_len, n);
  detail::RowWalk walk(shape, in.strides, out.strides, mask, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end; ++r, walk.Advance()) {
    const detail::RowIndex& i = walk.index();
    const detail::RowOffsets& at = walk.at();
    const detail::RowOffsets& next_at = walk.next_at();
    const std::size_t m = at.mask;
    const char* s = in_base + at.in * elem_bytes;
    char* o = out_base + at.out * elem_bytes;
    // [0, n) for dense-only masks.
    KeptKeys kept = rules.dense_only ? WholeRow(n) : kept_of.Of(i.b, i.q);
    if (part != nullptr) detail::ClipKeptKeys(&kept, keys);
    // `kept` stays what kept_keys reports for the row (within the part's
    // keys); the passes run over `pass_kept`: the same, or the intervals
    // the keep bytes narrow it to. A pointer, not a copy: the copy's vector
    // loads of the scalar stores that had just built it stalled store
    // forwarding in every row (3% of P4).
    const KeptKeys* pass_kept = &kept;
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
    bool use_map = false;
    if (read_bytes) {
      if (kept.intervals[kept.count - 1].end - origin <= kKeepTileKeys) {
        if (detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept,
                                 keep_bytes, origin, &keep_cache,
                                 &PositionKeepBytes)) {
          narrowed = detail::NarrowToKeptBytes(kept, keep_bytes, origin,
                                               &narrowed_all_kept);
          map_vectors = 0;
          if (may_map && narrowed.count == 1 && !narrowed_all_kept) {
            const std::size_t lanes = hn::Lanes(df);
            const std::size_t vectors = narrowed.intervals[0].size() / lanes;
            const std::size_t empty = detail::ClassVectors(
                keep_bytes + (narrowed.intervals[0].begin - origin), vectors,
                lanes, full_words, partial_words);
            if (vectors > 0 && empty * 8 >= vectors) {
              map_vectors = vectors;
              map_steps = (vectors - empty) * lanes / exp_step;
            }
          }
        }
        pass_kept = &narrowed;
        // Every key of the narrowed intervals kept: the bytes are needed
        // only by ALiBi over explicit key positions.
        read_bytes = !(narrowed_all_kept && (!rules.explicit_keys ||
                                             options.alibi_slopes == nullptr));
        use_map = read_bytes && map_vectors > 0;
      } else {
        keep_cache.valid = false;  // the tiles overwrite the bytes
        tiles = &tile_fill;
      }
    }
    // Prefetch the next row's input, output and dense mask row (unless
    // broadcast: this row's) over this row's exp steps.
    if (!call_prefetch.rows || r + 1 == rows.end) {
      prefetch.Clear();
    } else {
      const bool new_mask_row =
          rules.dense != DenseKind::kNone && next_at.mask != m;
      const KeyInterval fetch =
          options.zero_masked ? keys : LargestInterval(*pass_kept);
      const void* begin[] = {
          in_base + (next_at.in + fetch.begin) * elem_bytes,
          out_base + (next_at.out + fetch.begin) * elem_bytes,
          static_cast<const char*>(mask.data) + next_at.mask * mask_unit};
      const std::size_t bytes[] = {
          fetch.size() * elem_bytes, fetch.size() * elem_bytes,
          new_mask_row ? DenseRowBytes(rules.dense, n) : 0};
      prefetch.Plan(begin, bytes,
                    use_map ? map_steps : pass_kept->size() / exp_step);
    }
    // The segments: f32 rows in place in the output (in the input, for the
    // passes that read); 16-bit rows converted into the work buffer, each
    // interval at its key index modulo 64 bytes (so that pass 2 aligns its
    // stores at the same key as on f32 rows) and the next from the line
    // after it: ExpWorkFloats(n) floats suffice.
    Segment segs[KeptKeys::kMaxIntervals];
    void* outs[KeptKeys::kMaxIntervals];
    std::size_t count = 0;
    std::size_t work_keys = 0;
    auto raw_max = hn::Set(df, -std::numeric_limits<float>::infinity());
    for (std::size_t j = 0; j < pass_kept->count; ++j) {
      const KeyInterval& iv = pass_kept->intervals[j];
      const std::int64_t shift = KeyShift(mask, rules, iv);
      const char* first_in = s + iv.begin * elem_bytes;
      outs[count] = o + iv.begin * elem_bytes;
      if constexpr (f32) {
        float* work = reinterpret_cast<float*>(o) + iv.begin;
        segs[count++] = {reinterpret_cast<const float*>(first_in), work,
                         iv.begin, iv.size(), shift};
      } else {
        float* work = work_base + work_keys + iv.begin % kAlignKeys;
        segs[count++] = {work, work, iv.begin, iv.size(), shift};
        raw_max = ConvertRowToF32<kType>(
            df, reinterpret_cast<const Elem<kType>*>(first_in), work, iv.size(),
            raw_max);
        work_keys += (iv.begin % kAlignKeys + iv.size() + kAlignKeys - 1) /
                     kAlignKeys * kAlignKeys;
      }
    }
    RowSegments row{segs, outs, count, type, tiles};
    if (!f32) row.raw_max = MaxOfLanesExact(df, raw_max);
    const VectorMap map{full_words, partial_words, map_vectors};
    if (use_map) row.map = &map;
    const RowCode code{&mask, &options, &rules, i, shape.q_len, n, m,
                       dense_rows, read_bytes, keep_bytes, origin,
                       // A part has no sink and no lse: the finish adds them.
                       part == nullptr
                           ? HeadSink(options, i.h)
                           : -std::numeric_limits<float>::infinity(),
                       part == nullptr ? RowLse(options, r) : nullptr,
                       part != nullptr ? part->stats + r : nullptr};
    SoftmaxRow(row, code, prefetch);
    // The rest of the next row's prefetch plan, before the fill: a row with
    // few kept keys (P2w: 257 of 2048) has too few exp steps to issue it
    // (on AVX3 a step is 64 keys, 4 steps of 16 lines for a 128-line row),
    // and its lines then arrive while the fill's stores drain instead of as
    // misses of the next row's passes.
    if (call_prefetch.finish) prefetch.Finish();
    // The masked keys last (the fill never touches a kept key, so the
    // order does not change a result): its stores then drain while the
    // next row's max pass loads, instead of queueing in front of this
    // row's exp stores. Kept-only writes leave the keys outside kept_keys
    // alone, but write the masked ones inside it, as the default mode does.
    // Rows of a dense part read directly have no key outside their one
    // whole segment (within the part's keys), so nothing to fill.
    if (!dense_rows) {
      FillMasked<kType>(reinterpret_cast<Elem<kType>*>(o),
                        options.zero_masked ? all_keys : kept, *pass_kept,
                        Elem<kType>{});
    }
  }
}

// The row loop of f32 rows whose mask is a dense part alone, read directly
// (ReadsDenseRows: a host-built bias or keep mask, not split). A row is one
// whole-row segment with no key outside it, so the loop keeps only its
// addresses and the next row's prefetch, none of GeneralRowsOf's kept
// intervals, keep bytes, 16-bit scratch or fill. Through GeneralRowsOf
// these steps take 5-6% of P4 (a causal bias), 10% of its rows in L2.
// 16-bit rows, which convert into a scratch, stay
// there.
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
  const std::size_t mask_unit = DenseUnitBytes(rules.dense);
  const std::size_t mask_row_bytes = DenseRowBytes(rules.dense, n);
  const std::size_t exp_steps = n / (4 * hn::Lanes(df));  // SegmentExp's
  // As GeneralRowsOf prefetches (every row plans its whole keys).
  const CallPrefetch call_prefetch =
      CallPrefetchOf((rows.end - rows.begin) * n * sizeof(float));
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
                       /*dense_rows=*/true,
                       /*read_bytes=*/false,
                       /*keep_bytes=*/nullptr,
                       /*origin=*/0,
                       HeadSink(options, i.h),
                       RowLse(options, r),
                       /*part=*/nullptr};
    SoftmaxRow(row, code, prefetch);
    if (call_prefetch.finish) prefetch.Finish();
  }
}

// The row loop of a call: plain rows (src/softmax/softmax_plain_rows-inl.h) in
// batches, the others in runs through GeneralRowsOf. Whether a row is plain
// depends on the call's mask, options and tensor size and on the row alone
// (its kept key count), never on the row range: a row's result is the same
// whichever range or thread it is computed in.
template <ScoreType kType>
void SoftmaxRowsOf(const ScoreView& in, const ScoreView& out,
                   const MaskSpec& mask, const SoftmaxOptions& options,
                   RowRange rows, const detail::RowPart* part) {
  // The parts of split rows are long rows' (rlx/softmax_split.h): never
  // plain.
  if (part != nullptr) {
    return GeneralRowsOf<kType>(in, out, mask, options, rows, part);
  }
  constexpr bool f32 = kType == ScoreType::kF32;
  constexpr std::size_t elem_bytes = sizeof(Elem<kType>);
  const hn::ScalableTag<float> df;
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  const detail::Rules rules = detail::RulesOf(mask);
  // ALiBi over implicit key positions is an iota: plain rows take it.
  const bool alibi = options.alibi_slopes != nullptr;
  if (rules.dense != DenseKind::kNone || rules.per_element ||
      (alibi && rules.explicit_keys) || options.softcap > 0.0f ||
      !(options.scale >= 0.0f)) {
    return GeneralRowsOf<kType>(in, out, mask, options, rows);
  }
  const auto* in_base = static_cast<const Elem<kType>*>(in.data);
  auto* out_base = static_cast<Elem<kType>*>(out.data);
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  // The batch's kept keys in f32, packed (16 KiB on the stack, so that
  // calls do not allocate): 16-bit rows' exps (and their keys converted,
  // or with ALiBi their transformed scores). Not needed by f32 rows.
  static_assert(kPlainRowKeys<kType> <= kPlainBatchKeys<kType>);
  float scratch[f32 ? 1 : kPlainBatchKeys<kType>];
  // A row's kept intervals depend on its batch and query only: decided once
  // for all the heads that share them (a decode step's), into a slot of a
  // ring that the batch's rows point into. A slot no batched row points to
  // is refilled in place (rows that go to GeneralRowsOf take none); the ring
  // moves on only from a taken slot. So the slots in use are the current
  // one and those of the batch's rows, at most kPlainBatchRows + 1 of the
  // last filled: a ring of twice kPlainBatchRows never overwrites one.
  // Rows point instead of copying them: the copy cost every row of a decode
  // batch, and its vector loads of KeptKeysOf's scalar stores stalled store
  // forwarding.
  // Not initialised: each slot is constructed as it is filled (zeroing the
  // ring cost every call a 900-byte rep stos, a fifth of a one-row call's
  // row loop).
  union KeptRing {
    KeptRing() {}
    KeptKeys slots[2 * kPlainBatchRows];
  } kept_ring;
  std::size_t ring_at = 0;
  bool slot_taken = false;
  const KeptKeys* kept = nullptr;
  std::size_t kept_b = SIZE_MAX, kept_q = SIZE_MAX;
  std::size_t keys = 0;  // kept->size()
  // Prefetch as GeneralRowsOf does: calls beyond kPrefetchMinBytes (L1 and
  // part of L2) fetch the next batch's rows over this one's exps.
  const std::size_t call_bytes = (rows.end - rows.begin) * n * elem_bytes;
  const bool prefetch_rows = call_bytes > kPrefetchMinBytes;
  // Rows from memory run one by one, as GeneralRowsOf runs them: the next
  // row's prefetch then spreads over this row's exps (P2w: 1.2x slower in
  // batches of 8).
  const bool finish_prefetch = call_bytes > kFinishMinBytes;
  const std::size_t batch_rows = finish_prefetch ? 1 : kPlainBatchRows;
  // Long rows are plain only where they batch (kPlainRowKeys): not in a
  // tensor whose rows come from memory. Decided on the whole tensor, not on
  // the row range as finish_prefetch is, so that a row's path (and with it
  // the last bit of its result) never depends on its range.
  const std::size_t plain_row_keys =
      shape.rows() * n * elem_bytes > kFinishMinBytes ? kShortPlainRowKeys
                                                      : kPlainRowKeys<kType>;
  detail::RowPrefetch prefetch;
  struct BatchRow {
    std::size_t r;
    detail::RowIndex i;
  };
  BatchRow batch[kPlainBatchRows];
  std::size_t batched = 0;
  PlainRow plain[kPlainBatchRows];
  std::size_t batch_keys = 0;
  // After a batch's passes: the fill (its stores drain while the next rows
  // load, as in GeneralRowsOf), then the rows that left for the general
  // code. Kept-only: a plain row's passes cover its kept_keys exactly, so
  // no masked key inside them is left to write.
  const auto settle = [&](const PlainRow* rows_of, const BatchRow* at,
                          std::size_t count, unsigned general) {
    for (std::size_t g = 0; options.zero_masked && g < count; ++g) {
      FillMasked<kType>(static_cast<Elem<kType>*>(rows_of[g].row), WholeRow(n),
                        *rows_of[g].row_kept, Elem<kType>{});
    }
    for (std::size_t g = 0; general != 0 && g < count; ++g) {
      if (!(general & (1u << g))) continue;
      if (f32 && alibi) {
        // Its t, in place in the output row (PlainRow): the general code's
        // result from them with scale 1 and no ALiBi is bit for bit the one
        // it gives from the scores (StoredScores' argument and maximum).
        SoftmaxOptions stored = options;
        stored.scale = 1.0f;
        stored.alibi_slopes = nullptr;
        GeneralRowsOf<kType>(out, out, mask, stored, {at[g].r, at[g].r + 1});
      } else {
        GeneralRowsOf<kType>(in, out, mask, options, {at[g].r, at[g].r + 1});
      }
    }
  };
  const auto run_batch = [&] {
    // The next as many rows, when they lie within twice their own bytes
    // (the rows of one head, or of a whole decode step) and fit
    // kMaxBatchPlanBytes.
    detail::RowPrefetch* plan = nullptr;
    const std::size_t next_r = batch[batched - 1].r + 1;
    // Kept-only rows: no plan. A batch's plan is one span of whole rows,
    // and the masked keys' lines are never touched (LargestInterval).
    if (prefetch_rows && options.zero_masked && next_r + batched <= rows.end) {
      detail::RowIndex first =
          detail::NextRowIndex(shape, batch[batched - 1].i);
      detail::RowIndex last = first;
      for (std::size_t g = 1; g < batched; ++g) {
        last = detail::NextRowIndex(shape, last);
      }
      const auto* in_first =
          in_base + detail::RowOffset(shape, in.strides, first);
      const auto* in_last =
          in_base + detail::RowOffset(shape, in.strides, last);
      auto* out_first = out_base + detail::RowOffset(shape, out.strides, first);
      auto* out_last = out_base + detail::RowOffset(shape, out.strides, last);
      const std::size_t span = 2 * batched * n;
      if (in_last >= in_first && out_last >= out_first &&
          static_cast<std::size_t>(in_last - in_first) < span &&
          static_cast<std::size_t>(out_last - out_first) < span) {
        const void* begin[] = {in_first, out_first, nullptr};
        const std::size_t bytes[] = {
            (static_cast<std::size_t>(in_last - in_first) + n) * elem_bytes,
            (static_cast<std::size_t>(out_last - out_first) + n) * elem_bytes,
            0};
        // In place, the two spans are one (Plan skips the second).
        const std::size_t plan_bytes =
            bytes[0] + (begin[1] == begin[0] ? 0 : bytes[1]);
        if (plan_bytes <= kMaxBatchPlanBytes) {
          prefetch.Plan(begin, bytes, batch_keys / (4 * hn::Lanes(df)));
          plan = &prefetch;
        }
      }
    }
    const unsigned general =
        alibi ? PlainRows<kType, true>(df, plain, batched, options, plan)
              : PlainRows<kType, false>(df, plain, batched, options, plan);
    // As in GeneralRowsOf: the rest of the plan, then the fill.
    if (plan != nullptr && finish_prefetch) prefetch.Finish();
    settle(plain, batch, batched, general);
    batched = 0;
    batch_keys = 0;
  };
  // The batch row of row r (index i, at s and o), its kept intervals at
  // `row_kept`: f32 rows run in place in it (an ALiBi row's transformed
  // scores too). For 16-bit rows the scratch from float `work_at` holds
  // their kept keys packed (PlainRow): an ALiBi row's transformed scores
  // (pass 1), the row's exps, and unless kPlainConvertOnLoad, first its
  // keys converted, their maximum taken on the way (pass 1).
  const auto fill_row = [&](PlainRow& row, std::size_t r, detail::RowIndex i,
                            const Elem<kType>* s, Elem<kType>* o,
                            const KeptKeys* row_kept, std::size_t work_at) {
    row.sink = options.sink_logits != nullptr
                   ? options.sink_logits[i.h]
                   : -std::numeric_limits<float>::infinity();
    row.lse = options.row_lse != nullptr ? options.row_lse + r : nullptr;
    row.row = o;
    row.row_kept = row_kept;
    row.in = s;
    row.in_kept = row_kept;
    if constexpr (f32) {
      row.kept = row_kept;
      row.out = o;
      if (alibi) {  // their t, in place over their kept keys
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
      row.work = scratch + work_at;
      row.work_kept = &row.packed;
      row.kept = &row.packed;
      row.out = row.work;
      if constexpr (!kPlainConvertOnLoad) {
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
  };
  // Row r joins the batch.
  const auto join_batch = [&](std::size_t r, detail::RowIndex i,
                              const Elem<kType>* s, Elem<kType>* o,
                              const KeptKeys* row_kept) {
    fill_row(plain[batched], r, i, s, o, row_kept, batch_keys);
    batch[batched++] = {r, i};
    batch_keys += keys;  // row_kept->size()
  };
  // Decode steps (q_len 1, no ALiBi): the heads of a batch entry
  // share its kept intervals and lie one head stride apart, so a run of
  // them takes its rows with a stride and a counter, not the general loop's
  // per-row index, offsets and slot bookkeeping (below).
  if (!alibi && shape.q_len == 1) {
    const std::size_t in_head = shape.heads == 1 ? 0 : in.strides.head;
    const std::size_t out_head = shape.heads == 1 ? 0 : out.strides.head;
    for (std::size_t r = rows.begin; r < rows.end;) {
      const detail::RowIndex first = detail::RowIndexOf(shape, r);
      const std::size_t run_end =
          std::min(rows.end, r + (shape.heads - first.h));
      KeptKeys* const run_kept = &kept_ring.slots[0];
      ::new (static_cast<void*>(run_kept))
          KeptKeys(detail::KeptKeysOf(mask, rules, first.b, 0, 1, n));
      keys = run_kept->size();
      if (run_kept->count == 0 || keys > plain_row_keys) {
        GeneralRowsOf<kType>(in, out, mask, options, {r, run_end});
        r = run_end;
        continue;
      }
      const std::size_t per_batch =
          std::min(batch_rows, kPlainBatchKeys<kType> / keys);
      // The rows' addresses as integers: after a run's last head they step
      // one head stride on, which may lie past the tensor (heads outermost),
      // where a pointer may not point. (Offsets from the base cost D1head16
      // 1-2%: an add at every use.)
      std::uintptr_t s_at = reinterpret_cast<std::uintptr_t>(
          in_base + detail::RowOffset(shape, in.strides, first));
      std::uintptr_t o_at = reinterpret_cast<std::uintptr_t>(
          out_base + detail::RowOffset(shape, out.strides, first));
      const std::size_t in_step = in_head * sizeof(Elem<kType>);
      const std::size_t out_step = out_head * sizeof(Elem<kType>);
      const auto row_in = [&] {
        return reinterpret_cast<const Elem<kType>*>(s_at);
      };
      const auto row_out = [&] { return reinterpret_cast<Elem<kType>*>(o_at); };
      detail::RowIndex i = first;
      // A step whose batches take no plan (a small step, kept-only,
      // or rows too long for kMaxBatchPlanBytes), unless its rows stream
      // from memory one by one (finish_prefetch): each batch's exps carry
      // the next batch's pass 1 (PlainRowsCarrying), so that its reads from
      // L2 overlap arithmetic. D2wkeptonly took 0.97x the time of batches
      // run without carrying; D2w, bound by its fill, the same either way.
      // f32 rows, and 16-bit rows converted on load: a pass 1 that stores
      // its conversion waits beside the exps' stores.
      if constexpr (f32 || kPlainConvertOnLoad) {
        // As run_batch decides for a batch of contiguous heads.
        const bool planned =
            prefetch_rows && options.zero_masked &&
            per_batch * n * elem_bytes * (in.data == out.data ? 1 : 2) <=
                kMaxBatchPlanBytes;
        if (!planned && !finish_prefetch) {
          PlainRow next_plain[kPlainBatchRows];
          BatchRow next_batch[kPlainBatchRows];
          PlainRow* cur = plain;
          PlainRow* nxt = next_plain;
          BatchRow* cur_at = batch;
          BatchRow* nxt_at = next_batch;
          const auto take = [&](PlainRow* to, BatchRow* at) {
            std::size_t count = 0;
            for (; count < per_batch && r < run_end;
                 ++count, ++r, ++i.h, s_at += in_step, o_at += out_step) {
              fill_row(to[count], r, i, row_in(), row_out(), run_kept,
                       count * keys);
              at[count] = {r, i};
            }
            return count;
          };
          PlainMaxima maxima[2];
          std::size_t count = take(cur, cur_at);
          for (std::size_t g = 0; g < count; ++g) {
            PlainRowMaxOf<kType, false>(df, cur, g, options, &maxima[0]);
          }
          for (std::size_t slot = 0; count != 0; slot ^= 1) {
            const std::size_t next_count = take(nxt, nxt_at);
            maxima[slot ^ 1] = PlainMaxima{};
            PlainRowsCarrying<kType>(df, cur, count, options, maxima[slot], nxt,
                                     next_count, &maxima[slot ^ 1]);
            settle(cur, cur_at, count, maxima[slot].general);
            std::swap(cur, nxt);
            std::swap(cur_at, nxt_at);
            count = next_count;
          }
          continue;
        }
      }
      for (; r < run_end; ++r, ++i.h, s_at += in_step, o_at += out_step) {
        join_batch(r, i, row_in(), row_out(), run_kept);
        if (batched == per_batch) run_batch();
      }
      if (batched != 0) run_batch();
    }
    return;
  }
  const detail::CallKeptKeys kept_of(mask, rules, shape.q_len, n);
  // ALiBi distances need no check per row where the call's are all exact:
  // with the moving interval, p_q - k lies in [-q_len, k_len).
  const bool distances_exact =
      kept_of.moving() &&
      static_cast<double>(std::max(n, shape.q_len + 1)) < kExactDistance;
  // Rows [general_begin, r) wait for GeneralRowsOf.
  std::size_t general_begin = rows.begin;
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    if (i.b != kept_b || i.q != kept_q) {
      if (slot_taken) {
        ring_at = (ring_at + 1) % std::size(kept_ring.slots);
        slot_taken = false;
      }
      KeptKeys* const slot = &kept_ring.slots[ring_at];
      // Constructed in place from the returned value (no copy).
      kept = ::new (static_cast<void*>(slot)) KeptKeys(kept_of.Of(i.b, i.q));
      kept_b = i.b;
      kept_q = i.q;
      keys = kept->size();
    }
    if (kept->count == 0 || keys > plain_row_keys) continue;  // general
    // A full batch runs before this row takes its slot, so that its ALiBi
    // term is written there in place: built on the side and copied, the
    // copy's vector load of the scalar stores stalled store forwarding
    // (half of this loop's samples on P4alibi).
    if (batched == batch_rows || batch_keys + keys > kPlainBatchKeys<kType>) {
      run_batch();
    }
    PlainRow& row = plain[batched];
    if (alibi && distances_exact) {
      // One interval, no key shift (not Decode), every distance exact.
      row.alibi.neg_slope = -options.alibi_slopes[i.h];
      row.alibi.first[0] = static_cast<float>(
          kept_of.QueryPositionOf(i.q) -
          static_cast<std::int64_t>(kept->intervals[0].begin));
    } else if (alibi) {
      // As SoftmaxAlibiRow and GeneralRowsOf set ImplicitKeyDistance up;
      // rows whose distances are not all exact in f32 are not plain.
      const double p_q = static_cast<double>(
          detail::QueryPosition(mask, i.b, i.q, shape.q_len, n));
      row.alibi.neg_slope = -options.alibi_slopes[i.h];
      bool exact = true;
      for (std::size_t j = 0; j < kept->count; ++j) {
        const KeyInterval& iv = kept->intervals[j];
        const double first = p_q -
                             static_cast<double>(KeyShift(mask, rules, iv)) -
                             static_cast<double>(iv.begin);
        const double last = first - static_cast<double>(iv.size());
        exact &= std::fabs(first) < kExactDistance &&
                 std::fabs(last) < kExactDistance;
        row.alibi.first[j] = static_cast<float>(first);
      }
      if (!exact) continue;  // general
    }
    if (general_begin < r) {
      GeneralRowsOf<kType>(in, out, mask, options, {general_begin, r});
    }
    general_begin = r + 1;
    join_batch(r, i, in_base + detail::RowOffset(shape, in.strides, i),
               out_base + detail::RowOffset(shape, out.strides, i), kept);
    slot_taken = true;
  }
  if (batched != 0) run_batch();
  if (general_begin < rows.end) {
    GeneralRowsOf<kType>(in, out, mask, options, {general_begin, rows.end});
  }
}

void SoftmaxRows(const ScoreView& in, const ScoreView& out,
                 const MaskSpec& mask, const SoftmaxOptions& options,
                 RowRange rows, const detail::RowPart* part) {
  switch (in.type) {
    case ScoreType::kF32:
      // A dense mask alone: their own loop (16-bit rows of one convert in
      // GeneralRowsOf's scratch).
      if (part == nullptr) {
        const detail::Rules rules = detail::RulesOf(mask);
        if (ReadsDenseRows(rules, options)) {
          return DenseF32RowsOf(in, out, mask, rules, options, rows);
        }
      }
      return SoftmaxRowsOf<ScoreType::kF32>(in, out, mask, options, rows, part);
    case ScoreType::kBF16:
      return SoftmaxRowsOf<ScoreType::kBF16>(in, out, mask, options, rows,
                                             part);
    case ScoreType::kF16:
      return SoftmaxRowsOf<ScoreType::kF16>(in, out, mask, options, rows, part);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
