/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's mask rules over logical positions, compiled as C99: windows,
 * chunks, sinks, prefixes, segments, explicit positions and dense parts on
 * top of the rules, against the elements rlx_apply_mask keeps, and
 * rlx_classify_blocks's block masks against them, on success and on every
 * error
 * it documents. Each rejected call must return its status, write nothing
 * (outputs hold sentinels before the call and are compared after it) and
 * leave a message in rlx_last_error() that starts with the C function's
 * name (tests/c_api/c_api_check.h). */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

/* kept[q * k_len + k] = whether rlx_apply_mask keeps key k of row q of a
 * [1, 1, q_len, k_len] tensor under *m (at most 8 x 80). */
static int KeptByApply(const rlx_mask_spec* m, size_t q_len, size_t k_len,
                       int* kept) {
  float s[8 * 80];
  size_t i;
  rlx_score_view v = F32View(s, 1, 1, q_len, k_len);
  if (q_len * k_len > 8 * 80) return 0;
  for (i = 0; i < q_len * k_len; ++i) s[i] = 1.0f;
  if (rlx_apply_mask(&v, m, NULL, -7.0f) != RLX_OK) {
    fprintf(stderr, "  rlx_apply_mask: %s\n", rlx_last_error());
    return 0;
  }
  for (i = 0; i < q_len * k_len; ++i) kept[i] = s[i] == 1.0f;
  return 1;
}

/* The kept set of every row equals want (one int per key, row-major), and
 * rlx_kept_keys of every row covers it. */
static int KeptSetIs(const rlx_mask_spec* m, size_t q_len, size_t k_len,
                     const int* want) {
  int got[8 * 80];
  size_t q, k, i;
  if (!KeptByApply(m, q_len, k_len, got)) return 0;
  for (i = 0; i < q_len * k_len; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "  row %zu key %zu: kept %d, want %d\n", i / k_len,
              i % k_len, got[i], want[i]);
      return 0;
    }
  }
  for (q = 0; q < q_len; ++q) {
    rlx_kept_intervals kept;
    if (rlx_kept_keys(m, 0, q, q_len, k_len, &kept) != RLX_OK) return 0;
    for (k = 0; k < k_len; ++k) {
      int in = 0;
      for (i = 0; i < kept.count; ++i) {
        in |= kept.intervals[i].begin <= k && k < kept.intervals[i].end;
      }
      if (want[q * k_len + k] && !in) return 0;
    }
  }
  return 1;
}

