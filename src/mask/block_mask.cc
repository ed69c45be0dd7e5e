// SPDX-License-Identifier: MIT OR Apache-2.0
// classify_blocks: per query block, how many of its rows keep each key
// block whole and how many keep any of it. Rows whose kept set is exact
// intervals (rlx/score_kernels.h kept_keys) add to those counts per
// interval, through difference arrays: O(intervals) a row plus O(k_blocks)
// a query block, whatever tk. Rows with per-element rules count their keep
// bytes (src/mask/row_keep_bytes.h RowKeepBytes) per key block: O(k_len) a row.
#include "rlx/block_mask.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "src/mask/block_list.h"
#include "src/mask/key_list.h"
#include "src/mask/mask_rows.h"
#include "src/mask/row_keep_bytes.h"
#include "src/scores/list_checks.h"
#include "src/util/checked_size.h"

namespace rlx {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  throw std::invalid_argument("classify_blocks: " + what);
}

std::string ShapeString(const Shape4& s) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.heads) + ", " +
         std::to_string(s.q_len) + ", " + std::to_string(s.k_len) + "]";
}

void Check(const MaskSpec& mask, const Shape4& shape, std::size_t b,
           std::size_t h, std::size_t tq, std::size_t tk,
           const BlockMaskView& out) {
  if (tq == 0 || tk == 0) {
    Fail("block extents tq " + std::to_string(tq) + " and tk " +
         std::to_string(tk) + " must be at least 1");
  }
  if (shape.batch == 0 || shape.heads == 0 || shape.q_len == 0 ||
      shape.k_len == 0) {
    Fail("shape " + ShapeString(shape) + " has an empty extent");
  }
  if (b >= shape.batch || h >= shape.heads) {
    Fail("batch_index " + std::to_string(b) + " and head " + std::to_string(h) +
         " are not within shape " + ShapeString(shape));
  }
  const std::size_t q_blocks = shape.q_len / tq + (shape.q_len % tq != 0);
  const std::size_t k_blocks = shape.k_len / tk + (shape.k_len % tk != 0);
  if (out.q_blocks != q_blocks || out.k_blocks != k_blocks) {
    Fail("out has " + std::to_string(out.q_blocks) + " x " +
         std::to_string(out.k_blocks) + " blocks, but shape " +
         ShapeString(shape) + " in " + std::to_string(tq) + " x " +
         std::to_string(tk) + " tiles has " + std::to_string(q_blocks) + " x " +
         std::to_string(k_blocks));
  }
  if (k_blocks > std::numeric_limits<std::uint32_t>::max() ||
      !detail::CheckedMul(q_blocks, k_blocks)) {
    Fail(std::to_string(q_blocks) + " x " + std::to_string(k_blocks) +
         " blocks cannot be indexed by uint32 lists");
  }
  if (out.kv_num_blocks == nullptr || out.kv_indices == nullptr ||
      out.full_kv_num_blocks == nullptr || out.full_kv_indices == nullptr) {
    Fail("an array of out is null");
  }
  if (mask.dense_part() != DenseKind::kNone) {
    const Shape4& m = mask.shape;
    const auto fits = [](std::size_t mask_extent, std::size_t extent) {
      return mask_extent == extent || mask_extent == 1;
    };
    if (!fits(m.batch, shape.batch) || !fits(m.heads, shape.heads) ||
        !fits(m.q_len, shape.q_len)) {
      Fail("mask shape " + ShapeString(m) + " does not broadcast to " +
           ShapeString(shape));
    }
  }
  // The rest of the mask's checks, as the kernels make them.
  try {
    kept_keys(mask, b, 0, shape.q_len, shape.k_len);
  } catch (const std::invalid_argument& e) {
    Fail(e.what());
  }
  // A key list's slots and a block list's entries of every query row of
  // (b, h), as the kernels check a call's rows.
  detail::CheckKeyList("classify_blocks", mask, shape);
  detail::CheckBlockList("classify_blocks", mask, shape);
  const std::size_t first = (b * shape.heads + h) * shape.q_len;
  const RowRange rows{first, first + shape.q_len};
  detail::CheckKeyListSlots("classify_blocks", mask, shape, rows);
  detail::CheckBlockListRows("classify_blocks", mask, shape, rows);
}

}  // namespace

