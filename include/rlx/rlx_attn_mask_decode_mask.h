/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of decode masks (rlx/attn_mask.h): the keep mask of a decode
 * step in a bucketed graph.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_DECODE_MASK_H_
#define RLX_RLX_ATTN_MASK_DECODE_MASK_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Decode masks (rlx/attn_mask.h)                                           */
/*
 * K in the decode graph is [past keys 0..past_seq) | zero padding
 * [past_seq..upper) | the new token at upper], upper + 1 keys. A keep mask
 * holds 1.0f where attention may land, 0.0f elsewhere. */

/* Writes the seed's bucket_decode_mask_windowed(past_seq, upper, window)
 * into out[0 .. out_len): 1.0f at lo <= i < past_seq and at i == upper,
 * lo = past_seq - min(window, past_seq), 0.0f elsewhere; window == 0 means no
 * window (the causal bucket_decode_mask). SIMD, no allocation, `out` may be
 * unaligned. Requires out != NULL, past_seq <= upper and
 * out_len == upper + 1. */
RLX_ATTN_MASK_API rlx_status rlx_fill_bucket_decode_mask(
    float* out, size_t out_len, size_t past_seq, size_t upper, size_t window);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_DECODE_MASK_H_ */