static void TestMaskRules(void) {
  int want[8 * 80];
  size_t q, k;
  rlx_mask_spec m;
  rlx_kept_intervals kept;

  /* Causal + window_keys 3 (W counts the query): 4 queries at 2..5 over 6
   * keys. SLIDING_WINDOW(2) is the same mask. */
  m = Mask(RLX_MASK_CAUSAL);
  m.window_keys = 3;
  for (q = 0; q < 4; ++q)
    for (k = 0; k < 6; ++k) want[q * 6 + k] = k <= q + 2 && q + 2 - k < 3;
  CHECK(KeptSetIs(&m, 4, 6, want));
  m = Mask(RLX_MASK_SLIDING_WINDOW);
  m.window = 2;
  CHECK(KeptSetIs(&m, 4, 6, want));

  /* Causal + chunk 4 (Llama 4): 8 queries at 0..7. */
  m = Mask(RLX_MASK_CAUSAL);
  m.chunk = 4;
  for (q = 0; q < 8; ++q)
    for (k = 0; k < 8; ++k) want[q * 8 + k] = k <= q && k / 4 == q / 4;
  CHECK(KeptSetIs(&m, 8, 8, want));
  CHECK(rlx_kept_keys(&m, 0, 5, 8, 8, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 4, 6, 0, 0));

  /* StreamingLLM: 2 sinks + window_keys 3, one query at 9. */
  m = Mask(RLX_MASK_CAUSAL);
  m.sink_keys = 2;
  m.window_keys = 3;
  for (k = 0; k < 10; ++k) want[k] = k < 2 || k >= 7;
  CHECK(KeptSetIs(&m, 1, 10, want));
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 10, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 2, 0, 2, 7, 10));

  /* Decode past 6 in bucket 9 with 1 sink and window_keys 2: the sink, the
   * last past key and the new token (at position 6): three intervals. */
  m = DecodeMask(6, 9, 0);
  m.sink_keys = 1;
  m.window_keys = 2;
  for (k = 0; k < 10; ++k) want[k] = k == 0 || k == 5 || k == 9;
  CHECK(KeptSetIs(&m, 1, 10, want));
  memset(&kept, 0, sizeof(kept));
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 10, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 3, 0, 1, 5, 6) && ThirdIs(&kept, 9, 10));

  /* Gemma 3 / PaliGemma prefix: causal, bidirectional over [0, 3). */
  {
    const int64_t prefix_end[1] = {3};
    m = Mask(RLX_MASK_CAUSAL);
    m.prefix_end = prefix_end;
    for (q = 0; q < 5; ++q)
      for (k = 0; k < 5; ++k) want[q * 5 + k] = k <= q || (q < 3 && k < 3);
    CHECK(KeptSetIs(&m, 5, 5, want));
  }

  /* Two documents packed in one row: causal + segments. */
  {
    const int32_t seg[5] = {0, 0, 0, 1, 1};
    m = Mask(RLX_MASK_CAUSAL);
    m.q_segment = seg;
    m.k_segment = seg;
    for (q = 0; q < 5; ++q)
      for (k = 0; k < 5; ++k) want[q * 5 + k] = k <= q && seg[k] == seg[q];
    CHECK(KeptSetIs(&m, 5, 5, want));
  }

  /* A paged cache: explicit key positions, one empty slot (-1), the query
   * at position 2: keys at positions <= 2 are slots 1, 3 and 4. */
  {
    const int64_t k_pos[5] = {3, 0, -1, 1, 2};
    const int64_t q_pos[1] = {2};
    m = Mask(RLX_MASK_CAUSAL);
    m.k_position = k_pos;
    m.q_position = q_pos;
    for (k = 0; k < 5; ++k) want[k] = k == 1 || k == 3 || k == 4;
    CHECK(KeptSetIs(&m, 1, 5, want));
  }

  /* Dense parts on top of the rules: bits on causal (a 70-key row: bit
   * k % 64 of word k / 64), u8 on a window, and the KEEP_BITS kind alone. */
  {
    uint64_t words[2] = {0, 0};
    static const uint8_t keep_u8[6] = {1, 1, 0, 1, 1, 0};
    words[0] = ((uint64_t)1 << 0) | ((uint64_t)1 << 5);
    words[1] = ((uint64_t)1 << 0) | ((uint64_t)1 << 5) | ((uint64_t)1 << 7);
    m = Mask(RLX_MASK_CAUSAL);
    m.dense = RLX_DENSE_KEEP_BITS;
    m.data = words;
    m.shape.batch = m.shape.heads = m.shape.q_len = 1;
    m.shape.k_len = 70;
    m.strides = rlx_keep_bits_strides(m.shape);
    CHECK(m.strides.row == 2);
    for (k = 0; k < 70; ++k) want[k] = k == 0 || k == 5 || k == 64 || k == 69;
    CHECK(KeptSetIs(&m, 1, 70, want)); /* bit 71 is past the row */
    m.kind = RLX_MASK_KEEP_BITS;
    m.dense = RLX_DENSE_NONE;
    CHECK(KeptSetIs(&m, 1, 70, want));

    m = Mask(RLX_MASK_CAUSAL);
    m.window_keys = 4;
    m.dense = RLX_DENSE_KEEP_U8;
    m.data = keep_u8;
    m.shape.batch = m.shape.heads = m.shape.q_len = 1;
    m.shape.k_len = 6;
    m.strides = rlx_contiguous_strides(m.shape);
    for (k = 0; k < 6; ++k) want[k] = k >= 2 && keep_u8[k];
    CHECK(KeptSetIs(&m, 1, 6, want));
  }

  /* Rules the library rejects, naming them; nothing written. */
  {
    float s[8];
    float before[8];
    size_t i;
    static const int32_t seg[8] = {0};
    static const float keep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    rlx_score_view v = F32View(s, 1, 1, 1, 8);
    for (i = 0; i < 8; ++i) s[i] = (float)i;
    memcpy(before, s, sizeof(s));
    m = Mask(RLX_MASK_CAUSAL);
    m.dense = (rlx_dense_kind)17;
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), "mask->dense 17") != NULL);
    m = Mask(RLX_MASK_CAUSAL);
    m.q_segment = seg;
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), "k_segment") != NULL);
    m = DenseMask(RLX_MASK_KEEP_F32, keep, 1, 1, 1, 8);
    m.dense = RLX_DENSE_BIAS; /* a second dense part */
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    m = Mask(RLX_MASK_CAUSAL);
    m.chunk = (size_t)-1;
    EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 8, &kept), RLX_INVALID_ARGUMENT,
                 "rlx_kept_keys");
    CHECK(strstr(rlx_last_error(), "chunk 18446744073709551615") != NULL ||
          sizeof(size_t) != 8);
    m = Mask(RLX_MASK_CAUSAL);
    m.window_keys = (size_t)-1;
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), "window_keys") != NULL);
    m = Mask(RLX_MASK_CAUSAL);
    m.sink_keys = (size_t)-1;
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), "sink_keys") != NULL);
    m = Mask(RLX_MASK_CAUSAL);
    m.k_segment = seg; /* q_segment null */
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), "q_segment") != NULL);
    CHECK(BitsEqual(s, before, sizeof(s)));
  }

  /* keep_bits rows need ceil(k_len / 64) words: a 70-key row takes 2, so
   * a row stride of 1 word is rejected, naming both. */
  {
    float s[2 * 70];
    float before[2 * 70];
    size_t i;
    static const uint64_t words[4] = {1, 1, 1, 1};
    rlx_score_view v = F32View(s, 1, 1, 2, 70);
    for (i = 0; i < 2 * 70; ++i) s[i] = (float)i;
    memcpy(before, s, sizeof(s));
    m = Mask(RLX_MASK_KEEP_BITS);
    m.data = words;
    m.shape.batch = m.shape.heads = 1;
    m.shape.q_len = 2;
    m.shape.k_len = 70;
    m.strides = rlx_keep_bits_strides(m.shape);
    m.strides.row = 1;
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), "row stride 1") != NULL);
    CHECK(strstr(rlx_last_error(), "ceil(k_len / 64) = 2") != NULL);
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(BitsEqual(s, before, sizeof(s)));
  }
}

