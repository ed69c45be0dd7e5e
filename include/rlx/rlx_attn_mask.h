/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of rlx-attn-mask: C99, usable from C and through any FFI (Rust,
 * Python ctypes, ...). It mirrors the C++ API (rlx/bucket_ladder.h,
 * rlx/bucketed_cache.h, rlx/attn_mask.h, rlx/targets.h, rlx/scores.h,
 * rlx/score_kernels.h, rlx/block_mask.h, rlx/softmax_merge.h,
 * rlx/softmax_split.h) with plain structs, enums and status codes.
 *
 * Errors. Every function that can fail returns an rlx_status and hands its
 * results back through out-pointers; no return value doubles as an error.
 * No C++ exception ever crosses this API. A failing call writes nothing to
 * its outputs and records a message, retrievable with rlx_last_error(), that
 * starts with the C function's name followed by ": " and names the offending
 * values. Null pointers, bad sizes, unknown enum values and unknown target
 * names are RLX_INVALID_ARGUMENT; so are shapes and strides that no tensor
 * in memory can have (more than PTRDIFF_MAX elements, or a last element
 * beyond byte PTRDIFF_MAX).
 *
 * Threads. Every function may be called from any thread. Ladders are
 * immutable after creation, so one ladder may be shared between threads.
 * The score kernels take row ranges so that a caller can split one call
 * across its own threads; results do not depend on the split. */
#ifndef RLX_RLX_ATTN_MASK_H_
#define RLX_RLX_ATTN_MASK_H_

#include <rlx/export.h>
#include <rlx/version.h> /* rlx_version() and the version macros */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status and errors                                                        */

typedef enum {
  RLX_OK = 0,
  RLX_INVALID_ARGUMENT = 1, /* rejected before anything was written */
  RLX_OUT_OF_MEMORY = 2,    /* an allocation failed or was too large */
  RLX_INTERNAL_ERROR = 3    /* a bug in the library: please report it */
} rlx_status;

/* The message of this thread's most recent failing call, "" if none has
 * failed yet. Successful calls leave it alone. The pointer stays valid until
 * the next failing call on the same thread (or the thread's exit); never
 * free it. Messages longer than 1023 bytes are truncated. */
RLX_ATTN_MASK_API const char* rlx_last_error(void);

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

/* ------------------------------------------------------------------------ */
/* SIMD targets (rlx/targets.h)                                             */
/*
 * Names are Highway's: "AVX3_DL", "AVX3", "AVX2", "SSE4", "SCALAR"/"EMU128"
 * on x86; "SVE2_128", "SVE_256", "SVE2", "SVE", "NEON" on Arm. */

/* Writes to *names the targets compiled into this library, best first, as
 * one comma-separated string without spaces (e.g.
 * "AVX3_DL,AVX3,AVX2,SSE4,SCALAR"). Static storage: valid for the life of
 * the process, never free it; every call writes the same pointer. Requires
 * names != NULL; RLX_OUT_OF_MEMORY if building the string failed. */
RLX_ATTN_MASK_API rlx_status rlx_compiled_targets(const char** names);

/* The compiled targets this CPU can run, best first, in the same form.
 * Never empty: the portable fallback runs everywhere. */
RLX_ATTN_MASK_API rlx_status rlx_supported_targets(const char** names);

/* Writes to *name the target the next kernel call dispatches to (static
 * storage, never free it). The first call chooses it: RLX_ATTN_TARGET from
 * the environment if set and non-empty, else the best supported target.
 * RLX_INVALID_ARGUMENT, writing nothing, if RLX_ATTN_TARGET names a target
 * that is unknown or not supported here, or name is NULL. */
RLX_ATTN_MASK_API rlx_status rlx_active_target(const char** name);

/* Writes to *name the target whose code the next kernel call runs, as that
 * code reports it itself (a function compiled once per target, reached
 * through the kernels' dispatch table); static storage, never free it. It
 * equals rlx_active_target's unless the dispatch is broken, which is what
 * an embedder's self-test can check. Fails as rlx_active_target does. */
