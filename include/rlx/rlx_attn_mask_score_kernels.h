/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of the score kernels (rlx/score_kernels.h): a row's kept keys,
 * applying a mask, the masked softmax and ALiBi slopes.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_SCORE_KERNELS_H_
#define RLX_RLX_ATTN_MASK_SCORE_KERNELS_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_scores.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Score kernels (rlx/score_kernels.h)                                      */

/* Writes to *out the keys row (batch_index, q) of a tensor with q_len query
 * rows and k_len keys may attend to under *mask: at most
 * RLX_MAX_KEPT_INTERVALS intervals. Exact for rows whose keys all have
 * implicit positions and no segments, group or dense part (NONE and the
 * dense kinds give the whole row [0, k_len)); otherwise a superset that the
 * per-element rules narrow (a row with a nonzero group: its position
 * intervals and its group's keys in one hull, DECODE's token apart). Executors
 * use it to skip the masked part of P x V. Requires mask and out non-NULL, q <
 * q_len, k_len >= 1 and a valid mask for that k_len. */
RLX_ATTN_MASK_API rlx_status rlx_kept_keys(const rlx_mask_spec* mask,
                                           size_t batch_index, size_t q,
                                           size_t q_len, size_t k_len,
                                           rlx_kept_intervals* out);

/* Sets every masked score of rows `rows` (NULL: all) to `fill` (-INFINITY
 * from <math.h> is the usual choice; -1e9f reproduces the RLX CPU executor).
 * Kept scores are left untouched, bit for bit. A BIAS mask is added to every
 * score instead. bf16/f16 views store `fill` rounded to their type. */
RLX_ATTN_MASK_API rlx_status rlx_apply_mask(const rlx_score_view* scores,
                                            const rlx_mask_spec* mask,
                                            const rlx_row_range* rows,
                                            float fill);

/* In place, per row of `rows` (NULL: all):
 *   p = softmax(mask(softcap(scale * s)) + alibi + bias),
 * computed in f32 for every row type. Masked positions come out exactly 0
 * (those outside rlx_kept_keys are left unwritten when options->zero_masked
 * is false); a row with no kept
 * key comes out all zeros, never NaN; a kept row without sink logits sums
 * to 1 within 1e-6 (f32). A NaN or +inf among the kept scores is the caller's
 * and gives a NaN row, as plain softmax would. `options` NULL: the defaults. On
 * AVX-512 targets the call sets MXCSR.FTZ while it runs and restores the
 * caller's MXCSR before returning (rlx/score_kernels.h). No allocation,
 * except a per-thread exp buffer on a thread's first call on bf16/f16 rows
 * longer than 8192 keys, and a per-thread work area on a thread's first
 * call with a key list (grown for a longer list or row); both kept for
 * later calls (RLX_OUT_OF_MEMORY, nothing written, if one fails). */
RLX_ATTN_MASK_API rlx_status rlx_masked_softmax(
    const rlx_score_view* scores, const rlx_mask_spec* mask,
    const rlx_softmax_options* options, const rlx_row_range* rows);

/* The same from `in` into `out` (same shape and type; may alias exactly).
 * Rows outside `rows` of `out` are not written. */
RLX_ATTN_MASK_API rlx_status rlx_masked_softmax_into(
    const rlx_score_view* in, const rlx_score_view* out,
    const rlx_mask_spec* mask, const rlx_softmax_options* options,
    const rlx_row_range* rows);

/* Writes ggml's ALiBi slopes for `heads` heads into out[0 .. heads):
 * n = 2^floor(log2 heads), m0 = 2^(-max_bias / n), m1 = 2^(-max_bias / 2n),
 * slope m0^(h+1) for h < n, else m1^(2(h-n)+1) (8.0f is the usual max_bias).
 * Requires out != NULL, heads >= 1, out_len == heads and a finite
 * max_bias >= 0. */
RLX_ATTN_MASK_API rlx_status rlx_alibi_slopes(size_t heads, float max_bias,
                                              float* out, size_t out_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_SCORE_KERNELS_H_ */
