/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of ladders chosen from traffic (rlx/bucket_ladder.h:
 * BucketLadder::fit, capped, least_max_padding).
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_LADDER_FIT_H_
#define RLX_RLX_ATTN_MASK_LADDER_FIT_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_bucket_ladder.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Ladders chosen from traffic (rlx/bucket_ladder.h: BucketLadder::fit,     */
/* capped, least_max_padding)                                               */

/* What running one key on the graph compiled at extent `upper` costs, which
 * rlx_ladder_fit and rlx_ladder_fit_counts minimise summed over the
 * observed keys. */
typedef enum {
  RLX_LADDER_COST_DECODE = 0,  /* cost(upper) = upper */
  RLX_LADDER_COST_PREFILL = 1, /* cost(upper) = upper^2 */
  RLX_LADDER_COST_CUSTOM = 2   /* cost(upper) = fn(upper, user_data) */
} rlx_ladder_cost_model;

/* A caller's cost: finite, >= 0 and non-decreasing in `upper` (checked at
 * every distinct observed length). Called once per distinct length, on the
 * calling thread, before the fitting call returns. */
typedef double (*rlx_ladder_cost_fn)(uint64_t upper, void* user_data);

typedef struct {
  rlx_ladder_cost_model model;
  rlx_ladder_cost_fn fn; /* RLX_LADDER_COST_CUSTOM only; ignored otherwise */
  void* user_data;       /* passed to fn as is */
} rlx_ladder_cost;

/* The ladder of at most max_buckets buckets covering [1, max length] with
 * no gap that minimises the sum over the n observed lengths of
 * cost(upper of the bucket holding the length): BucketLadder::fit, an exact
 * dynamic program (see rlx/bucket_ladder.h for its guarantees and speed).
 * Every extent is an observed length; among the least-cost ladders it is
 * one with the fewest buckets. Rejects NULL lengths, cost or out, n == 0,
 * max_buckets == 0, a length of 0 or UINT64_MAX, an unknown cost model, a
 * CUSTOM cost without fn, and a cost that is negative, not finite or
 * decreasing at an observed length. On success *out owns a new ladder (free
 * it with rlx_ladder_free). */
RLX_ATTN_MASK_API rlx_status rlx_ladder_fit(const uint64_t* lengths, size_t n,
                                            size_t max_buckets,
                                            const rlx_ladder_cost* cost,
                                            rlx_ladder** out);

/* The same from n (lengths[i], counts[i]) pairs in any order (a length may
 * repeat: its counts add up). Also rejects NULL counts, a count of 0 and
 * counts summing past UINT64_MAX. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_fit_counts(const uint64_t* lengths,
                                                   const uint64_t* counts,
                                                   size_t n, size_t max_buckets,
                                                   const rlx_ladder_cost* cost,
                                                   rlx_ladder** out);

/* The most buckets rlx_ladder_capped builds (BucketLadder::kMaxCappedBuckets,
 * 2^20). */
#define RLX_MAX_CAPPED_BUCKETS ((size_t)1 << 20)

/* The ladder with the fewest buckets covering [1, max_key] with no gap in
 * which every key k of a bucket with extent u has
 * (u - k) / k <= max_padding, max_padding read as the decimal it prints as
 * (0.3 is exactly 3/10): BucketLadder::capped, exact integer extents.
 * Rejects NULL out, max_key 0 or UINT64_MAX, a NaN or negative max_padding,
 * and ladders of more than RLX_MAX_CAPPED_BUCKETS buckets. *out owns a new
 * ladder. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_capped(uint64_t max_key,
                                               double max_padding,
                                               rlx_ladder** out);

/* Writes to *max_padding the least max_padding for which
 * rlx_ladder_capped(max_key, max_padding) has at most max_buckets buckets
 * (BucketLadder::least_max_padding). Rejects NULL max_padding, max_key 0
 * or UINT64_MAX and max_buckets 0. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_least_max_padding(uint64_t max_key,
                                                          size_t max_buckets,
                                                          double* max_padding);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_LADDER_FIT_H_ */
