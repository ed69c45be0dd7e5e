// SPDX-License-Identifier: MIT OR Apache-2.0
// Row geometry of score tensors and the kept-key intervals of structured
// masks: plain C++, shared by the per-target kernels and the dispatching
// code. Arguments are validated by the caller (score_kernels.cc).
//
// This is the seam every structured mask kind plugs into: a new kind adds a
// case to KeptKeysOf, and every kernel then works on its intervals alone.
#ifndef RLX_SRC_MASK_ROWS_H_
#define RLX_SRC_MASK_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "rlx/scores.h"

namespace rlx::detail {

inline bool IsDense(MaskKind kind) {
  return kind == MaskKind::kKeepF32 || kind == MaskKind::kKeepU8 ||
         kind == MaskKind::kBias;
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

// Absolute position of query row q of batch b, query_offset(b) + q, into
// *pos; false when it is negative (the row sees no key). Exact for every
// int64 offset and q <= PTRDIFF_MAX: a non-negative sum is below 2^64.
inline bool QueryPosition(const MaskSpec& mask, std::size_t b, std::size_t q,
                          std::size_t q_len, std::size_t k_len,
                          std::uint64_t* pos) {
  const std::int64_t offset =
      mask.query_offsets != nullptr
          ? mask.query_offsets[b]
          : static_cast<std::int64_t>(k_len) - static_cast<std::int64_t>(q_len);
  if (offset >= 0) {
    *pos = static_cast<std::uint64_t>(offset) + q;
    return true;
  }
  // |offset| without negating INT64_MIN.
  const std::uint64_t below = static_cast<std::uint64_t>(-(offset + 1)) + 1;
  if (q < below) return false;
  *pos = q - below;
  return true;
}

// The keys row (b, q) may attend to; [0, k_len) for None and dense kinds.
inline KeptKeys KeptKeysOf(const MaskSpec& mask, std::size_t b, std::size_t q,
                           std::size_t q_len, std::size_t k_len) {
  KeptKeys kept;
  const auto add = [&](std::size_t begin, std::size_t end) {
    if (begin >= end) return;
    if (kept.count > 0 && kept.intervals[kept.count - 1].end == begin) {
      kept.intervals[kept.count - 1].end = end;  // adjacent: one interval
    } else {
      kept.intervals[kept.count++] = {begin, end};
    }
  };
  switch (mask.kind) {
    case MaskKind::kCausal:
    case MaskKind::kSlidingWindow: {
      std::uint64_t pos = 0;
      // A query before key 0 sees nothing.
      if (!QueryPosition(mask, b, q, q_len, k_len, &pos)) break;
      const std::size_t end =
          static_cast<std::size_t>(std::min<std::uint64_t>(pos + 1, k_len));
      std::size_t begin = 0;
      if (mask.kind == MaskKind::kSlidingWindow && mask.window != 0 &&
          mask.window < pos) {
        begin = static_cast<std::size_t>(
            std::min<std::uint64_t>(pos - mask.window, k_len));
      }
      add(begin, end);
      break;
    }
    case MaskKind::kDecode: {
      const std::size_t lo =
          mask.window == 0 ? 0 : mask.past - std::min(mask.window, mask.past);
      add(lo, mask.past);
      add(mask.upper, mask.upper + 1);
      break;
    }
    default:
      add(0, k_len);
  }
  return kept;
}

}  // namespace rlx::detail

#endif  // RLX_SRC_MASK_ROWS_H_