RLX_ATTN_MASK_API rlx_status rlx_dispatched_target(const char** name);

/* Makes every later kernel call use the target `name`; NULL or "" returns to
 * the automatic choice (the best supported target). An unknown or
 * unsupported name is RLX_INVALID_ARGUMENT, with a message that lists the
 * supported targets; the active target is unchanged then. */
RLX_ATTN_MASK_API rlx_status rlx_force_target(const char* name);

/* ------------------------------------------------------------------------ */
/* Score kernels (rlx/scores.h, rlx/score_kernels.h)                        */
/*
 * Scores are a 4-D tensor [batch, heads, q_len, k_len] of f32, bf16 or f16,
 * keys contiguous within a row, rows, heads and batches at element strides.
 * Query row q of batch b sits at absolute position
 *   abs_q = query_offset(b) + q,   query_offset(b) = k_len - q_len
 * by default (decode: q_len = 1), or mask->query_offsets[b] when given. */

typedef enum {
  RLX_SCORE_F32 = 0,
  RLX_SCORE_BF16 = 1, /* uint16_t bits of a bfloat16 */
  RLX_SCORE_F16 = 2   /* uint16_t bits of an IEEE binary16 */
} rlx_score_type;

/* Tensor extents; in a dense mask an extent of 1 broadcasts. */
typedef struct {
  size_t batch, heads, q_len, k_len;
} rlx_shape4;

/* Element strides of a 4-D tensor whose key stride is 1. */
typedef struct {
  size_t batch, head, row;
} rlx_strides3;

/* A mutable view of scores. Requires data != NULL, every extent >= 1,
 * strides.row >= k_len (when q_len > 1), at most PTRDIFF_MAX elements and
 * the last element's byte offset below PTRDIFF_MAX (an extent of 1 adds
 * nothing whatever its stride); rows must not overlap. `data` needs no
 * alignment beyond its element type's. Dense masks obey the same limits. */
typedef struct {
  void* data;
  rlx_score_type type;
  rlx_shape4 shape;
  rlx_strides3 strides;
} rlx_score_view;

typedef enum {
  RLX_MASK_NONE = 0,           /* every key kept */
  RLX_MASK_CAUSAL = 1,         /* keep p_k <= p_q */
  RLX_MASK_SLIDING_WINDOW = 2, /* causal with window_keys = window + 1 */
  RLX_MASK_DECODE = 3,         /* keep [lo, past) and {upper} (the seed) */
  RLX_MASK_KEEP_F32 = 4,       /* dense float keep mask: kept iff m >= 0.5f */
  RLX_MASK_KEEP_U8 = 5,        /* dense uint8_t keep mask: kept iff m != 0 */
  RLX_MASK_BIAS = 6,           /* dense additive float bias (-inf masks) */
  RLX_MASK_KEEP_BITS = 7       /* dense bit-packed uint64_t keep mask */
} rlx_mask_kind;

/* The dense part of a mask on top of a structured kind (or NONE). */
typedef enum {
  RLX_DENSE_NONE = 0,
  RLX_DENSE_KEEP_F32 = 1,  /* float, kept iff m >= 0.5f (NaN: masked) */
  RLX_DENSE_KEEP_U8 = 2,   /* uint8_t, kept iff m != 0 */
  RLX_DENSE_KEEP_BITS = 3, /* uint64_t words: key k is bit k % 64 of word
                            * k / 64 of its row */
  RLX_DENSE_BIAS = 4       /* float, added to kept scores (-inf masks) */
} rlx_dense_kind;

/* Growing structs. rlx_mask_spec and rlx_softmax_options start with
 * `struct_size`, which the caller sets to the sizeof of the struct its code
 * was compiled with: initialise them with rlx_mask_spec_init and
 * rlx_softmax_options_init (static inline below, so the size compiled in is
 * the caller's), then set fields. Later versions of this library only
 * append fields, and read a caller's struct up to its struct_size: fields a
 * caller's header did not have take their defaults, so code built against
 * this header keeps working, unchanged, with a later library. A struct_size
 * the library does not know (0 from a struct that was zeroed but never
 * initialised, garbage, or a newer header's) is RLX_INVALID_ARGUMENT with a
 * message naming it; the library never reads past it. */