/* The block mask of a [1, 1, q_len, k_len] tensor under *m in tq x tk tiles
 * agrees with the elements rlx_apply_mask keeps: a tile is in the partial
 * list iff it has kept and masked elements, in the full list iff it has
 * only kept ones, both lists ascending. */
static int BlocksMatchApply(const rlx_mask_spec* m, size_t q_len, size_t k_len,
                            size_t tq, size_t tk) {
  int kept[8 * 80];
  uint32_t num[8], full_num[8], idx[8 * 80], full_idx[8 * 80];
  rlx_shape4 shape;
  rlx_block_mask_view out;
  size_t qb, kb, q, k, i;
  shape.batch = shape.heads = 1;
  shape.q_len = q_len;
  shape.k_len = k_len;
  out.q_blocks = q_len / tq + (q_len % tq != 0);
  out.k_blocks = k_len / tk + (k_len % tk != 0);
  out.kv_num_blocks = num;
  out.kv_indices = idx;
  out.full_kv_num_blocks = full_num;
  out.full_kv_indices = full_idx;
  if (out.q_blocks > 8 || !KeptByApply(m, q_len, k_len, kept)) return 0;
  if (rlx_classify_blocks(m, &shape, 0, 0, tq, tk, &out) != RLX_OK) {
    fprintf(stderr, "  rlx_classify_blocks: %s\n", rlx_last_error());
    return 0;
  }
  for (qb = 0; qb < out.q_blocks; ++qb) {
    size_t next_partial = 0, next_full = 0;
    for (kb = 0; kb < out.k_blocks; ++kb) {
      size_t n_kept = 0, n_all = 0;
      for (q = qb * tq; q < q_len && q < (qb + 1) * tq; ++q) {
        for (k = kb * tk; k < k_len && k < (kb + 1) * tk; ++k) {
          n_kept += (size_t)kept[q * k_len + k];
          ++n_all;
        }
      }
      if (n_kept == n_all) {
        i = next_full++;
        if (i >= full_num[qb] || full_idx[qb * out.k_blocks + i] != kb) break;
      } else if (n_kept != 0) {
        i = next_partial++;
        if (i >= num[qb] || idx[qb * out.k_blocks + i] != kb) break;
      }
    }
    if (kb != out.k_blocks || next_full != full_num[qb] ||
        next_partial != num[qb]) {
      fprintf(stderr, "  query block %zu, key block %zu: wrong class\n", qb,
              kb);
      return 0;
    }
  }
  return 1;
}

