/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of block masks for tiled attention (rlx/block_mask.h):
 * classifying the tiles of a mask as empty, full or partial.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_BLOCK_MASK_H_
#define RLX_RLX_ATTN_MASK_BLOCK_MASK_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_scores.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Block masks for tiled attention (rlx/block_mask.h)                       */
/*
 * Which [tq x tk] tiles of Q K^T (and of P V) a mask leaves empty (skip both
 * products), full (compute, nothing to mask) or partial (compute, then
 * mask), in the compact form of PyTorch FlexAttention's BlockMask. */

/* Caller-provided storage for the block mask of one (batch, head):
 * q_blocks = ceil(q_len / tq), k_blocks = ceil(k_len / tk). Query block i's
 * partial key blocks are kv_indices[i * k_blocks .. + kv_num_blocks[i]),
 * its full ones full_kv_indices[i * k_blocks .. + full_kv_num_blocks[i]),
 * both ascending; a key block in neither list is empty. Entries past a
 * row's count are unspecified. Like rlx_score_view, a plain view: no
 * struct_size. */
typedef struct {
  size_t q_blocks, k_blocks;
  uint32_t* kv_num_blocks;      /* [q_blocks]: partial blocks per row */
  uint32_t* kv_indices;         /* [q_blocks * k_blocks] */
  uint32_t* full_kv_num_blocks; /* [q_blocks]: full blocks per row */
  uint32_t* full_kv_indices;    /* [q_blocks * k_blocks] */
} rlx_block_mask_view;

/* Classifies the tiles of (batch_index, head) of scores of *shape under
 * *mask (every rule) into *out. Exact: full tiles keep every element, empty
 * ones none, partial ones both; explicit positions, segments and dense keep
 * masks are evaluated per element. A bias makes every non-empty tile
 * partial (it must still be added), a -INFINITY entry counting as masked.
 * Requires mask, shape and out non-NULL, tq and tk >= 1, out's block counts
 * as above, non-NULL arrays, batch_index and head within the shape, block
 * counts that uint32_t indices can address, and a valid mask for the shape;
 * nothing is written otherwise. */
RLX_ATTN_MASK_API rlx_status rlx_classify_blocks(
    const rlx_mask_spec* mask, const rlx_shape4* shape, size_t batch_index,
    size_t head, size_t tq, size_t tk, const rlx_block_mask_view* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_BLOCK_MASK_H_ */
