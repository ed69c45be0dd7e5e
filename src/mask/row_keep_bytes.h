// SPDX-License-Identifier: MIT OR Apache-2.0
// A row's per-element rules as keep bytes (docs/SEMANTICS.md, "The keep
// formula"): explicit key positions, groups, segments and dense keep parts,
// decided inside the row's intervals (src/mask/mask_rows.h KeptKeysOf), and
// the vector classes the softmax reads them by. Plain C++, shared by the
// per-target kernels and the dispatching code.
#ifndef RLX_SRC_MASK_ROW_KEEP_BYTES_H_
#define RLX_SRC_MASK_ROW_KEEP_BYTES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "rlx/scores.h"
#include "src/mask/mask_rows.h"

namespace rlx::detail {

// Classes `vectors` vectors of `lanes` keep bytes each, from `bytes` (0 or
// 1 each): bit v of full[v / 64] is set when every byte of vector v is
// kept, of partial[v / 64] when some but not all are; bits past `vectors`
// are 0. Returns the number of empty vectors.
inline std::size_t ClassVectors(const std::uint8_t* bytes, std::size_t vectors,
                                std::size_t lanes, std::uint64_t* full,
                                std::uint64_t* partial) {
  constexpr std::uint64_t kOnes = 0x0101010101010101u;
  std::size_t empty = 0;
  for (std::size_t w = 0; w * 64 < vectors; ++w) {
    std::uint64_t full_word = 0, partial_word = 0;
    const std::size_t end = std::min(vectors, w * 64 + 64);
    for (std::size_t v = w * 64; v < end; ++v) {
      const std::uint8_t* p = bytes + v * lanes;
      std::uint64_t any = 0, all = kOnes;
      std::size_t i = 0;
      for (; i + 8 <= lanes; i += 8) {
        std::uint64_t eight;
        std::memcpy(&eight, p + i, 8);
        any |= eight;
        all &= eight;
      }
      for (; i < lanes; ++i) {
        any |= p[i];
        all &= kOnes * p[i];
      }
      const bool is_full = all == kOnes, is_empty = any == 0;
      full_word |= std::uint64_t{is_full} << (v % 64);
      partial_word |= std::uint64_t{!is_full && !is_empty} << (v % 64);
      empty += is_empty;
    }
    full[w] = full_word;
    partial[w] = partial_word;
  }
  return empty;
}

// Which row's bytes a keep-byte buffer holds: rows of one batch and query
// index whose dense rows coincide (every head of a decode step, when the
// dense part broadcasts over heads) have the same bytes, computed once.
struct RowKeepCache {
  bool valid = false;
  std::size_t b = 0, q = 0, m = 0;
};

// The keep byte of each of the n slots at `positions`: 1 where the slot's
// position is in the row's base range [base_begin, base_last] or its sink
// range [0, sink_last], else 0 (an empty slot, < 0, is in neither). The
// bounds are inclusive so that a key at INT64_MAX can be kept (an exclusive
// end would need INT64_MAX + 1); an empty range has last < begin. The
// kernels pass a per-target vector version of it (src/mask/position_keep-inl.h)
// that computes the same bytes; this one serves the rest and its tails.
using PositionKeepFn = void (*)(const std::int64_t* positions, std::size_t n,
                                std::int64_t base_begin, std::int64_t base_last,
                                std::int64_t sink_last, std::uint8_t* bytes);
inline void PositionKeepBytes(const std::int64_t* positions, std::size_t n,
                              std::int64_t base_begin, std::int64_t base_last,
                              std::int64_t sink_last, std::uint8_t* bytes) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t p = positions[k];
    bytes[k] = static_cast<std::uint8_t>((p >= base_begin && p <= base_last) |
                                         (p >= 0 && p <= sink_last));
  }
}

