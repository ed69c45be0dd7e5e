// SPDX-License-Identifier: MIT OR Apache-2.0
// Row geometry of score tensors and the mask rules of docs/SEMANTICS.md ("Mask
// rules over logical positions"), evaluated per row: plain C++, shared by the
// per-target kernels and the dispatching code. Arguments are validated by
// the caller (score_kernels.cc).
//
// This is the seam every rule plugs into. RulesOf normalises a MaskSpec
// (kind and rule fields) once per call; KeptKeysOf turns a row's rules into
// at most three key intervals (sink, base, Decode token), exact when every
// key has its implicit position and the row is in no group (a group row's
// intervals cover its group's keys too); RowKeepBytes
// (src/mask/row_keep_bytes.h) decides the per-element rules (explicit key
// positions, groups, segments, dense keep masks) inside them. Kernels work on
// the intervals alone and read the bytes only where Rules says so.
#ifndef RLX_SRC_MASK_MASK_ROWS_H_
#define RLX_SRC_MASK_MASK_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "rlx/scores.h"
#include "src/mask/mask_field_list.h"

namespace rlx::detail {

// A mask's rules, normalised once per call. Windows, chunks and sinks fit in
// int64 (score_kernels.cc rejects larger ones).
struct Rules {
  bool causal = false;            // Causal, SlidingWindow, Decode
  bool decode = false;            // the Decode slot layout
  std::int64_t window = 0;        // W counting the query; 0 = none
  std::int64_t window_after = 0;  // A: keep p_k - p_q < A; 0 = none
  std::int64_t chunk = 0;         // C; 0 = none
  std::int64_t sink = 0;          // S; 0 = none
  DenseKind dense = DenseKind::kNone;
  bool explicit_keys = false;  // k_position given: intervals say nothing
  bool segments = false;
  // Groups (q_group, k_group): a row with a nonzero group also keeps its
  // group's keys, outside its position intervals (GroupOf).
  bool groups = false;
  // Whether some rule is decided per element (RowKeepBytes), not by the
  // intervals alone. A bias is added per element but keeps every key.
  bool per_element = false;
  // No rule but a dense f32, u8 or bias part: the whole row, read per
  // element by the dense sources directly (bit masks go through the bytes).
  bool dense_only = false;
  // A key list (key_indices): each row keeps its listed keys alone
  // (src/mask/key_list.h), ANDed with the other rules.
  bool key_list = false;
  // A block list (block_list.num_blocks): each row keeps the keys of its
  // listed blocks alone (src/mask/block_list.h), ANDed with the other rules.
  bool block_list = false;
};

inline Rules RulesOf(const MaskSpec& mask) {
  Rules r;
  r.causal = mask.kind == MaskKind::kCausal ||
             mask.kind == MaskKind::kSlidingWindow ||
             mask.kind == MaskKind::kDecode;
  r.decode = mask.kind == MaskKind::kDecode;
  // The kinds' own windows count the keys before the query: W = w + 1. One
  // of INT64_MAX keys or more spans every position difference: no window.
  std::uint64_t window = mask.window_keys;
  if ((mask.kind == MaskKind::kSlidingWindow ||
       mask.kind == MaskKind::kDecode) &&
      mask.window != 0 && mask.window < static_cast<std::size_t>(INT64_MAX)) {
    const std::uint64_t own = static_cast<std::uint64_t>(mask.window) + 1;
    window = window == 0 ? own : std::min<std::uint64_t>(window, own);
  }
  r.window = static_cast<std::int64_t>(window);
  r.chunk = static_cast<std::int64_t>(mask.chunk);
  r.sink = static_cast<std::int64_t>(mask.sink_keys);
  r.dense = mask.dense_part();
  r.explicit_keys = mask.k_position != nullptr;
  r.window_after = static_cast<std::int64_t>(mask.window_keys_after);
  r.segments = mask.q_segment != nullptr;
  r.groups = mask.q_group != nullptr;
  r.key_list = mask.key_indices != nullptr;
  r.block_list = mask.block_list.num_blocks != nullptr;
  r.per_element = r.explicit_keys || r.segments || r.groups ||
                  (r.dense != DenseKind::kNone && r.dense != DenseKind::kBias);
  // No rule field of the list (src/mask/mask_field_list.h) set: a new rule
  // makes a mask leave the dense-only path without a change here.
  r.dense_only = !r.causal && r.window == 0 && !fields::AnyRuleSet(mask) &&
                 r.dense != DenseKind::kNone && r.dense != DenseKind::kKeepBits;
  return r;
}

// (b, h, q) of flattened row r = (b * heads + h) * q_len + q.
struct RowIndex {
  std::size_t b, h, q;
};

inline RowIndex RowIndexOf(const Shape4& shape, std::size_t r) {
  return {r / (shape.heads * shape.q_len), (r / shape.q_len) % shape.heads,
          r % shape.q_len};
}

// The index of row r + 1 from that of row r: kernels walk their row range
// with this rather than pay RowIndexOf's three 64-bit divisions per row.
inline RowIndex NextRowIndex(const Shape4& shape, RowIndex i) {
  if (++i.q == shape.q_len) {
    i.q = 0;
    if (++i.h == shape.heads) {
      i.h = 0;
      ++i.b;
    }
  }
  return i;
}

// Element offset of row (b, h, q) in a tensor of `shape` / `strides`, where
// extents of 1 broadcast (their index is 0 whatever the stride).
inline std::size_t RowOffset(const Shape4& shape, const Strides3& strides,
                             const RowIndex& i) {
  return (shape.batch == 1 ? 0 : i.b * strides.batch) +
         (shape.heads == 1 ? 0 : i.h * strides.head) +
         (shape.q_len == 1 ? 0 : i.q * strides.row);
}

// The offset of row `next` (NextRowIndex of a row at `offset`) in a tensor
// of `shape` / `strides`: a step within a head adds the row stride (none
// where the tensor broadcasts its queries), only a step to the next head or
// batch pays RowOffset's multiplications. Walking a causal bias's rows,
// RowOffset for the input, output and mask was a fifth of the row loop's
// own time.
inline std::size_t NextRowOffset(const Shape4& shape, const Strides3& strides,
                                 const RowIndex& next, std::size_t offset) {
  if (next.q != 0) return shape.q_len == 1 ? offset : offset + strides.row;
  return RowOffset(shape, strides, next);
}

// A row's offsets in a call's input, output and dense part, each in
// elements of its own.
struct RowOffsets {
  std::size_t in = 0, out = 0, mask = 0;
};

// A call's rows in order, from row `first`: the current row's index and
// offsets, and the next row's, computed once (the current row's prefetch
// of the next one takes them, then Advance). The input and output share
// the scores' shape; the mask has its own (extents of 1 broadcast).
class RowWalk {
 public:
  RowWalk(const Shape4& shape, const Strides3& in, const Strides3& out,
          const MaskSpec& mask, std::size_t first)
      : shape_(shape),
        in_(in),
        out_(out),
        mask_(mask),
        i_(RowIndexOf(shape, first)),
        at_{RowOffset(shape, in, i_), RowOffset(shape, out, i_),
            RowOffset(mask.shape, mask.strides, i_)} {
    Look();
  }