void classify_blocks(const MaskSpec& mask, const Shape4& shape,
                     std::size_t batch_index, std::size_t head, std::size_t tq,
                     std::size_t tk, const BlockMaskView& out) {
  Check(mask, shape, batch_index, head, tq, tk, out);
  const detail::Rules rules = detail::RulesOf(mask);
  const bool bias = rules.dense == DenseKind::kBias;
  // A key list or a block list: its rows' bytes, ANDed with the listed
  // keys (src/mask/key_list.h, src/mask/block_list.h).
  const bool listed = mask.key_indices != nullptr;
  const bool blocks = detail::HasBlockList(mask);
  const bool per_element = rules.per_element || bias || listed || blocks;
  const std::size_t n = shape.k_len, k_blocks = out.k_blocks;
  // Per key block of the current query block: rows keeping all of it, rows
  // keeping any of it; as difference arrays for the interval rows.
  std::vector<std::int64_t> full(k_blocks + 1), any(k_blocks + 1);
  std::vector<std::uint8_t> bytes(per_element ? n : 0);
  std::vector<std::uint8_t> listed_bytes(listed ? n : 0);
  for (std::size_t qb = 0; qb < out.q_blocks; ++qb) {
    std::fill(full.begin(), full.end(), 0);
    std::fill(any.begin(), any.end(), 0);
    const std::size_t q_begin = qb * tq;
    const std::size_t q_end = std::min(shape.q_len, q_begin + tq);
    for (std::size_t q = q_begin; q < q_end; ++q) {
      const KeptKeys kept =
          detail::KeptKeysOf(mask, rules, batch_index, q, shape.q_len, n);
      if (!per_element) {
        for (std::size_t j = 0; j < kept.count; ++j) {
          const std::size_t a = kept.intervals[j].begin;
          const std::size_t e = kept.intervals[j].end;
          ++any[a / tk];
          --any[(e - 1) / tk + 1];
          // Blocks inside [a, e): from the first starting at or after a to
          // the last ending at or before e (the short last block ends at n).
          const std::size_t first = a / tk + (a % tk != 0);
          const std::size_t last = e == n ? k_blocks : e / tk;
          if (first < last) {
            ++full[first];
            --full[last];
          }
        }
        continue;
      }
      const detail::RowIndex i{batch_index, head, q};
      if (blocks) {
        detail::BlockListRowKeepBytes(mask, rules, i, shape.q_len, n,
                                      bytes.data());
      } else {
        std::memset(bytes.data(), 0, n);
        detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept, bytes.data(),
                             /*origin=*/0, /*cache=*/nullptr);
      }
      if (bias) {
        const float* row = static_cast<const float*>(mask.data) +
                           detail::RowOffset(mask.shape, mask.strides, i);
        for (std::size_t k = 0; k < n; ++k) {
          bytes[k] &= static_cast<std::uint8_t>(
              row[k] != -std::numeric_limits<float>::infinity());
        }
      }
      if (listed) {
        const Shape4& ls = mask.key_indices_shape;
        const std::int32_t* slots =
            mask.key_indices + detail::KeyListRowOffset(ls, i);
        std::fill(listed_bytes.begin(), listed_bytes.end(), 0);
        for (std::size_t s = 0; s < ls.k_len; ++s) {
          if (slots[s] >= 0) {
            const auto k = static_cast<std::size_t>(slots[s]);
            listed_bytes[k] = bytes[k];
          }
        }
        bytes.swap(listed_bytes);
      }
      for (std::size_t kb = 0; kb < k_blocks; ++kb) {
        const std::size_t begin = kb * tk, end = std::min(n, begin + tk);
        std::size_t count = 0;
        for (std::size_t k = begin; k < end; ++k) count += bytes[k];
        // Single increments in difference form.
        if (count == end - begin) ++full[kb], --full[kb + 1];
        if (count != 0) ++any[kb], --any[kb + 1];
      }
    }
    const std::int64_t rows = static_cast<std::int64_t>(q_end - q_begin);
    std::uint32_t* partial_list = out.kv_indices + qb * k_blocks;
    std::uint32_t* full_list = out.full_kv_indices + qb * k_blocks;
    std::uint32_t partial_count = 0, full_count = 0;
    std::int64_t full_rows = 0, any_rows = 0;
    for (std::size_t kb = 0; kb < k_blocks; ++kb) {
      full_rows += full[kb];
      any_rows += any[kb];
      if (any_rows == 0) continue;  // empty
      // A bias still has to be added: never a full tile.
      if (full_rows == rows && !bias) {
        full_list[full_count++] = static_cast<std::uint32_t>(kb);
      } else {
        partial_list[partial_count++] = static_cast<std::uint32_t>(kb);
      }
    }
    out.kv_num_blocks[qb] = partial_count;
    out.full_kv_num_blocks[qb] = full_count;
  }
}

}  // namespace rlx
