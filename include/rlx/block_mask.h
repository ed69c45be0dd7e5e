// SPDX-License-Identifier: MIT OR Apache-2.0
// Block masks for tiled attention: which [tq x tk] tiles of Q K^T (and of
// P V) a mask leaves empty (skip both products), full (compute, nothing to
// mask) or partial (compute, then mask), in the compact form of PyTorch
// FlexAttention's BlockMask: per query block, the ascending indices of its
// partial key blocks (kv_num_blocks / kv_indices) and of its full ones
// (full_kv_num_blocks / full_kv_indices); a key block in neither list is
// empty.
#ifndef RLX_BLOCK_MASK_H_
#define RLX_BLOCK_MASK_H_

#include <rlx/export.h>

#include <cstddef>
#include <cstdint>

#include "rlx/scores.h"

namespace rlx {

// Caller-provided storage for the block mask of one (batch, head) of a
// score tensor: q_blocks = ceil(q_len / tq), k_blocks = ceil(k_len / tk);
// the index arrays hold q_blocks * k_blocks entries, row i (query block i)
// at [i * k_blocks, i * k_blocks + count).
struct BlockMaskView {
  std::size_t q_blocks = 0, k_blocks = 0;
  std::uint32_t* kv_num_blocks = nullptr;       // [q_blocks] partial
  std::uint32_t* kv_indices = nullptr;          // [q_blocks * k_blocks]
  std::uint32_t* full_kv_num_blocks = nullptr;  // [q_blocks] full
  std::uint32_t* full_kv_indices = nullptr;     // [q_blocks * k_blocks]
};

// Classifies the tiles of (batch_index, head) of scores of `shape` under
// `mask` (every rule of rlx/scores.h). Exact: "full" tiles keep every
// element, "empty" ones none, "partial" ones both; the per-element rules
// (explicit positions, segments, dense keep masks) are evaluated per
// element. A bias makes every non-empty tile partial (it must still be
// added), a -inf bias entry counting as masked. Throws
// std::invalid_argument naming the function and the values for tq or tk of
// 0, extents that do not match out's, null arrays, indices outside the
// shape, block counts above UINT32_MAX, or an invalid mask; nothing is
// written then.
RLX_ATTN_MASK_API void classify_blocks(
    const MaskSpec& mask, const Shape4& shape, std::size_t batch_index,
    std::size_t head, std::size_t tq, std::size_t tk, const BlockMaskView& out);

}  // namespace rlx

#endif  // RLX_BLOCK_MASK_H_