  const RowIndex& index() const { return i_; }
  const RowOffsets& at() const { return at_; }
  const RowOffsets& next_at() const { return next_at_; }

  void Advance() {
    i_ = next_;
    at_ = next_at_;
    Look();
  }

 private:
  // The next row's index and offsets, by NextRowOffset.
  void Look() {
    next_ = NextRowIndex(shape_, i_);
    next_at_ = {NextRowOffset(shape_, in_, next_, at_.in),
                NextRowOffset(shape_, out_, next_, at_.out),
                NextRowOffset(mask_.shape, mask_.strides, next_, at_.mask)};
  }

  const Shape4& shape_;
  const Strides3& in_;
  const Strides3& out_;
  const MaskSpec& mask_;
  RowIndex i_, next_;
  RowOffsets at_, next_at_;
};

// floor(a / c) for c > 0.
inline std::int64_t FloorDiv(std::int64_t a, std::int64_t c) {
  const std::int64_t q = a / c;
  return (a % c != 0 && a < 0) ? q - 1 : q;
}

// Logical position of query row q of batch b: q_position, else the Decode
// token's (past), else query_offset(b) + q, saturated to int64 (a position
// beyond every key's keeps the same keys as INT64_MAX).
inline std::int64_t QueryPosition(const MaskSpec& mask, std::size_t b,
                                  std::size_t q, std::size_t q_len,
                                  std::size_t k_len) {
  if (mask.q_position != nullptr) return mask.q_position[b * q_len + q];
  if (mask.kind == MaskKind::kDecode) {
    return static_cast<std::int64_t>(mask.past);
  }
  const std::int64_t offset =
      mask.query_offsets != nullptr
          ? mask.query_offsets[b]
          : static_cast<std::int64_t>(k_len) - static_cast<std::int64_t>(q_len);
  std::int64_t pos = 0;
  if (__builtin_add_overflow(offset, static_cast<std::int64_t>(q), &pos)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return pos;
}

// Logical position of key slot k of batch b (< 0: an empty slot).
inline std::int64_t KeyPosition(const MaskSpec& mask, std::size_t b,
                                std::size_t k, std::size_t k_len) {
  if (mask.k_position != nullptr) return mask.k_position[b * k_len + k];
  if (mask.kind == MaskKind::kDecode) {
    if (k < mask.past) return static_cast<std::int64_t>(k);
    return k == mask.upper ? static_cast<std::int64_t>(mask.past) : -1;
  }
  return static_cast<std::int64_t>(k);
}

// The position rules of one query row as ranges of key positions: a key at
// position p_k >= 0 is kept by them iff it lies in [base_begin, base_end)
// (base = (causal OR prefix) AND window AND window_after AND chunk, each a
// range of p_k once p_q is fixed) or in [0, sink_end) (the sinks). 128-bit: no
// bound wraps; an empty range has begin >= end.
struct PositionRanges {
  __int128 base_begin = 0, base_end = 0, sink_end = 0;
};

inline PositionRanges RowPositionRanges(const MaskSpec& mask, const Rules& r,
                                        std::size_t b, std::int64_t p_q) {
  constexpr __int128 kAll = static_cast<__int128>(1) << 100;
  PositionRanges ranges;
  __int128 begin = 0, end = kAll;
  if (r.causal) {
    end = static_cast<__int128>(p_q) + 1;
    // A query inside the prefix also sees every prefix key.
    if (mask.prefix_end != nullptr && p_q < mask.prefix_end[b]) {
      end = std::max<__int128>(end, mask.prefix_end[b]);
    }
  }
  if (r.window != 0) {
    begin =
        std::max<__int128>(begin, static_cast<__int128>(p_q) - r.window + 1);
  }
  if (r.window_after != 0) {
    end = std::min<__int128>(end, static_cast<__int128>(p_q) + r.window_after);
  }
  if (r.chunk != 0) {
    const __int128 first =
        static_cast<__int128>(FloorDiv(p_q, r.chunk)) * r.chunk;
    begin = std::max(begin, first);
    end = std::min(end, first + r.chunk);
  }
  ranges.base_begin = begin;
  ranges.base_end = end;
  if (r.sink != 0) {
    ranges.sink_end =
        std::min<__int128>(r.sink, static_cast<__int128>(p_q) + 1);
  }
  return ranges;
}

// Appends [begin, end) to `kept`, whose intervals end at or before `begin`
// or touch it: overlapping or adjacent intervals become one.
inline void AddKeyInterval(KeptKeys* kept, std::size_t begin, std::size_t end) {
  if (begin >= end) return;
  if (kept->count > 0 && kept->intervals[kept->count - 1].end >= begin) {
    kept->intervals[kept->count - 1].end =
        std::max(kept->intervals[kept->count - 1].end, end);
  } else {
    kept->intervals[kept->count++] = {begin, end};
  }
}

// The group of row (b, q): 0 when the mask has no groups or the row is in
// none. A row with a nonzero group (a group row) also keeps the keys of its
// group, wherever the position rules put them.
inline std::int32_t GroupOf(const MaskSpec& mask, const Rules& r, std::size_t b,
                            std::size_t q, std::size_t q_len) {
  return r.groups ? mask.q_group[b * q_len + q] : 0;
}

// The keys the position rules (causal, prefix, windows, chunk, sinks) leave
// row (b, q), as intervals: exact for implicit key positions, the whole row
// for explicit ones. Groups are not in them (KeptKeysOf adds them).
inline KeptKeys PositionKeptKeys(const MaskSpec& mask, const Rules& r,
                                 std::size_t b, std::size_t q,
                                 std::size_t q_len, std::size_t k_len) {
  KeptKeys kept;
  const auto add = [&](std::size_t begin, std::size_t end) {
    AddKeyInterval(&kept, begin, end);
  };
  if (r.explicit_keys) {
    add(0, k_len);
    return kept;
  }
  const std::int64_t p_q = QueryPosition(mask, b, q, q_len, k_len);
  const PositionRanges ranges = RowPositionRanges(mask, r, b, p_q);
  // Keys at positions [0, slots) sit at index = position; Decode adds the
  // token at slot upper below.
  const __int128 slots = r.decode ? mask.past : k_len;
  const auto clamp = [&](__int128 v) {
    return static_cast<std::size_t>(std::clamp<__int128>(v, 0, slots));
  };
  add(0, clamp(ranges.sink_end));
  add(clamp(ranges.base_begin), clamp(ranges.base_end));
  if (r.decode) {
    const __int128 p = mask.past;
    if ((p >= ranges.base_begin && p < ranges.base_end) ||
        p < ranges.sink_end) {
      add(mask.upper, mask.upper + 1);
    }
  }
  return kept;
}

// The keys row (b, q) may attend to, as intervals: exact for implicit key
// positions without groups (the per-element rules then narrow them), the
// whole row for explicit ones. A group row's intervals also cover its
// group's keys: those at positions [0, past) (Decode) or of the whole row
// join the position intervals there in one hull (the keys between them are
// decided by RowKeepBytes), and Decode's token slot stays an interval of its
// own, so that a kept interval's keys keep one position shift (ALiBi).
inline KeptKeys KeptKeysOf(const MaskSpec& mask, const Rules& r, std::size_t b,
                           std::size_t q, std::size_t q_len,
                           std::size_t k_len) {
  const KeptKeys exact = PositionKeptKeys(mask, r, b, q, q_len, k_len);
  const std::int32_t g = GroupOf(mask, r, b, q, q_len);
  if (g == 0 || r.explicit_keys) return exact;
  const std::int32_t* k_group = mask.k_group + b * k_len;
  // Slots [0, slots) hold positions 0, 1, ...; Decode's token sits after
  // them at upper (valid), the slots between are empty.
  const std::size_t slots = r.decode ? mask.past : k_len;
  std::size_t lo = 0, hi = slots;
  while (lo < hi && k_group[lo] != g) ++lo;
  while (hi > lo && k_group[hi - 1] != g) --hi;
  if (lo == hi) lo = slots, hi = 0;  // no group key: an empty hull
  bool token = r.decode && k_group[mask.upper] == g;
  for (std::size_t j = 0; j < exact.count; ++j) {
    const KeyInterval& iv = exact.intervals[j];
    if (iv.begin < slots) {
      // Ends past `slots` only when Decode's token is adjacent to the past
      // keys (upper == past): one interval of the same shift.
      lo = std::min(lo, iv.begin);
      hi = std::max(hi, iv.end);
    } else {
      token = true;  // Decode's token slot
    }
  }
  KeptKeys kept;
  AddKeyInterval(&kept, lo, hi);
  if (token) AddKeyInterval(&kept, mask.upper, mask.upper + 1);
  return kept;
}

// KeptKeysOf for every row of one call, its rules read once. In calls whose
// rows each keep one interval that moves with the query (the causal and
// sliding-window rules, one, both or neither, over implicit positions with
// the default query offset k_len - q_len: no other rule or position field
// set, not Decode), Of takes it from two clamps inline. KeptKeysOf's call
// and general rules (128-bit bounds, sinks, chunks, prefixes, the Decode
// token) cost the softmax row loop measurably, once per row. Every other call
// takes KeptKeysOf itself.
class CallKeptKeys {
 public:
  CallKeptKeys(const MaskSpec& mask, const Rules& rules, std::size_t q_len,
               std::size_t k_len)
      : mask_(mask), rules_(rules), q_len_(q_len), k_len_(k_len) {
    MaskSpec others = mask;
    others.window_keys = 0;
    constexpr std::size_t kBound = std::size_t{1} << 61;
    moving_ = !rules.decode && mask.query_offsets == nullptr &&
              !fields::AnyRuleSet(others) && q_len < kBound && k_len < kBound;
    offset_ =
        static_cast<std::int64_t>(k_len) - static_cast<std::int64_t>(q_len);
    // A window of k_len + q_len keys or more spans every position
    // difference of the call: none (so that p + 1 - window cannot wrap).
    const auto span = static_cast<std::int64_t>(k_len + q_len);
    window_ = rules.window < span ? rules.window : 0;
  }

  // Whether rows take the moving interval (below), not KeptKeysOf.
  bool moving() const { return moving_; }
  // Row q's logical position, when moving().
  std::int64_t QueryPositionOf(std::size_t q) const {
    return offset_ + static_cast<std::int64_t>(q);
  }

  KeptKeys Of(std::size_t b, std::size_t q) const {
    if (!moving_) return KeptKeysOf(mask_, rules_, b, q, q_len_, k_len_);
    const std::int64_t p = QueryPositionOf(q);
    const auto n = static_cast<std::int64_t>(k_len_);
    const std::int64_t end =
        rules_.causal ? std::clamp<std::int64_t>(p + 1, 0, n) : n;
    const std::int64_t begin =
        window_ != 0 ? std::clamp<std::int64_t>(p + 1 - window_, 0, n) : 0;
    KeptKeys kept;
    if (begin < end) {
      kept.intervals[0] = {static_cast<std::size_t>(begin),
                           static_cast<std::size_t>(end)};
      kept.count = 1;
    }
    return kept;
  }

 private:
  const MaskSpec& mask_;
  Rules rules_;
  std::size_t q_len_, k_len_;
  bool moving_;
  std::int64_t offset_, window_;
};

// Leaves in *kept only its keys inside [keys.begin, keys.end): one part of
// a row split over threads (rlx/softmax_split.h) sees only these. In place,
// field by field: the row loop calls it only for parts, and a KeptKeys
// returned by value and assigned under a condition there was copied
// through overlapping vector moves whose loads missed store forwarding.
inline void ClipKeptKeys(KeptKeys* kept, KeyInterval keys) {
  std::size_t count = 0;
  for (std::size_t j = 0; j < kept->count; ++j) {
    const std::size_t begin = std::max(kept->intervals[j].begin, keys.begin);
    const std::size_t end = std::min(kept->intervals[j].end, keys.end);
    if (begin < end) kept->intervals[count++] = {begin, end};
  }
  kept->count = count;
}

}  // namespace rlx::detail

#endif  // RLX_SRC_MASK_MASK_ROWS_H_