static void TestClassifyBlocks(void) {
  uint32_t num[4], full_num[4], idx[16], full_idx[16];
  uint32_t before[4 + 4 + 16 + 16];
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  rlx_shape4 shape;
  rlx_block_mask_view out;
  static const int32_t seg[8] = {0, 0, 0, 1, 1, 1, 1, 1};
  static const uint8_t keep[80] = {1, 0, 1, 1, 0, 1, 1, 1, 0, 1,
                                   1, 1, 0, 0, 1, 1, 1, 1, 1, 1};

  /* Causal 8 x 8 in 4 x 4 tiles: the diagonal tiles partial, the one below
   * full, the one above empty. */
  shape.batch = shape.heads = 1;
  shape.q_len = shape.k_len = 8;
  out.q_blocks = out.k_blocks = 2;
  out.kv_num_blocks = num;
  out.kv_indices = idx;
  out.full_kv_num_blocks = full_num;
  out.full_kv_indices = full_idx;
  CHECK(rlx_classify_blocks(&m, &shape, 0, 0, 4, 4, &out) == RLX_OK);
  CHECK(num[0] == 1 && idx[0] == 0 && full_num[0] == 0);
  CHECK(num[1] == 1 && idx[2] == 1 && full_num[1] == 1 && full_idx[2] == 0);

  /* Every rule against the elements apply_mask keeps, ragged tiles. */
  CHECK(BlocksMatchApply(&m, 7, 10, 3, 4));
  m.window_keys = 3;
  CHECK(BlocksMatchApply(&m, 8, 80, 3, 7));
  m.chunk = 4;
  m.sink_keys = 1;
  CHECK(BlocksMatchApply(&m, 8, 40, 2, 3));
  m = DecodeMask(30, 39, 5);
  CHECK(BlocksMatchApply(&m, 1, 40, 1, 8));
  m = Mask(RLX_MASK_CAUSAL);
  m.q_segment = seg;
  m.k_segment = seg;
  CHECK(BlocksMatchApply(&m, 8, 8, 2, 3));
  m = Mask(RLX_MASK_SLIDING_WINDOW);
  m.window = 2;
  m.dense = RLX_DENSE_KEEP_U8;
  m.data = keep;
  m.shape.batch = m.shape.heads = m.shape.q_len = 1;
  m.shape.k_len = 20;
  m.strides = rlx_contiguous_strides(m.shape);
  CHECK(BlocksMatchApply(&m, 4, 20, 2, 4));

  /* Bad input: rejected with a message naming the function and the
   * values, nothing written. */
  memset(num, 0xA5, sizeof(num));
  memset(full_num, 0xA5, sizeof(full_num));
  memset(idx, 0xA5, sizeof(idx));
  memset(full_idx, 0xA5, sizeof(full_idx));
  memcpy(before, num, sizeof(num));
  memcpy(before + 4, full_num, sizeof(full_num));
  memcpy(before + 8, idx, sizeof(idx));
  memcpy(before + 24, full_idx, sizeof(full_idx));
  m = Mask(RLX_MASK_CAUSAL);
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 0, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "tq 0") != NULL);
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 4, 0, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "tk 0") != NULL);
  /* Block counts that do not match the shape: 8 / 3 is 3 query blocks. */
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 3, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "2 x 2 blocks") != NULL);
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 1, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "batch_index 1") != NULL);
  EXPECT_ERROR(rlx_classify_blocks(&m, NULL, 0, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "shape is NULL") != NULL);
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 4, 4, NULL),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  EXPECT_ERROR(rlx_classify_blocks(NULL, &shape, 0, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  out.full_kv_indices = NULL;
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  out.full_kv_indices = full_idx;
  m.struct_size = 0;
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(strstr(rlx_last_error(), "mask->struct_size 0") != NULL);
  m = DecodeMask(3, 6, 0); /* k_len must be 7 */
  EXPECT_ERROR(rlx_classify_blocks(&m, &shape, 0, 0, 4, 4, &out),
               RLX_INVALID_ARGUMENT, "rlx_classify_blocks");
  CHECK(BitsEqual(num, before, sizeof(num)));
  CHECK(BitsEqual(full_num, before + 4, sizeof(full_num)));
  CHECK(BitsEqual(idx, before + 8, sizeof(idx)));
  CHECK(BitsEqual(full_idx, before + 24, sizeof(full_idx)));
}

/* ---- Groups and two-sided windows (window_keys_after, q_group, k_group).
 * Gemma 3's sliding layer with an image: causal, window_keys 3, image
 * tokens 1..5 form group 1 (longer than the window): written from Hugging
 * Face's or_masks(sliding causal, same image). EmbeddingGemma's two-sided
 * window |i - j| <= 2 as none + window_keys 3 + window_keys_after 3. A
 * caller built against 0.1.0's header (struct_size without the appended
 * fields) whatever bytes follow its struct. Bad groups and extents. */
static void TestGroupsAndTwoSidedWindows(void) {
  int want[8 * 80];
  size_t q, k;
  rlx_mask_spec m;
  rlx_kept_intervals kept;
  const int32_t image[8] = {0, 1, 1, 1, 1, 1, 0, 0};
  float s[8 * 8];
  rlx_score_view v = F32View(s, 1, 1, 8, 8);

  m = Mask(RLX_MASK_CAUSAL);
  m.window_keys = 3;
  m.q_group = image;
  m.k_group = image;
  for (q = 0; q < 8; ++q)
    for (k = 0; k < 8; ++k)
      want[q * 8 + k] =
          (k <= q && q - k < 3) || (image[q] != 0 && image[q] == image[k]);
  CHECK(KeptSetIs(&m, 8, 8, want));
  /* Row 1 (image) covers keys 0..5: its window [0, 2) and its image. */
  CHECK(rlx_kept_keys(&m, 0, 1, 8, 8, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 0, 6, 0, 0));
  /* Row 7 (text) keeps its exact window. */
  CHECK(rlx_kept_keys(&m, 0, 7, 8, 8, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 5, 8, 0, 0));
  /* masked_softmax: image row 1 spreads over keys 0..5 evenly. */
  for (q = 0; q < 64; ++q) s[q] = 0.0f;
  CHECK(rlx_masked_softmax(&v, &m, NULL, NULL) == RLX_OK);
  for (k = 0; k < 8; ++k) {
    CHECK(fabsf(s[8 + k] - (k < 6 ? 1.0f / 6 : 0.0f)) < 1e-6f);
  }

  m = Mask(RLX_MASK_NONE);
  m.window_keys = 3;
  m.window_keys_after = 3;
  for (q = 0; q < 7; ++q)
    for (k = 0; k < 7; ++k) want[q * 7 + k] = (q > k ? q - k : k - q) <= 2;
  CHECK(KeptSetIs(&m, 7, 7, want));
  CHECK(rlx_kept_keys(&m, 0, 3, 7, 7, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 1, 6, 0, 0));

  /* 0.1.0's struct ends before window_keys_after: what follows it is not
   * read (garbage here), the mask is plain causal. */
  m = Mask(RLX_MASK_CAUSAL);
  m.struct_size = offsetof(rlx_mask_spec, window_keys_after);
  m.window_keys_after = 1;
  m.q_group = image;
  m.k_group = NULL; /* would be an error if read */
  for (q = 0; q < 8; ++q)
    for (k = 0; k < 8; ++k) want[q * 8 + k] = k <= q;
  CHECK(KeptSetIs(&m, 8, 8, want));

  /* Bad input: named, nothing written. */
  for (q = 0; q < 64; ++q) s[q] = 2.5f;
  m = Mask(RLX_MASK_CAUSAL);
  m.q_group = image;
  EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, -7.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  CHECK(strstr(rlx_last_error(), "k_group is null") != NULL);
  m.q_group = NULL;
  m.k_group = image;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "q_group is null") != NULL);
  m = Mask(RLX_MASK_NONE);
  m.window_keys_after = (size_t)INT64_MAX + 1;
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 8, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  CHECK(strstr(rlx_last_error(), "window_keys_after 9223372036854775808") !=
        NULL);
  for (q = 0; q < 64; ++q) CHECK(s[q] == 2.5f);
}
/* ---- end of groups and two-sided windows. */

int main(void) {
  TestMaskRules();
  TestClassifyBlocks();
  TestGroupsAndTwoSidedWindows();
  return ReportChecks("c_api_mask_rules_test");
}
