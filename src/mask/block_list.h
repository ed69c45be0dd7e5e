// SPDX-License-Identifier: MIT OR Apache-2.0
// Block lists (rlx::BlockList, FlexAttention's BlockMask) per row: which key
// blocks a row lists, full or partial, and the keep bytes of a block's keys
// (docs/SEMANTICS.md, "Block lists"). Plain C++, shared by the per-target
// kernels, kept_keys and classify_blocks; the lists are validated by
// CheckBlockList (score_kernels.cc) before any of this runs.
//
// A row (b, h, q) is in query block q / q_block of (b, h) (extents of 1
// broadcast). A key of a full block is kept iff valid AND same_segment; a key
// of a partial block iff the whole formula keeps it (the rules' intervals,
// then the per-element rules: RowKeepBytes); a key of no listed block is
// masked and never read.
#ifndef RLX_SRC_MASK_BLOCK_LIST_H_
#define RLX_SRC_MASK_BLOCK_LIST_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rlx/scores.h"
#include "src/mask/mask_rows.h"
#include "src/mask/row_keep_bytes.h"

namespace rlx::detail {

inline bool HasBlockList(const MaskSpec& mask) {
  return mask.block_list.num_blocks != nullptr;
}

// The listed key blocks of one row: `full` and `partial` index lists.
struct BlockListRow {
  const std::int32_t* full = nullptr;
  std::size_t full_count = 0;
  const std::int32_t* partial = nullptr;
  std::size_t partial_count = 0;
};

inline BlockListRow BlockListRowOf(const BlockList& list, std::size_t b,
                                   std::size_t h, std::size_t q) {
  const std::size_t lb = list.batch == 1 ? 0 : b;
  const std::size_t lh = list.heads == 1 ? 0 : h;
  const std::size_t at =
      (lb * list.heads + lh) * list.q_blocks + q / list.q_block;
  BlockListRow row;
  row.partial = list.indices + at * list.max_blocks;
  row.partial_count = static_cast<std::size_t>(list.num_blocks[at]);
  if (list.full_num_blocks != nullptr) {
    row.full = list.full_indices + at * list.max_blocks;
    row.full_count = static_cast<std::size_t>(list.full_num_blocks[at]);
  }
  return row;
}

// The keys of key block j: [j * k_block, min(k_len, (j + 1) * k_block)).
inline KeyInterval KeyBlockOf(const BlockList& list, std::int32_t j,
                              std::size_t k_len) {
  const std::size_t begin = static_cast<std::size_t>(j) * list.k_block;
  return {begin, std::min(k_len, begin + list.k_block)};
}

// Whether the keys of a full block need a per-element decision: empty slots
// (explicit key positions, the Decode layout's padding) and segments.
// Otherwise every key of a full block is kept.
inline bool FullBlocksPerElement(const Rules& r) {
  return r.explicit_keys || r.segments || r.decode;
}

// The keep bytes of keys [begin, end) of a full block of row i into
// bytes[0, end - begin): valid(k) AND same_segment(q, k).
inline void FullBlockKeepBytes(const MaskSpec& mask, const Rules& r,
                               const RowIndex& i, std::size_t q_len,
                               std::size_t k_len, std::size_t begin,
                               std::size_t end, std::uint8_t* bytes) {
  for (std::size_t k = begin; k < end; ++k) {
    bytes[k - begin] =
        static_cast<std::uint8_t>(KeyPosition(mask, i.b, k, k_len) >= 0);
  }
  if (r.segments) {
    const std::int32_t q_segment = mask.q_segment[i.b * q_len + i.q];
    const std::int32_t* k_segment = mask.k_segment + i.b * k_len;
    for (std::size_t k = begin; k < end; ++k) {
      bytes[k - begin] &= static_cast<std::uint8_t>(k_segment[k] == q_segment);
    }
  }
}

// The keep bytes of keys [begin, end) of a partial block of row i into
// bytes[0, end - begin): 0 outside the row's rule intervals `rule_kept`
// (KeptKeysOf), the per-element rules inside them (RowKeepBytes).
inline void PartialBlockKeepBytes(const MaskSpec& mask, const Rules& r,
                                  const RowIndex& i, std::size_t q_len,
                                  std::size_t k_len, const KeptKeys& rule_kept,
                                  std::size_t begin, std::size_t end,
                                  std::uint8_t* bytes) {
  std::memset(bytes, 0, end - begin);
  KeptKeys inside;
  for (std::size_t j = 0; j < rule_kept.count; ++j) {
    const std::size_t a = std::max(begin, rule_kept.intervals[j].begin);
    const std::size_t e = std::min(end, rule_kept.intervals[j].end);
    if (a < e) inside.intervals[inside.count++] = {a, e};
  }
  if (inside.count == 0) return;
  if (!r.per_element) {
    for (std::size_t j = 0; j < inside.count; ++j) {
      std::memset(bytes + (inside.intervals[j].begin - begin), 1,
                  inside.intervals[j].size());
    }
    return;
  }
  RowKeepBytes(mask, r, i, q_len, k_len, inside, bytes, begin,
               /*cache=*/nullptr);
}

// The keep byte of every key of row i into bytes[0, k_len): 0 for keys of
// no listed block, FullBlockKeepBytes and PartialBlockKeepBytes for the
// listed ones (the whole row at once: classify_blocks, not the kernels).
inline void BlockListRowKeepBytes(const MaskSpec& mask, const Rules& r,
                                  const RowIndex& i, std::size_t q_len,
                                  std::size_t k_len, std::uint8_t* bytes) {
  const BlockList& list = mask.block_list;
  const BlockListRow row = BlockListRowOf(list, i.b, i.h, i.q);
  std::memset(bytes, 0, k_len);
  for (std::size_t s = 0; s < row.full_count; ++s) {
    const KeyInterval keys = KeyBlockOf(list, row.full[s], k_len);
    if (FullBlocksPerElement(r)) {
      FullBlockKeepBytes(mask, r, i, q_len, k_len, keys.begin, keys.end,
                         bytes + keys.begin);
    } else {
      std::memset(bytes + keys.begin, 1, keys.size());
    }
  }
  if (row.partial_count == 0) return;
  const KeptKeys rule_kept = KeptKeysOf(mask, r, i.b, i.q, q_len, k_len);
  for (std::size_t s = 0; s < row.partial_count; ++s) {
    const KeyInterval keys = KeyBlockOf(list, row.partial[s], k_len);
    PartialBlockKeepBytes(mask, r, i, q_len, k_len, rule_kept, keys.begin,
                          keys.end, bytes + keys.begin);
  }
}

// Sorted, disjoint key intervals, at most kMaxIntervals + 2: Add merges
// what overlaps or touches the new one.
struct IntervalSet {
  KeyInterval iv[KeptKeys::kMaxIntervals + 2] = {};
  std::size_t count = 0;
  void Add(std::size_t begin, std::size_t end) {
    if (begin >= end) return;
    KeyInterval merged[KeptKeys::kMaxIntervals + 2] = {};
    std::size_t m = 0;
    bool placed = false;
    for (std::size_t j = 0; j < count; ++j) {
      if (iv[j].end < begin) {
        merged[m++] = iv[j];
      } else if (iv[j].begin > end) {
        if (!placed) merged[m++] = {begin, end}, placed = true;
        merged[m++] = iv[j];
      } else {
        begin = std::min(begin, iv[j].begin);
        end = std::max(end, iv[j].end);
      }
    }
    if (!placed) merged[m++] = {begin, end};
    for (std::size_t j = 0; j < m; ++j) iv[j] = merged[j];
    count = m;
  }
};

// kept_keys of row (b, q) under a block list: the hull of its full blocks
// and, within the rules' intervals, the hull of its partial blocks, over
// every head of the list (kept_keys names no head); at most three
// intervals (the closest neighbours merged), a cover of the kept keys.
inline KeptKeys BlockListKeptKeys(const MaskSpec& mask, const Rules& r,
                                  std::size_t b, std::size_t q,
                                  std::size_t q_len, std::size_t k_len) {
  const BlockList& list = mask.block_list;
  std::size_t full_begin = k_len, full_end = 0;
  std::size_t part_begin = k_len, part_end = 0;
  for (std::size_t h = 0; h < list.heads; ++h) {
    const BlockListRow row = BlockListRowOf(list, b, h, q);
    for (std::size_t s = 0; s < row.full_count; ++s) {
      const KeyInterval keys = KeyBlockOf(list, row.full[s], k_len);
      full_begin = std::min(full_begin, keys.begin);
      full_end = std::max(full_end, keys.end);
    }
    for (std::size_t s = 0; s < row.partial_count; ++s) {
      const KeyInterval keys = KeyBlockOf(list, row.partial[s], k_len);
      part_begin = std::min(part_begin, keys.begin);
      part_end = std::max(part_end, keys.end);
    }
  }
  IntervalSet set;
  set.Add(full_begin, full_end);
  if (part_begin < part_end) {
    const KeptKeys rules = KeptKeysOf(mask, r, b, q, q_len, k_len);
    for (std::size_t j = 0; j < rules.count; ++j) {
      set.Add(std::max(part_begin, rules.intervals[j].begin),
              std::min(part_end, rules.intervals[j].end));
    }
  }
  while (set.count > KeptKeys::kMaxIntervals) {
    std::size_t closest = 0;
    for (std::size_t j = 1; j + 1 < set.count; ++j) {
      if (set.iv[j + 1].begin - set.iv[j].end <
          set.iv[closest + 1].begin - set.iv[closest].end) {
        closest = j;
      }
    }
    set.Add(set.iv[closest].end, set.iv[closest + 1].begin);
  }
  KeptKeys kept;
  for (std::size_t j = 0; j < set.count; ++j) kept.intervals[j] = set.iv[j];
  kept.count = set.count;
  return kept;
}

// Calls f(begin, end) for each run of keys [begin, end) of row `row` in no
// listed block (ascending, maximal). Blocks are marked in a fixed bitset a
// window of kWindowBlocks at a time: no allocation, O(listed) a window.
template <class F>
void ForEachUnlistedRun(const BlockList& list, const BlockListRow& row,
                        std::size_t k_len, const F& f) {
  constexpr std::size_t kWindowBlocks = 4096;
  std::uint64_t marks[kWindowBlocks / 64];
  const std::size_t blocks = k_len / list.k_block + (k_len % list.k_block != 0);
  std::size_t run_begin = 0;  // first key of the current unlisted run
  for (std::size_t w = 0; w < blocks; w += kWindowBlocks) {
    const std::size_t w_end = std::min(blocks, w + kWindowBlocks);
    std::memset(marks, 0, sizeof(marks));
    const auto mark = [&](const std::int32_t* idx, std::size_t count) {
      for (std::size_t s = 0; s < count; ++s) {
        const auto j = static_cast<std::size_t>(idx[s]);
        if (j >= w && j < w_end) marks[(j - w) / 64] |= 1ull << ((j - w) % 64);
      }
    };
    mark(row.full, row.full_count);
    mark(row.partial, row.partial_count);
    for (std::size_t j = w; j < w_end; ++j) {
      if (!((marks[(j - w) / 64] >> ((j - w) % 64)) & 1)) continue;
      const std::size_t begin = j * list.k_block;
      if (run_begin < begin) f(run_begin, begin);
      run_begin = std::min(k_len, begin + list.k_block);
    }
  }
  if (run_begin < k_len) f(run_begin, k_len);
}

}  // namespace rlx::detail

#endif  // RLX_SRC_MASK_BLOCK_LIST_H_
