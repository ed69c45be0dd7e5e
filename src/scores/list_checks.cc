// SPDX-License-Identifier: MIT OR Apache-2.0
#include "src/scores/list_checks.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "src/mask/block_list.h"
#include "src/mask/key_list.h"
#include "src/mask/mask_rows.h"
#include "src/scores/check_messages.h"
#include "src/util/checked_size.h"

namespace rlx::detail {

// A key list's extents (docs/SEMANTICS.md, "Key lists"): batch, heads and
// q_len each 1 (broadcast) or the scores', any n (0: no key is listed);
// the slots themselves are checked per call's rows (CheckKeyListSlots).
void CheckKeyList(const char* who, const MaskSpec& mask, const Shape4& scores) {
  if (mask.key_indices == nullptr) return;
  const Shape4& ls = mask.key_indices_shape;
  const auto fits = [](std::size_t list_extent, std::size_t extent) {
    return list_extent == extent || list_extent == 1;
  };
  if (!fits(ls.batch, scores.batch) || !fits(ls.heads, scores.heads) ||
      !fits(ls.q_len, scores.q_len)) {
    Fail(who, "key_indices shape " + ShapeString(ls) +
                  " does not broadcast to scores " + ShapeString(scores) +
                  " (batch, heads and q_len must each match or be 1; the "
                  "last extent is the slots per row)");
  }
  if (!CheckedProduct({ls.batch, ls.heads, ls.q_len, ls.k_len}) ||
      !CheckedProduct(
          {ls.batch, ls.heads, ls.q_len, ls.k_len, sizeof(std::int32_t)})) {
    Fail(who, "key_indices shape " + ShapeString(ls) + " has more than " +
                  MaxSizeString() + " bytes");
  }
}

// Every slot of the key-list rows that scores rows `rows` read: -1 or a key
// below k_len. Rows that read the same list row as the previous one (a
// list broadcast over heads) are checked once.
void CheckKeyListSlots(const char* who, const MaskSpec& mask,
                       const Shape4& scores, RowRange rows) {
  if (mask.key_indices == nullptr || rows.begin == rows.end) return;
  const Shape4& ls = mask.key_indices_shape;
  RowIndex i = RowIndexOf(scores, rows.begin);
  std::size_t previous = std::numeric_limits<std::size_t>::max();
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = NextRowIndex(scores, i)) {
    const std::size_t at = KeyListRowOffset(ls, i);
    if (at == previous) continue;
    previous = at;
    const std::int32_t* slots = mask.key_indices + at;
    const std::size_t bad = FirstBadKeySlot(slots, ls.k_len, scores.k_len);
    if (bad == ls.k_len) continue;
    Fail(who, "key_indices of row (batch " + std::to_string(i.b) + ", head " +
                  std::to_string(i.h) + ", query " + std::to_string(i.q) +
                  "), slot " + std::to_string(bad) + ", is " +
                  std::to_string(slots[bad]) +
                  ": must be -1 (unused) or a key in [0, k_len = " +
                  std::to_string(scores.k_len) + ")");
  }
}

// A block list's extents against the scores' (docs/SEMANTICS.md, "Block
// lists"); its entries are checked per call's rows (CheckBlockListRows).
void CheckBlockList(const char* who, const MaskSpec& mask,
                    const Shape4& scores) {
  const BlockList& list = mask.block_list;
  if (list.num_blocks == nullptr) return;
  const auto sizes = [&] {
    return "block list batch " + std::to_string(list.batch) + ", heads " +
           std::to_string(list.heads) + ", q_blocks " +
           std::to_string(list.q_blocks) + ", max_blocks " +
           std::to_string(list.max_blocks) + ", q_block " +
           std::to_string(list.q_block) + ", k_block " +
           std::to_string(list.k_block);
  };
  if (list.indices == nullptr) {
    Fail(who, "block list indices is null (num_blocks is set)");
  }
  if ((list.full_num_blocks == nullptr) != (list.full_indices == nullptr)) {
    Fail(who, std::string("block list full_num_blocks and full_indices are "
                          "both given or both null, but ") +
                  (list.full_num_blocks == nullptr ? "full_num_blocks"
                                                   : "full_indices") +
                  " is null");
  }
  if (list.q_block == 0 || list.k_block == 0) {
    Fail(who, sizes() + ": q_block and k_block must be at least 1");
  }
  if ((list.batch != 1 && list.batch != scores.batch) ||
      (list.heads != 1 && list.heads != scores.heads)) {
    Fail(who, sizes() + ": batch and heads must each be 1 or the scores' " +
                  ShapeString(scores));
  }
  const std::size_t q_blocks =
      scores.q_len / list.q_block + (scores.q_len % list.q_block != 0);
  if (list.q_blocks != q_blocks) {
    Fail(who, sizes() + ": q_blocks must be ceil(q_len / q_block) = " +
                  std::to_string(q_blocks) + " for q_len " +
                  std::to_string(scores.q_len));
  }
  if (!CheckedProduct(
          {list.batch, list.heads, list.q_blocks, list.max_blocks})) {
    Fail(who, sizes() + " describe more than " + MaxSizeString() + " entries");
  }
}

