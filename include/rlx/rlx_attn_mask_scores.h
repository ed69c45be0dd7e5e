/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's types of the score kernels (rlx/scores.h): score views, mask
 * kinds and specs, block lists, softmax options, row ranges and kept-key
 * intervals, with their static inline initialisers and stride helpers.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_SCORES_H_
#define RLX_RLX_ATTN_MASK_SCORES_H_

#include <rlx/export.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Score kernel types (rlx/scores.h)                                        */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_SCORES_H_ */