/* A block list (FlexAttention's BlockMask), rlx::BlockList: query row q is
 * in query block q / q_block, key block j holds keys [j * k_block,
 * (j + 1) * k_block). For query block i of (b, h), the first
 * num_blocks[(b * heads + h) * q_blocks + i] entries of that row of
 * `indices` ([batch, heads, q_blocks, max_blocks]) are its partial key
 * blocks; full_num_blocks / full_indices its full ones (both NULL: none),
 * in any order. batch and heads are the scores' extents or 1 (broadcast).
 * A key of a full block is kept without the position rules or a dense keep
 * part (still masked when its slot is empty or in another segment; a bias
 * and ALiBi still add to it); a key of a partial block goes through every
 * rule; a key of no listed block is masked and never read
 * (docs/SEMANTICS.md, "Block lists"). Rejected with RLX_INVALID_ARGUMENT,
 * nothing written: q_block or k_block 0, q_blocks != ceil(q_len /
 * q_block), batch or heads neither 1 nor the scores', indices NULL, only
 * one of the full pair NULL, a count outside [0, max_blocks], an index
 * outside [0, ceil(k_len / k_block)), a key block listed twice for a
 * query block (in one list, or full and partial), and a key list too.
 * rlx_classify_blocks' lists, converted to int32, give back the mask they
 * classify. */
typedef struct {
  const int32_t* num_blocks;
  const int32_t* indices;
  const int32_t* full_num_blocks;
  const int32_t* full_indices;
  size_t batch, heads, q_blocks, max_blocks, q_block, k_block;
} rlx_block_list;

/* How scores are masked (docs/SEMANTICS.md, "Mask rules over logical
 * positions").
 *
 * Every query row and key slot has a logical position: by default
 * p_q = query_offset(b) + q and p_k = k; q_position / k_position override
 * them (k_position < 0 marks an empty slot, never kept; q_position takes
 * precedence over query_offsets). DECODE is the layout p_k = k for
 * k < past, the new token at slot upper with p_k = past, slots
 * [past, upper) empty, p_q = past. A key is kept iff
 *   valid AND same_segment AND (base OR sink OR group) AND dense,
 *   base = (causal OR prefix) AND window AND window_after AND chunk,
 * causal (CAUSAL, SLIDING_WINDOW, DECODE): p_k <= p_q; prefix: p_q < P and
 * p_k < P; window (window_keys W > 0): p_q - p_k < W; window_after
 * (window_keys_after A > 0): p_k - p_q < A; chunk (C > 0):
 * floor(p_k / C) == floor(p_q / C); sink (S > 0): p_k < S and p_k <= p_q;
 * group: q_group and k_group equal and nonzero (Gemma 3's images: a query
 * sees its whole image whatever causal, window, chunk or prefix say);
 * same_segment: equal segment ids; dense: the dense part keeps it (a bias
 * is added to kept scores). Without causal, window_keys = window_keys_after
 * = w + 1 is the two-sided window |p_q - p_k| <= w (EmbeddingGemma,
 * ModernBERT). An absent rule (0 or NULL) constrains nothing;
 * an absent sink or prefix adds nothing. Positions are int64 and compared
 * exactly at every value: a key at INT64_MAX is kept like any other, and
 * ALiBi's distance |p_q - p_k| is exact before it is rounded to float.
 *
 * Window conventions: window_keys W counts the query itself (llama.cpp,
 * gemma.cpp, vLLM, ONNX Runtime); SLIDING_WINDOW's `window` w and DECODE's
 * are RLX's, which do not: W = w + 1 (w = 0 means no window).
 *
 * The dense part is either the kind itself (KEEP_F32, KEEP_U8, BIAS,
 * KEEP_BITS; then `dense` must be RLX_DENSE_NONE) or `dense` on top of a
 * structured kind; a mask has at most one. It reads `data` with extents
 * `shape` (each the scores' extent or 1 = broadcast, k_len always the
 * scores') at `strides` (elements; KEEP_BITS: words, a contiguous row being
 * ceil(k_len / 64) words, see rlx_keep_bits_strides). A zero stride
 * broadcasts too, on any axis; any other row stride must hold a row when
 * the part's q_len is above 1. RLX passes keep masks as [batch, 1, 1,
 * k_len].
 *
 * Rows whose kept set is a few key intervals (implicit key positions, no
 * segments, no groups, no dense part) are computed from those intervals
 * alone, never materialised; explicit key positions, segments, groups and
 * dense parts are evaluated per element (rlx_kept_keys then covers the
 * kept keys: for a row with a nonzero group, its group's keys too). Arrays
 * are read during the call only. DECODE requires past <= upper and k_len ==
 * upper + 1. */