namespace {

// The entries of list row `row` (of batch x heads x q_blocks): counts in
// [0, max_blocks], indices of key blocks, no key block listed twice (in one
// list, or both full and partial: an error, not a union; FlexAttention
// never produces either), found a window of key blocks at a time in a
// fixed bitset (no allocation).
void CheckBlockListRow(const char* who, const BlockList& list,
                       const Shape4& scores, std::size_t row) {
  const std::size_t k_blocks =
      scores.k_len / list.k_block + (scores.k_len % list.k_block != 0);
  constexpr std::size_t kWindow = 4096;
  std::uint64_t seen[kWindow / 64];
  const std::int32_t* counts[] = {list.num_blocks, list.full_num_blocks};
  const std::int32_t* lists[] = {list.indices, list.full_indices};
  const char* names[] = {"num_blocks", "full_num_blocks"};
  const char* index_names[] = {"indices", "full_indices"};
  for (int l = 0; l < 2; ++l) {
    if (counts[l] == nullptr) continue;
    const std::int32_t count = counts[l][row];
    if (count < 0 || static_cast<std::size_t>(count) > list.max_blocks) {
      Fail(who, std::string("block list ") + names[l] + "[" +
                    std::to_string(row) + "] = " + std::to_string(count) +
                    " is not in [0, max_blocks " +
                    std::to_string(list.max_blocks) + "]");
    }
    for (std::int32_t s = 0; s < count; ++s) {
      const std::int32_t j = lists[l][row * list.max_blocks + s];
      if (j < 0 || static_cast<std::size_t>(j) >= k_blocks) {
        Fail(who, std::string("block list ") + index_names[l] + "[" +
                      std::to_string(row * list.max_blocks + s) +
                      "] = " + std::to_string(j) +
                      " is not a key block in [0, " + std::to_string(k_blocks) +
                      ") (k_len " + std::to_string(scores.k_len) +
                      ", k_block " + std::to_string(list.k_block) + ")");
      }
    }
  }
  for (std::size_t w = 0; w < k_blocks; w += kWindow) {
    std::memset(seen, 0, sizeof(seen));
    for (int l = 0; l < 2; ++l) {
      if (counts[l] == nullptr) continue;
      for (std::int32_t s = 0; s < counts[l][row]; ++s) {
        const auto j =
            static_cast<std::size_t>(lists[l][row * list.max_blocks + s]);
        if (j < w || j >= w + kWindow) continue;
        std::uint64_t& word = seen[(j - w) / 64];
        const std::uint64_t bit = std::uint64_t{1} << ((j - w) % 64);
        if (word & bit) {
          Fail(who, "block list query block " + std::to_string(row) +
                        " (of batch x heads x q_blocks) lists key block " +
                        std::to_string(j) +
                        " twice (in one list, or both full and partial)");
        }
        word |= bit;
      }
    }
  }
}

}  // namespace

// Every entry of the list rows that scores rows `rows` read, before any of
// them is written, as CheckKeyListSlots does for a key list.
void CheckBlockListRows(const char* who, const MaskSpec& mask,
                        const Shape4& scores, RowRange rows) {
  const BlockList& list = mask.block_list;
  if (list.num_blocks == nullptr || rows.begin == rows.end) return;
  RowIndex i = RowIndexOf(scores, rows.begin);
  std::size_t previous = std::numeric_limits<std::size_t>::max();
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = NextRowIndex(scores, i)) {
    const std::size_t row = ((list.batch == 1 ? 0 : i.b) * list.heads +
                             (list.heads == 1 ? 0 : i.h)) *
                                list.q_blocks +
                            i.q / list.q_block;
    // Rows of one query block read one list row: checked once a run.
    if (row == previous) continue;
    previous = row;
    CheckBlockListRow(who, list, scores, row);
  }
}

}  // namespace rlx::detail
