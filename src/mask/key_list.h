// SPDX-License-Identifier: MIT OR Apache-2.0
// Key lists (MaskSpec::key_indices, docs/SEMANTICS.md "Key lists"): row
// (b, h, q) keeps only the keys named in its n slots, ANDed with every other
// rule. Plain C++ shared by the dispatching code (checks, kept_keys,
// classify_blocks) and the per-target kernels (src/softmax/
// key_list_softmax-inl.h, src/scores/apply_key_list-inl.h).
//
// A row's listed keys are evaluated against the other rules one by one:
// the implicit-position rules are the row's kept intervals (KeptKeysOf, an
// interval test on the index); the per-element parts (explicit key
// positions, segments, a dense keep part, a -inf bias) go through
// ListedKeyRules, a scalar test per listed key.
#ifndef RLX_SRC_MASK_KEY_LIST_H_
#define RLX_SRC_MASK_KEY_LIST_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "rlx/scores.h"
#include "src/mask/mask_rows.h"

namespace rlx::detail {

// Offset of row i's first slot in a contiguous key list of `shape`
// ({batch or 1, heads or 1, q_len or 1, n}; extents of 1 broadcast).
inline std::size_t KeyListRowOffset(const Shape4& shape, const RowIndex& i) {
  const std::size_t b = shape.batch == 1 ? 0 : i.b;
  const std::size_t h = shape.heads == 1 ? 0 : i.h;
  const std::size_t q = shape.q_len == 1 ? 0 : i.q;
  return ((b * shape.heads + h) * shape.q_len + q) * shape.k_len;
}

// Whether slot value v is neither -1 (unused) nor a key below k_len.
inline bool BadKeySlot(std::int32_t v, std::size_t k_len) {
  return v < -1 || (v >= 0 && static_cast<std::uint64_t>(v) >= k_len);
}

// The first bad slot of `slots[0, n)`, or n.
inline std::size_t FirstBadKeySlot(const std::int32_t* slots, std::size_t n,
                                   std::size_t k_len) {
  // The OR over the row first: vectorised by the compiler, and rows are
  // nearly always valid.
  bool any = false;
  for (std::size_t s = 0; s < n; ++s) any |= BadKeySlot(slots[s], k_len);
  if (!any) return n;
  std::size_t s = 0;
  while (!BadKeySlot(slots[s], k_len)) ++s;
  return s;
}

// The listed span [first, last + 1) of the keys named in slots[0, n)
// (empty: begin == end == 0).
inline KeyInterval ListedSpan(const std::int32_t* slots, std::size_t n) {
  std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = -1;
  for (std::size_t s = 0; s < n; ++s) {
    const std::int32_t v = slots[s];
    if (v < 0) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (hi < 0) return {};
  return {static_cast<std::size_t>(lo), static_cast<std::size_t>(hi) + 1};
}

// kept_keys of a key-list row: the rules' intervals clipped to the listed
// span of every head's list of row (b, q) (kept_keys takes no head, so it
// covers them all). A superset of the kept keys: the listed keys inside it
// are exactly the row's listed keys that the rules' intervals hold.
inline KeptKeys KeyListKeptKeys(const MaskSpec& mask, KeptKeys cover,
                                std::size_t b, std::size_t q) {
  const Shape4& ls = mask.key_indices_shape;
  std::size_t lo = SIZE_MAX, hi = 0;
  for (std::size_t h = 0; h < ls.heads; ++h) {
    const KeyInterval span = ListedSpan(
        mask.key_indices + KeyListRowOffset(ls, RowIndex{b, h, q}), ls.k_len);
    if (span.begin == span.end) continue;
    lo = std::min(lo, span.begin);
    hi = std::max(hi, span.end);
  }
  if (lo >= hi) return {};
  ClipKeptKeys(&cover, {lo, hi});
  return cover;
}

// Whether key k lies in one of `kept`'s intervals.
inline bool InKeptKeys(const KeptKeys& kept, std::size_t k) {
  for (std::size_t j = 0; j < kept.count; ++j) {
    if (k >= kept.intervals[j].begin && k < kept.intervals[j].end) return true;
  }
  return false;
}

// The per-element parts of a row's rules, for one listed key at a time:
// explicit key positions, segments, a dense keep part, a bias (whose -inf
// masks the key), groups, and the key's ALiBi distance. Keys are those
// inside the row's kept intervals (KeptKeysOf), which decide the
// implicit-position rules on their own except in a group row, whose
// intervals also cover its group's keys.
class ListedKeyRules {
 public:
  ListedKeyRules(const MaskSpec& mask, const Rules& rules, const RowIndex& i,
                 std::size_t q_len, std::size_t k_len)
      : mask_(mask), rules_(rules), b_(i.b), k_len_(k_len) {
    p_q_ = QueryPosition(mask, i.b, i.q, q_len, k_len);
    if (rules.explicit_keys) {
      const PositionRanges ranges = RowPositionRanges(mask, rules, i.b, p_q_);
      base_begin_ = std::max<__int128>(ranges.base_begin, 0);
      base_end_ = ranges.base_end;
      sink_end_ = ranges.sink_end;
      positions_ = mask.k_position + i.b * k_len;
    }
    if (rules.segments) {
      q_segment_ = mask.q_segment[i.b * q_len + i.q];
      k_segment_ = mask.k_segment + i.b * k_len;
    }
    // A group row's intervals cover its group's keys too: the position
    // rules are then decided per key, by the exact intervals (implicit
    // positions) or the ranges above (explicit ones).
    group_ = GroupOf(mask, rules, i.b, i.q, q_len);
    if (group_ != 0) {
      k_group_ = mask.k_group + i.b * k_len;
      if (!rules.explicit_keys) {
        exact_ = PositionKeptKeys(mask, rules, i.b, i.q, q_len, k_len);
      }
    }
    if (rules.dense != DenseKind::kNone) {
      m_ = RowOffset(mask.shape, mask.strides, i);
    }
  }

  // Whether the per-element parts of the rules read anything: without,
  // every key inside the intervals is kept (and has no bias).
  static bool Needed(const Rules& rules) {
    return rules.per_element || rules.dense == DenseKind::kBias;
  }

  // Whether key k (inside the row's kept intervals) is kept, a -inf bias
  // masking it (the softmax's view).
  bool Keep(std::size_t k) const {
    if (rules_.dense == DenseKind::kBias &&
        Bias(k) == -std::numeric_limits<float>::infinity()) {
      return false;
    }
    return KeepByRules(k);
  }

  // Whether key k is kept by the rules and a dense keep part, whatever a
  // bias says (apply_mask's view: a -inf bias is added, not filled).
  bool KeepByRules(std::size_t k) const {
    if (positions_ != nullptr) {
      const __int128 p = positions_[k];
      const bool base = p >= base_begin_ && p < base_end_;
      const bool sink = p >= 0 && p < sink_end_;
      // An empty slot (p < 0) is in no group.
      const bool group = group_ != 0 && p >= 0 && k_group_[k] == group_;
      if (!(base || sink || group)) return false;
    } else if (group_ != 0 && !InKeptKeys(exact_, k) && k_group_[k] != group_) {
      return false;
    }
    if (k_segment_ != nullptr && k_segment_[k] != q_segment_) return false;
    switch (rules_.dense) {
      case DenseKind::kKeepF32:
        return static_cast<const float*>(mask_.data)[m_ + k] >= 0.5f;
      case DenseKind::kKeepU8:
        return static_cast<const std::uint8_t*>(mask_.data)[m_ + k] != 0;
      case DenseKind::kKeepBits:
        return ((static_cast<const std::uint64_t*>(mask_.data)[m_ + k / 64] >>
                 (k % 64)) &
                1) != 0;
      case DenseKind::kBias:
      case DenseKind::kNone:
        break;
    }
    return true;
  }

  // The bias of key k (0 without one).
  float Bias(std::size_t k) const {
    return rules_.dense == DenseKind::kBias
               ? static_cast<const float*>(mask_.data)[m_ + k]
               : 0.0f;
  }

  // ALiBi's -slope |p_q - p_k| of key k, from its logical position.
  float Alibi(float slope, std::size_t k) const {
    const __int128 d =
        static_cast<__int128>(p_q_) - KeyPosition(mask_, b_, k, k_len_);
    const double distance = static_cast<double>(d < 0 ? -d : d);
    return static_cast<float>(-static_cast<double>(slope) * distance);
  }

 private:
  const MaskSpec& mask_;
  const Rules& rules_;
  std::size_t b_, k_len_;
  std::int64_t p_q_ = 0;
  const std::int64_t* positions_ = nullptr;
  __int128 base_begin_ = 0, base_end_ = 0, sink_end_ = 0;
  std::int32_t q_segment_ = 0;
  const std::int32_t* k_segment_ = nullptr;
  std::int32_t group_ = 0;
  const std::int32_t* k_group_ = nullptr;
  KeptKeys exact_;  // a group row's position intervals (implicit positions)
  std::size_t m_ = 0;
};

// Removes repeated keys from keys[0, count) (first occurrence kept, order
// otherwise unchanged) and returns the new count. `seen` is a bit per key
// of the row, all 0 on entry and on return. Lists as top-k indexers return
// them, strictly increasing, skip it (StrictlyIncreasing, per target).
inline std::size_t DedupKeys(std::int32_t* keys, std::size_t count,
                             std::uint64_t* seen) {
  std::size_t out = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const auto k = static_cast<std::uint32_t>(keys[j]);
    const std::uint64_t bit = std::uint64_t{1} << (k % 64);
    if (seen[k / 64] & bit) continue;
    seen[k / 64] |= bit;
    keys[out++] = keys[j];
  }
  for (std::size_t j = 0; j < out; ++j) {
    seen[static_cast<std::uint32_t>(keys[j]) / 64] = 0;
  }
  return out;
}

}  // namespace rlx::detail

#endif  // RLX_SRC_MASK_KEY_LIST_H_