// Per-element rules of row (b, h, q) inside its intervals `kept` (KeptKeysOf's
// or a part of them): the byte of key k, bytes[k - origin] (for k in the
// intervals, all >= origin), becomes 1 where the key is kept by the position
// rules (explicit key positions; a group row's exact position intervals) or
// its group (a valid key of the row's nonzero group), and by its segment and
// the dense keep part, 0 elsewhere. Bytes
// outside the intervals are not written. One simple loop per rule, which
// the compiler vectorises at the baseline ISA this header is compiled for,
// except the int64 compares of explicit positions: those go through
// `position_keep` (the kernels pass their target's vector version). `cache`
// (may be null: always computed) skips the work when the buffer already holds
// this row's bytes; returns whether the bytes were computed.
inline bool RowKeepBytes(const MaskSpec& mask, const Rules& r,
                         const RowIndex& i, std::size_t q_len,
                         std::size_t k_len, const KeptKeys& kept,
                         std::uint8_t* bytes, std::size_t origin,
                         RowKeepCache* cache,
                         PositionKeepFn position_keep = &PositionKeepBytes) {
  const std::size_t m = RowOffset(mask.shape, mask.strides, i);
  if (cache != nullptr) {
    if (cache->valid && cache->b == i.b && cache->q == i.q && cache->m == m) {
      return false;  // the same intervals and bytes as the previous row
    }
    *cache = {true, i.b, i.q, m};
  }
  // Inclusive int64 bounds: a kept position is in [0, INT64_MAX], and an
  // empty range becomes last = -1 < begin.
  const auto bound = [](__int128 v) {
    return static_cast<std::int64_t>(
        std::clamp<__int128>(v, -1, std::numeric_limits<std::int64_t>::max()));
  };
  std::int64_t base_begin = 0, base_last = -1, sink_last = -1;
  if (r.explicit_keys) {
    const PositionRanges ranges = RowPositionRanges(
        mask, r, i.b, QueryPosition(mask, i.b, i.q, q_len, k_len));
    // begin <= p_q <= INT64_MAX for every rule (RowPositionRanges).
    base_begin = bound(std::max<__int128>(ranges.base_begin, 0));
    base_last = bound(ranges.base_end - 1);
    sink_last = bound(ranges.sink_end - 1);
  }
  const std::int64_t* positions =
      r.explicit_keys ? mask.k_position + i.b * k_len : nullptr;
  const std::int32_t q_segment =
      r.segments ? mask.q_segment[i.b * q_len + i.q] : 0;
  const std::int32_t* k_segment =
      r.segments ? mask.k_segment + i.b * k_len : nullptr;
  const std::int32_t group = GroupOf(mask, r, i.b, i.q, q_len);
  // A group row over implicit positions: `kept` covers more than the
  // position rules keep; their exact intervals say which.
  const KeptKeys exact = group != 0 && positions == nullptr
                             ? PositionKeptKeys(mask, r, i.b, i.q, q_len, k_len)
                             : KeptKeys{};
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t begin = kept.intervals[j].begin;
    const std::size_t end = kept.intervals[j].end;
    if (positions != nullptr) {
      position_keep(positions + begin, end - begin, base_begin, base_last,
                    sink_last, bytes + (begin - origin));
    } else if (group == 0) {
      std::memset(bytes + (begin - origin), 1, end - begin);
    } else {
      std::memset(bytes + (begin - origin), 0, end - begin);
      for (std::size_t e = 0; e < exact.count; ++e) {
        const std::size_t a = std::max(begin, exact.intervals[e].begin);
        const std::size_t z = std::min(end, exact.intervals[e].end);
        if (a < z) std::memset(bytes + (a - origin), 1, z - a);
      }
    }
    if (group != 0) {
      // OR the row's group, over valid keys only (an empty slot is never
      // kept): explicit positions >= 0; Decode's slots below past and its
      // token; every other implicit slot.
      const std::int32_t* k_group = mask.k_group + i.b * k_len;
      if (positions != nullptr) {
        for (std::size_t k = begin; k < end; ++k) {
          bytes[k - origin] |= static_cast<std::uint8_t>((k_group[k] == group) &
                                                         (positions[k] >= 0));
        }
      } else if (r.decode) {
        for (std::size_t k = begin; k < end; ++k) {
          const bool valid = k < mask.past || k == mask.upper;
          bytes[k - origin] |=
              static_cast<std::uint8_t>((k_group[k] == group) & valid);
        }
      } else {
        for (std::size_t k = begin; k < end; ++k) {
          bytes[k - origin] |= static_cast<std::uint8_t>(k_group[k] == group);
        }
      }
    }
    if (k_segment != nullptr) {
      for (std::size_t k = begin; k < end; ++k) {
        bytes[k - origin] &=
            static_cast<std::uint8_t>(k_segment[k] == q_segment);
      }
    }
    switch (r.dense) {
      case DenseKind::kKeepF32: {
        const float* keep = static_cast<const float*>(mask.data) + m;
        for (std::size_t k = begin; k < end; ++k) {
          bytes[k - origin] &= static_cast<std::uint8_t>(keep[k] >= 0.5f);
        }
        break;
      }
      case DenseKind::kKeepU8: {
        const std::uint8_t* keep =
            static_cast<const std::uint8_t*>(mask.data) + m;
        for (std::size_t k = begin; k < end; ++k) {
          bytes[k - origin] &= static_cast<std::uint8_t>(keep[k] != 0);
        }
        break;
      }
      case DenseKind::kKeepBits: {
        const std::uint64_t* words =
            static_cast<const std::uint64_t*>(mask.data) + m;
        for (std::size_t k = begin; k < end; ++k) {
          bytes[k - origin] &=
              static_cast<std::uint8_t>((words[k / 64] >> (k % 64)) & 1);
        }
        break;
      }
      case DenseKind::kNone:
      case DenseKind::kBias:
        break;
    }
  }
  return true;
}

// The intervals `kept` narrowed to their first and last kept key by the
// row's keep bytes (bytes[k - origin], 1 = kept), empty ones dropped:
// packed documents keep [document start, query] of a causal interval that
// starts at 0. *all_kept: whether every key of the narrowed intervals is
// kept, so that the bytes need not be read at all.
inline KeptKeys NarrowToKeptBytes(const KeptKeys& kept,
                                  const std::uint8_t* bytes, std::size_t origin,
                                  bool* all_kept) {
  KeptKeys narrowed;
  *all_kept = true;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::uint8_t* begin = bytes + (kept.intervals[j].begin - origin);
    const std::uint8_t* end = bytes + (kept.intervals[j].end - origin);
    // memchr is the C library's vectorised scan (bytes are 0 or 1).
    const auto* first = static_cast<const std::uint8_t*>(
        std::memchr(begin, 1, static_cast<std::size_t>(end - begin)));
    if (first == nullptr) continue;
    while (end[-1] == 0) --end;  // stops at `first` at the latest
    if (std::memchr(first, 0, static_cast<std::size_t>(end - first))) {
      *all_kept = false;
    }
    narrowed.intervals[narrowed.count++] = {
        origin + static_cast<std::size_t>(first - bytes),
        origin + static_cast<std::size_t>(end - bytes)};
  }
  return narrowed;
}

}  // namespace rlx::detail

#endif  // RLX_SRC_MASK_ROW_KEEP_BYTES_H_