typedef struct {
  size_t struct_size; /* sizeof(rlx_mask_spec): rlx_mask_spec_init */
  rlx_mask_kind kind;
  size_t window;        /* SLIDING_WINDOW, DECODE: RLX's w (W = w + 1) */
  size_t past, upper;   /* DECODE */
  const void* data;     /* the dense part: float, uint8_t or uint64_t */
  rlx_shape4 shape;     /* the dense part: extents, 1 = broadcast */
  rlx_strides3 strides; /* the dense part: element (KEEP_BITS: word) strides */
  /* Optional per-batch absolute position of query row 0 (shape.batch
   * entries of the scores); NULL means k_len - q_len for every batch. May
   * be negative. */
  const int64_t* query_offsets;
  /* The rules; 0 / NULL = absent. */
  /* W, C, S: 0 = none; above INT64_MAX, RLX_INVALID_ARGUMENT. */
  size_t window_keys;        /* W, counting the query */
  size_t chunk;              /* C */
  size_t sink_keys;          /* S */
  const int64_t* prefix_end; /* [batch]: P per batch */
  const int32_t* q_segment;  /* [batch, q_len]; both segments or neither */
  const int32_t* k_segment;  /* [batch, k_len] */
  const int64_t* q_position; /* [batch, q_len]; NULL: implicit */
  const int64_t* k_position; /* [batch, k_len]; NULL: implicit; < 0 empty */
  rlx_dense_kind dense;      /* a dense part on top of a structured kind */
  /* Appended after 0.1.0: a caller built against 0.1.0's header has none
   * of these (its struct_size says so); they take their defaults. */
  size_t window_keys_after; /* A, counting the query; 0 = none; above
                             * INT64_MAX, RLX_INVALID_ARGUMENT */
  const int32_t* q_group;   /* [batch, q_len], 0 = no group; both groups or
                             * neither */
  const int32_t* k_group;   /* [batch, k_len], 0 = no group */
  /* A key list (top-k sparse attention): row (b, h, q) keeps only the keys
   * its n slots name, ANDed with every other rule; -1 = unused slot, a key
   * named twice counts once. key_indices_shape = {batch or 1, heads or 1,
   * q_len or 1, n} (k_len holds n; 1 broadcasts, any other extent must be
   * the scores'), contiguous. n = 0 lists no key (rows fully masked); NULL
   * key_indices: no list. Any other slot value outside [0, k_len) is
   * RLX_INVALID_ARGUMENT naming the row, slot and value, with nothing
   * written. The softmax reads and writes the listed keys alone (kept-only
   * mode: the listed keys inside kept_keys); apply_mask fills every
   * unlisted key. Not with a block list, nor in the split softmax
   * (RLX_INVALID_ARGUMENT). */
  const int32_t* key_indices;
  rlx_shape4 key_indices_shape;
  rlx_block_list block_list; /* absent while block_list.num_blocks is NULL */
} rlx_mask_spec;

/* Softmax options (docs/SEMANTICS.md, "Softmax extensions"). Pass NULL for the
 * defaults, or a struct set up by rlx_softmax_options_init (scale 1, no
 * softcap, no sinks, no ALiBi, no row_lse, zero_masked true). */
