/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of bucket ladders (rlx/bucket_ladder.h): building a ladder
 * (power of two, geometric, custom), reading its buckets and routing a key.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_BUCKET_LADDER_H_
#define RLX_RLX_ATTN_MASK_BUCKET_LADDER_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Bucket ladders (rlx/bucket_ladder.h)                                     */
/*
 * A bucket is a half-open range of keys [start, end) (a key is the length a
 * graph is run for, >= 1); its compile extent ("upper") is end - 1. A ladder
 * is an ordered list of non-overlapping buckets; a key outside every bucket
 * routes nowhere. */

typedef struct rlx_ladder rlx_ladder;

/* The seed's power_of_two_ladder: extents next_pow2(min), doubling until
 * >= max; buckets [1, e0 + 1), [e0 + 1, e1 + 1), ... (8, 256) gives
 * [1,9) [9,17) [17,33) [33,65) [65,129) [129,257). Requires 1 <= min <= max
 * and no 64-bit overflow of the doubling. On success *out owns a new ladder
 * (free it with rlx_ladder_free). */
RLX_ATTN_MASK_API rlx_status rlx_ladder_power_of_two(uint64_t min, uint64_t max,
                                                     rlx_ladder** out);

/* `count` geometric steps from 1 to `max`: extent i (1..count) is the
 * smallest integer e with e^count >= max^i, decided exactly; repeated extents
 * are dropped. (512, 3) gives extents 8, 64, 512; (4096, 5) gives 6, 28, 148,
 * 777, 4096. Requires max >= 1 and count >= 1. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_geometric(uint64_t max, uint64_t count,
                                                  rlx_ladder** out);

/* A ladder of the n buckets [starts[i], ends[i]). Rejects n == 0, an empty
 * bucket (start >= end) and unsorted or overlapping buckets
 * (ends[i] > starts[i + 1]); gaps are allowed. The arrays are copied. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_custom(const uint64_t* starts,
                                               const uint64_t* ends, size_t n,
                                               rlx_ladder** out);

/* Frees a ladder; NULL is a no-op. */
RLX_ATTN_MASK_API void rlx_ladder_free(rlx_ladder* ladder);

/* Writes the number of buckets (>= 1) to *size. Requires non-NULL ladder
 * and size. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_size(const rlx_ladder* ladder,
                                             size_t* size);

/* Writes bucket i's [start, end). Requires non-NULL ladder, start and end,
 * and i below the bucket count. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_bucket(const rlx_ladder* ladder,
                                               size_t i, uint64_t* start,
                                               uint64_t* end);

/* Routes `key` in O(log n). When a bucket holds `key`, writes true to
 * *found and the bucket's index to *index; when none does (a key in a gap
 * or outside the ladder), writes false to *found and leaves *index alone.
 * Both are RLX_OK. Requires non-NULL ladder, found and index. */
RLX_ATTN_MASK_API rlx_status rlx_ladder_bucket_for(const rlx_ladder* ladder,
                                                   uint64_t key, bool* found,
                                                   size_t* index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_BUCKET_LADDER_H_ */
