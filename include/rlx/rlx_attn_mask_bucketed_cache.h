/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of the cache of one artifact per bucket of a ladder
 * (rlx/bucketed_cache.h).
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_BUCKETED_CACHE_H_
#define RLX_RLX_ATTN_MASK_BUCKETED_CACHE_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_bucket_ladder.h>
#include <rlx/rlx_attn_mask_status.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* A cache of one artifact per bucket (rlx/bucketed_cache.h)                */
/*
 * What the seed's BucketedCompileCache is to compiled graphs: an executor
 * keeps one artifact (a compiled plan) per bucket of a ladder and builds it
 * the first time a key routes there. Not thread-safe: an executor that
 * shares one cache across threads locks around its calls. */

typedef struct rlx_bucketed_cache rlx_bucketed_cache;

/* Builds the artifact of a bucket whose compile extent is `upper` into
 * *artifact (which may be NULL) and returns RLX_OK, or returns another
 * status, which the rlx_bucketed_cache_get that asked returns, caching
 * nothing (*artifact is then ignored: release what was made before
 * failing). Called at most once per bucket until that bucket is dropped.
 * The build and release functions must not call into the same cache. */
typedef rlx_status (*rlx_cache_build_fn)(uint64_t upper, void* user,
                                         void** artifact);

/* Releases an artifact that the build function made (NULL ones too), when
 * the cache drops it (rlx_bucketed_cache_retain_only, _clear, _free). */
typedef void (*rlx_cache_release_fn)(void* artifact, void* user);

/* A cache over a copy of `ladder` (the ladder may be freed afterwards) that
 * builds with build(upper, user, &artifact) and, when release is not NULL,
 * releases with release(artifact, user). Requires non-NULL ladder, build and
 * out. On success *out owns a new cache (free it with
 * rlx_bucketed_cache_free). */
RLX_ATTN_MASK_API rlx_status rlx_bucketed_cache_new(
    const rlx_ladder* ladder, rlx_cache_build_fn build,
    rlx_cache_release_fn release, void* user, rlx_bucketed_cache** out);

/* Releases every artifact and frees the cache; NULL is a no-op. */
RLX_ATTN_MASK_API void rlx_bucketed_cache_free(rlx_bucketed_cache* cache);

/* Routes `key` to its bucket, builds that bucket's artifact on first use,
 * and writes the bucket's upper and its artifact. A key that routes to no
 * bucket is RLX_INVALID_ARGUMENT, building nothing; a build that fails
 * returns its status, caching nothing, and rlx_last_error() then names the
 * bucket and the status (any message the build left is replaced). Either
 * way nothing is written. The
 * artifact stays the cache's, valid until its bucket is dropped. Requires
 * non-NULL cache, upper and artifact. */
RLX_ATTN_MASK_API rlx_status rlx_bucketed_cache_get(rlx_bucketed_cache* cache,
                                                    uint64_t key,
                                                    uint64_t* upper,
                                                    void** artifact);

/* Writes whether bucket `index` holds a built artifact (false for an index
 * that is not a bucket of the ladder). */
RLX_ATTN_MASK_API rlx_status rlx_bucketed_cache_is_built(
    const rlx_bucketed_cache* cache, size_t index, bool* built);

/* Writes how many buckets hold a built artifact. */
RLX_ATTN_MASK_API rlx_status
rlx_bucketed_cache_built_count(const rlx_bucketed_cache* cache, size_t* count);

/* Releases every artifact except bucket `index`'s (memory pressure: keep
 * the bucket in use). An index that is not a bucket of the ladder is
 * RLX_INVALID_ARGUMENT, releasing nothing. */
RLX_ATTN_MASK_API rlx_status
rlx_bucketed_cache_retain_only(rlx_bucketed_cache* cache, size_t index);

/* Releases every artifact. */
RLX_ATTN_MASK_API rlx_status
rlx_bucketed_cache_clear(rlx_bucketed_cache* cache);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_BUCKETED_CACHE_H_ */