typedef struct {
  size_t struct_size; /* sizeof(rlx_softmax_options) */
  float scale;        /* multiplies every score first */
  float softcap; /* c > 0: x -> c * tanh(x / c) after scale, before masking */
  /* Learned sink logit per head (gpt-oss), [heads] or NULL: enters only the
   * denominator, M = max(max_k z_k, s_h), p_k = exp(z_k - M) /
   * (sum_k exp(z_k - M) + exp(s_h - M)); not scaled, softcapped or masked.
   * Rows then sum to less than 1; a fully masked row stays all zeros. */
  const float* sink_logits;
  /* ALiBi slope per head, [heads] or NULL: z += -slope_h * |p_q - p_k| over
   * logical positions, after softcap and before a bias (rlx_alibi_slopes
   * gives ggml's slopes). */
  const float* alibi_slopes;
  /* Optional output, [batch * heads * q_len] or NULL: M + log(denominator)
   * of row (b * heads + h) * q_len + q, written for the call's rows; -INF
   * for a row with no kept key. Lets an executor split one row's keys over
   * threads and merge the parts: p = p_part * exp(lse_part - lse_total). */
  float* row_lse;
  /* false: kept-only writes, for executors that run P x V over
   * rlx_kept_keys only. Keys outside rlx_kept_keys of their row are left
   * unwritten; every key inside it is written exactly as in the default
   * mode, a masked one as 0 (rlx_kept_keys is a superset of the kept keys
   * under explicit positions, segments, dense parts and biases). A row whose
   * rlx_kept_keys is empty is left unwritten entirely. */
  bool zero_masked;
} rlx_softmax_options;

/* A mask spec with every rule absent: kind NONE, no dense part. */
static inline void rlx_mask_spec_init(rlx_mask_spec* spec) {
  memset(spec, 0, sizeof(*spec));
  spec->struct_size = sizeof(*spec);
  spec->kind = RLX_MASK_NONE;
  spec->dense = RLX_DENSE_NONE;
}

/* The default options: scale 1, nothing else, masked keys written as 0. */
static inline void rlx_softmax_options_init(rlx_softmax_options* options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->scale = 1.0f;
  options->zero_masked = true;
}

/* Flattened rows [begin, end) over batch * heads * q_len, row r being
 * (b, h, q) with r = (b * heads + h) * q_len + q. Pass NULL for all rows. */
typedef struct {
  size_t begin, end;
} rlx_row_range;

/* A half-open interval of key indices. */
typedef struct {
  size_t begin, end;
} rlx_key_interval;

/* The most intervals a row's kept keys take: the sink keys, the base rules'
 * keys and the DECODE token (rlx::KeptKeys::kMaxIntervals). A rule that
 * needed more would come with a new function, never a larger struct. */
#define RLX_MAX_KEPT_INTERVALS 3

/* The keys one row may attend to: intervals[0 .. count), sorted, disjoint,
 * non-empty; count 0 means the row is fully masked. */
typedef struct {
  rlx_key_interval intervals[RLX_MAX_KEPT_INTERVALS];
  size_t count;
} rlx_kept_intervals;

/* The contiguous strides of `shape` (rows of k_len, heads of q_len rows,
 * batches of `heads` heads). The products are not checked here: for a shape
 * of more than SIZE_MAX elements they wrap, and the kernels then reject the
 * shape itself (more than PTRDIFF_MAX elements). */
static inline rlx_strides3 rlx_contiguous_strides(rlx_shape4 shape) {
  rlx_strides3 s;
  s.batch = shape.heads * shape.q_len * shape.k_len;
  s.head = shape.q_len * shape.k_len;
  s.row = shape.k_len;
  return s;
}

/* The contiguous word strides of a KEEP_BITS dense part of `shape`: rows of
 * ceil(k_len / 64) words. Unchecked products, as above. */
static inline rlx_strides3 rlx_keep_bits_strides(rlx_shape4 shape) {
  rlx_strides3 s;
  s.row = shape.k_len / 64 + (shape.k_len % 64 != 0);
  s.head = shape.q_len * s.row;
  s.batch = shape.heads * s.head;
  return s;
}

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

#endif /* RLX_RLX_ATTN_MASK_H_ */
