/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of merging a softmax row computed in parts
 * (rlx/softmax_merge.h).
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_SOFTMAX_MERGE_H_
#define RLX_RLX_ATTN_MASK_SOFTMAX_MERGE_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_scores.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Merging a softmax row computed in parts (rlx/softmax_merge.h)            */
/*
 * An executor that splits one long row's keys over threads runs
 * rlx_masked_softmax on a view of each key sub-range (with a mask whose
 * logical positions match the whole row's: query_offsets or explicit
 * positions) with options->row_lse set; each part is then a softmax over its
 * own keys. rlx_merge_softmax_parts rescales them in place,
 *   lse_total = log(sum_parts exp(lse_part) [+ exp(sink_h)]),
 *   p = p_part * exp(lse_part - lse_total),
 * so that together they are the softmax of the whole row, within the
 * softmax bound (one more f32 rounding per probability; bf16 / f16 parts
 * round once more to their type). Sinks: either exactly one part carries
 * them (its options->sink_logits; that part must keep a key), or none does
 * and the merge adds them (`sink_logits`). */

/* One part: its probabilities (rescaled in place) and the row_lse its
 * rlx_masked_softmax call wrote, [batch * heads * q_len]. */
typedef struct {
  rlx_score_view probs;
  const float* row_lse;
} rlx_softmax_part;

/* Rescales every row of the n_parts parts so that they form one softmax per
 * row. Every part has the same type, batch, heads and q_len; k_len may
 * differ. Rows are (b * heads + h) * q_len + q, as in row_lse. merged_lse
 * (optional, [batch * heads * q_len]) receives lse_total; sink_logits
 * (optional, [heads]) are the sinks no part carried.
 *
 * A part whose lse is -INFINITY (no kept key) is left as it is; a row where
 * every part's is stays as it is, its merged lse -INFINITY, sinks or not. A
 * NaN lse makes the merged row NaN. Every element of a part is scaled,
 * masked keys included (with zero_masked false, their contents too).
 * Requires parts non-NULL, n_parts >= 1, valid views (as rlx_score_view
 * says), non-NULL row_lse, parts that agree in type, batch, heads and q_len,
 * and sink logits that are finite or -INFINITY. No allocation for up to 16
 * parts. */
RLX_ATTN_MASK_API rlx_status
rlx_merge_softmax_parts(const rlx_softmax_part* parts, size_t n_parts,
                        float* merged_lse, const float* sink_logits);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_SOFTMAX_MERGE_H_ */
