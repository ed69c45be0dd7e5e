/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of split rows finished in place (rlx/softmax_split.h): balanced
 * key ranges and the two steps each part runs.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_SOFTMAX_SPLIT_H_
#define RLX_RLX_ATTN_MASK_SOFTMAX_SPLIT_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_scores.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Split rows finished in place (rlx/softmax_split.h)                       */
/*
 * One long row (a decode step at a long context) split over P threads
 * without a merge pass (docs/SEMANTICS.md, "Split rows finished in place").
 * rlx_split_kept_keys gives P disjoint key ranges of equal cost; each thread p
 * runs two steps on its own range of the same tensor, with one synchronisation
 * between them:
 *
 *   1. rlx_masked_softmax_part(scores, mask, keys_p, stats_p, options, rows):
 *      the part's exps, stored in place relative to the part's own maximum,
 *      and its statistics stats_p[r] per row;
 *   -- every part's step 1 done (the executor's barrier) --
 *   2. rlx_finish_softmax_part(scores, mask, keys_p, parts, P, p, options,
 *      rows): the row's log-sum-exp from every part's statistics, and this
 *      part's keys scaled into probabilities.
 *
 * Together the parts are rlx_masked_softmax of the whole row, with the same
 * mask and options. Each part reads and writes only its own key range (step
 * 2 reads the other parts' statistics), so the parts may run concurrently
 * on one tensor. */

/* The keys [begin, end) of every row of a call that one part covers. */
typedef struct {
  size_t begin, end;
} rlx_key_range;

/* One part's statistics for one row, written by rlx_masked_softmax_part: the
 * part's stored values v_k relate to the row's transformed kept scores z_k by
 * exp(z_k) = v_k * exp(log_scale), and `sum` is the sum of its v_k. A part
 * with no kept key: log_scale -INFINITY, sum 0. A kept NaN or +inf score:
 * both NaN. */
typedef struct {
  double log_scale;
  double sum;
} rlx_softmax_part_stats;

/* What the default mode's zero fill of a masked key costs, relative to the
 * softmax of a kept key: rlx_split_kept_keys' masked_key_cost for calls with
 * zero_masked true (0 for kept-only writes). */
#define RLX_MASKED_KEY_FILL_COST 0.25

/* Writes to *out part `part` of a balanced split of a row into `parts` key
 * ranges: disjoint, in order, covering [0, k_len), each costing about 1 /
 * parts of the row, where a key inside the row's kept keys *kept (as
 * rlx_kept_keys reports them for the row) costs 1 and a key outside costs
 * masked_key_cost (rounded to sixteenths). Each part is within about one
 * kept key's cost of its share; with a cost of 0, boundaries fall on kept
 * keys. Requires kept and out non-NULL, kept->count <=
 * RLX_MAX_KEPT_INTERVALS, parts >= 1, part < parts, masked_key_cost in
 * [0, 1], and intervals non-empty, sorted, disjoint and within k_len. */
RLX_ATTN_MASK_API rlx_status rlx_split_kept_keys(const rlx_kept_intervals* kept,
                                                 size_t k_len, size_t part,
                                                 size_t parts,
                                                 double masked_key_cost,
                                                 rlx_key_range* out);

/* Step 1 for the keys `keys` of every row of `rows` (NULL: all). Within that
 * range it writes as rlx_masked_softmax writes (every key of the range,
 * masked ones 0; with options->zero_masked false, the keys of the range
 * inside rlx_kept_keys), except that a kept key holds the exp of its score
 * relative to the part's maximum, in the row type, not yet a probability.
 * stats[r] ([batch * heads * q_len], indexed as row_lse) receives the part's
 * statistics for each row r of the call. The mask and `options` (NULL: the
 * defaults) are the whole row's: options->sink_logits and options->row_lse
 * are ignored here (step 2 uses them). A range holding no key of a row gives
 * that row no kept key (stats -INFINITY, 0). Requires what
 * rlx_masked_softmax requires, stats non-NULL, keys.begin <= keys.end and
 * keys.end <= k_len; nothing is written otherwise. Allocates as
 * rlx_masked_softmax does. */
RLX_ATTN_MASK_API rlx_status rlx_masked_softmax_part(
    const rlx_score_view* scores, const rlx_mask_spec* mask, rlx_key_range keys,
    rlx_softmax_part_stats* stats, const rlx_softmax_options* options,
    const rlx_row_range* rows);

/* Step 2 for part `part` of the n_parts parts, whose statistics are
 * parts[0 .. n_parts) (each part's stats array, in the same order for every
 * part), once every part's step 1 is done. Per row r of `rows` (NULL: all),
 * the row's log-sum-exp
 *   lse = log(sum_i parts[i][r].sum * exp(parts[i][r].log_scale)
 *             + exp(sink_h))
 * (in double; sink_h from options->sink_logits, none if NULL) is written to
 * options->row_lse[r] when row_lse is not NULL (give row_lse to one part's
 * step 2 only: every part would write the same value), and this part's kept
 * values are scaled by exp(log_scale - lse), rounded to f32 once, in place.
 * Only the keys of rlx_kept_keys inside `keys` are scaled; the rest stay as
 * step 1 wrote them. A row with no kept key in any part stays zeros and its
 * lse is -INFINITY, sinks or not (as rlx_masked_softmax). A NaN in any
 * part's statistics makes the row's lse NaN and every nonzero value of this
 * part NaN. Error bound: f32 rows as rlx_masked_softmax; bf16/f16 rows round
 * once more to their type. Requires what rlx_masked_softmax_part requires
 * (but stats), parts non-NULL, n_parts >= 1, every parts[i] non-NULL,
 * part < n_parts and sink logits that are finite or -INFINITY; nothing is
 * written otherwise. No allocation for up to 16 parts. */
RLX_ATTN_MASK_API rlx_status rlx_finish_softmax_part(
    const rlx_score_view* scores, const rlx_mask_spec* mask, rlx_key_range keys,
    const rlx_softmax_part_stats* const* parts, size_t n_parts, size_t part,
    const rlx_softmax_options* options, const rlx_row_range* rows);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_SOFTMAX_SPLIT_H_ */
