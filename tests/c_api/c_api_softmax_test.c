/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's softmax extensions, compiled as C99: sinks, ALiBi (and
 * rlx_alibi_slopes), row_lse and kept-only writes; rows split by key, merged
 * by rlx_merge_softmax_parts or finished in place (rlx_masked_softmax_part,
 * rlx_finish_softmax_part, rlx_split_kept_keys), on success and on every
 * error
 * it documents. Each rejected call must return its status, write nothing
 * (outputs hold sentinels before the call and are compared after it) and
 * leave a message in rlx_last_error() that starts with the C function's
 * name (tests/c_api/c_api_check.h). */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

static void TestSoftmaxExtensions(void) {
  float s[8];
  float lse[2] = {5.0f, 5.0f};
  size_t k;
  rlx_score_view v = F32View(s, 1, 1, 1, 4);
  rlx_mask_spec m = Mask(RLX_MASK_NONE);
  rlx_softmax_options o;

  /* A learned sink of logit 0 beside four scores of 0: each key gets 1/5,
   * the sink the fifth share. */
  {
    static const float sink[1] = {0.0f};
    rlx_softmax_options_init(&o);
    o.sink_logits = sink;
    for (k = 0; k < 4; ++k) s[k] = 0.0f;
    CHECK(rlx_masked_softmax(&v, &m, &o, NULL) == RLX_OK);
    for (k = 0; k < 4; ++k) CHECK(fabsf(s[k] - 0.2f) < 1e-6f);
  }

  /* ALiBi slope 1 on a causal decode row: the query at position 2 sees
   * key k with bias -(2 - k); the fourth key is masked. */
  {
    static const float slope[1] = {1.0f};
    const double e1 = exp(-1.0), e2 = exp(-2.0), sum = 1.0 + e1 + e2;
    rlx_score_view v3 = F32View(s, 1, 1, 1, 4);
    rlx_mask_spec dec = DecodeMask(2, 3, 0); /* p_q = 2, token at slot 3 */
    rlx_softmax_options_init(&o);
    o.alibi_slopes = slope;
    for (k = 0; k < 4; ++k) s[k] = 0.0f;
    CHECK(rlx_masked_softmax(&v3, &dec, &o, NULL) == RLX_OK);
    CHECK(fabs(s[0] - e2 / sum) < 1e-6 && fabs(s[1] - e1 / sum) < 1e-6);
    CHECK(s[2] == 0.0f && fabs(s[3] - 1.0 / sum) < 1e-6);
  }

  /* row_lse: log(4) for four scores of 0; -inf for a fully masked row.
   * zero_masked false: masked keys keep their bits. */
  {
    rlx_score_view v2 = F32View(s, 1, 1, 2, 4);
    static const uint8_t keep[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    rlx_mask_spec dense = DenseMask(RLX_MASK_KEEP_U8, keep, 1, 1, 2, 4);
    rlx_softmax_options_init(&o);
    o.row_lse = lse;
    for (k = 0; k < 8; ++k) s[k] = 0.0f;
    CHECK(rlx_masked_softmax(&v2, &dense, &o, NULL) == RLX_OK);
    CHECK(fabsf(lse[0] - logf(4.0f)) < 1e-6f);
    CHECK(isinf(lse[1]) && lse[1] < 0);
    m = Mask(RLX_MASK_CAUSAL); /* rows at 2 and 3 */
    rlx_softmax_options_init(&o);
    o.zero_masked = false;
    for (k = 0; k < 8; ++k) s[k] = 7.0f;
    CHECK(rlx_masked_softmax(&v2, &m, &o, NULL) == RLX_OK);
    CHECK(s[3] == 7.0f && fabsf(s[0] - 1.0f / 3) < 1e-6f);
    CHECK(fabsf(s[7] - 0.25f) < 1e-6f);
  }

  /* Kept-only writes write every key inside rlx_kept_keys as the default
   * mode does: a bias's -inf keys lie inside [0, 5) and come out 0, not
   * their raw scores. */
  {
    static const float bias[5] = {0.5f, -INFINITY, 0.25f, -INFINITY, 1.0f};
    float d[5] = {1, 2, 3, 4, 5}, z[5] = {1, 2, 3, 4, 5};
    rlx_score_view v5 = F32View(d, 1, 1, 1, 5), z5 = F32View(z, 1, 1, 1, 5);
    rlx_mask_spec bm = DenseMask(RLX_MASK_BIAS, bias, 1, 1, 1, 5);
    rlx_kept_intervals kept;
    CHECK(rlx_kept_keys(&bm, 0, 0, 1, 5, &kept) == RLX_OK);
    CHECK(KeptIs(&kept, 1, 0, 5, 0, 0));
    rlx_softmax_options_init(&o);
    CHECK(rlx_masked_softmax(&z5, &bm, &o, NULL) == RLX_OK);
    o.zero_masked = false;
    CHECK(rlx_masked_softmax(&v5, &bm, &o, NULL) == RLX_OK);
    for (k = 0; k < 5; ++k) CHECK(memcmp(&d[k], &z[k], sizeof(float)) == 0);
    CHECK(d[1] == 0.0f && !signbit(d[1]) && d[3] == 0.0f && !signbit(d[3]));
    CHECK(fabsf(d[0] - 0.0103f) < 1e-4f && fabsf(d[4] - 0.930f) < 1e-3f);
  }
}

/* A NaN slope or sink logit, or a +inf sink, is rejected before anything
 * is written, naming the option and the head. */
static void TestBadSoftmaxOptions(void) {
  float s[8];
  float before[8];
  size_t k;
  rlx_score_view v = F32View(s, 1, 2, 1, 4); /* two heads */
  rlx_mask_spec m = Mask(RLX_MASK_NONE);
  rlx_softmax_options o;
  const float nan = nanf("");
  const float good_bad[2] = {0.5f, nan};
  const float inf_sink[2] = {0.0f, INFINITY};
  for (k = 0; k < 8; ++k) s[k] = (float)k;
  memcpy(before, s, sizeof(s));
  rlx_softmax_options_init(&o);
  o.alibi_slopes = good_bad;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, &o, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "alibi_slopes[1] (head 1)") != NULL);
  rlx_softmax_options_init(&o);
  o.sink_logits = good_bad;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, &o, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "sink_logits[1] (head 1)") != NULL);
  o.sink_logits = inf_sink;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, &o, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "sink_logits[1]") != NULL);
  CHECK(BitsEqual(s, before, sizeof(s)));
}

static void TestAlibiSlopes(void) {
  float out[12];
  float before[12];
  size_t h;
  /* 8 heads, max_bias 8: m0 = 2^-1, slope 2^-(h+1). */
  CHECK(rlx_alibi_slopes(8, 8.0f, out, 8) == RLX_OK);
  for (h = 0; h < 8; ++h) CHECK(out[h] == ldexpf(1.0f, -(int)(h + 1)));
  /* 12 heads: n = 8, then m1 = 2^(-8/16) to the odd powers 1, 3, 5, 7. */
  CHECK(rlx_alibi_slopes(12, 8.0f, out, 12) == RLX_OK);
  for (h = 0; h < 4; ++h) {
    CHECK(fabsf(out[8 + h] - powf(2.0f, -0.5f * (float)(2 * h + 1))) <=
          1e-6f * out[8 + h]);
  }
  for (h = 0; h < 12; ++h) out[h] = -1.0f;
  memcpy(before, out, sizeof(out));
  EXPECT_ERROR(rlx_alibi_slopes(0, 8.0f, out, 0), RLX_INVALID_ARGUMENT,
               "rlx_alibi_slopes");
  EXPECT_ERROR(rlx_alibi_slopes(4, NAN, out, 4), RLX_INVALID_ARGUMENT,
               "rlx_alibi_slopes");
  EXPECT_ERROR(rlx_alibi_slopes(4, -1.0f, out, 4), RLX_INVALID_ARGUMENT,
               "rlx_alibi_slopes");
  EXPECT_ERROR(rlx_alibi_slopes(4, 8.0f, out, 3), RLX_INVALID_ARGUMENT,
               "rlx_alibi_slopes");
  CHECK(strstr(rlx_last_error(), "out_len 3 is not heads 4") != NULL);
  EXPECT_ERROR(rlx_alibi_slopes(4, 8.0f, NULL, 4), RLX_INVALID_ARGUMENT,
               "rlx_alibi_slopes");
  CHECK(BitsEqual(out, before, sizeof(out)));
}

/* One 2 x 10 score tensor under a causal mask, its rows split at key 4:
 * each part a softmax over its keys with its row_lse, merged into the
 * softmax of the whole rows. */
static void TestMergeSoftmaxParts(void) {
  float whole[20], split[20], lse[2], lse_a[2], lse_b[2], merged[2];
  float before[20];
  size_t i;
  const int64_t offset_a[1] = {8}; /* the rows at positions 8 and 9 */
  const int64_t offset_b[1] = {4}; /* ... relative to key 4 */
  static const float sink[1] = {1.5f};
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  rlx_softmax_options o;
  rlx_score_view v = F32View(whole, 1, 1, 2, 10);
  rlx_softmax_part parts[2];

  for (i = 0; i < 20; ++i) whole[i] = split[i] = (float)((i * 7) % 11) - 5.0f;
  rlx_softmax_options_init(&o);
  o.row_lse = lse;
  o.sink_logits = sink;
  CHECK(rlx_masked_softmax(&v, &m, &o, NULL) == RLX_OK);

  /* Part A: keys [0, 4), part B: keys [4, 10), both [1, 1, 2, k] views of
   * row stride 10. The merge adds the sink that neither part carried. */
  parts[0].probs = F32View(split, 1, 1, 2, 4);
  parts[0].probs.strides.row = 10;
  parts[0].row_lse = lse_a;
  parts[1].probs = F32View(split + 4, 1, 1, 2, 6);
  parts[1].probs.strides.row = 10;
  parts[1].row_lse = lse_b;
  rlx_softmax_options_init(&o);
  m.query_offsets = offset_a;
  o.row_lse = lse_a;
  CHECK(rlx_masked_softmax(&parts[0].probs, &m, &o, NULL) == RLX_OK);
  m.query_offsets = offset_b;
  o.row_lse = lse_b;
  CHECK(rlx_masked_softmax(&parts[1].probs, &m, &o, NULL) == RLX_OK);
  CHECK(rlx_merge_softmax_parts(parts, 2, merged, sink) == RLX_OK);
  for (i = 0; i < 20; ++i) CHECK(fabsf(split[i] - whole[i]) <= 1e-6f);
  CHECK(fabsf(merged[0] - lse[0]) <= 1e-5f &&
        fabsf(merged[1] - lse[1]) <= 1e-5f);

  /* Bad input: nothing written, a message naming the function. */
  memcpy(before, split, sizeof(split));
  merged[0] = merged[1] = 42.0f;
  EXPECT_ERROR(rlx_merge_softmax_parts(parts, 0, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  EXPECT_ERROR(rlx_merge_softmax_parts(NULL, 2, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  /* Parts of different q_len. */
  parts[1].probs.shape.q_len = 1;
  EXPECT_ERROR(rlx_merge_softmax_parts(parts, 2, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  CHECK(strstr(rlx_last_error(), "part 1 shape [1, 1, 1, 6] differs") != NULL);
  parts[1].probs.shape.q_len = 2;
  parts[1].probs.type = (rlx_score_type)9;
  EXPECT_ERROR(rlx_merge_softmax_parts(parts, 2, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  CHECK(strstr(rlx_last_error(), "parts[1].probs->type 9") != NULL);
  parts[1].probs.type = RLX_SCORE_BF16;
  EXPECT_ERROR(rlx_merge_softmax_parts(parts, 2, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  parts[1].probs.type = RLX_SCORE_F32;
  parts[1].row_lse = NULL;
  EXPECT_ERROR(rlx_merge_softmax_parts(parts, 2, merged, NULL),
               RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
  parts[1].row_lse = lse_b;
  {
    static const float nan_sink[1] = {NAN};
    EXPECT_ERROR(rlx_merge_softmax_parts(parts, 2, merged, nan_sink),
                 RLX_INVALID_ARGUMENT, "rlx_merge_softmax_parts");
    CHECK(strstr(rlx_last_error(), "sink_logits[0]") != NULL);
  }
  CHECK(BitsEqual(split, before, sizeof(split)));
  CHECK(merged[0] == 42.0f && merged[1] == 42.0f);

  /* More parts than the call keeps on its stack: 20 one-key parts of one
   * row, each a softmax over its key (1, lse = its score). */
  {
    float row[20], probs[20], lses[20], total = 0.0f;
    rlx_softmax_part many[20];
    double sum = 0.0;
    for (i = 0; i < 20; ++i) {
      row[i] = (float)i / 4.0f;
      sum += exp((double)row[i]);
      probs[i] = 1.0f;
      lses[i] = row[i];
      many[i].probs = F32View(&probs[i], 1, 1, 1, 1);
      many[i].row_lse = &lses[i];
    }
    CHECK(rlx_merge_softmax_parts(many, 20, &total, NULL) == RLX_OK);
    CHECK(fabs(total - log(sum)) <= 1e-5);
    for (i = 0; i < 20; ++i) {
      CHECK(fabs(probs[i] - exp((double)row[i]) / sum) <= 1e-6);
    }
  }
}

/* A 1 x 2 x 1 x 600 decode row set (past 400, the token at slot 599: 401
 * kept keys per row) split into 2 parts by rlx_split_kept_keys, each part's
 * two steps run on its own key range of one tensor: together they are
 * rlx_masked_softmax of the whole rows, with and without sinks. */
static void TestSplitSoftmaxParts(void) {
  enum { kKeys = 600, kRows = 2, kParts = 2 };
  static float whole[kRows * kKeys], split[kRows * kKeys];
  static float before[kRows * kKeys];
  static const float sinks[kRows] = {0.5f, -1.0f};
  float lse[kRows], split_lse[kRows];
  rlx_softmax_part_stats stats[kParts][kRows];
  rlx_softmax_part_stats stats_before[kParts][kRows];
  const rlx_softmax_part_stats* parts[kParts];
  rlx_key_range keys[kParts];
  rlx_key_range range;
  rlx_kept_intervals kept;
  rlx_mask_spec m = DecodeMask(400, 599, 0);
  rlx_score_view v_whole = F32View(whole, 1, kRows, 1, kKeys);
  rlx_score_view v = F32View(split, 1, kRows, 1, kKeys);
  rlx_softmax_options o;
  rlx_row_range rows;
  size_t i, p, r;
  int with_sinks;

  CHECK(rlx_kept_keys(&m, 0, 0, 1, kKeys, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 2, 0, 400, 599, 600));
  for (p = 0; p < kParts; ++p) {
    CHECK(rlx_split_kept_keys(&kept, kKeys, p, kParts, 0.0, &keys[p]) ==
          RLX_OK);
    parts[p] = stats[p];
  }
  /* In order, covering [0, 600), 200 or 201 of the 401 kept keys each (no
   * cost for masked keys). */
  CHECK(keys[0].begin == 0 && keys[0].end == keys[1].begin &&
        keys[1].end == kKeys);
  CHECK(keys[0].end == 200 || keys[0].end == 201);

  for (with_sinks = 0; with_sinks <= 1; ++with_sinks) {
    for (i = 0; i < kRows * kKeys; ++i) {
      whole[i] = split[i] = (float)((i * 37) % 101) / 10.0f - 5.0f;
    }
    rlx_softmax_options_init(&o);
    o.scale = 0.75f;
    o.row_lse = lse;
    if (with_sinks) o.sink_logits = sinks;
    CHECK(rlx_masked_softmax(&v_whole, &m, &o, NULL) == RLX_OK);

    /* Step 1 ignores row_lse (and the sinks). */
    split_lse[0] = split_lse[1] = 42.0f;
    o.row_lse = split_lse;
    if (with_sinks) {
      /* All rows in one call per part. */
      for (p = 0; p < kParts; ++p) {
        CHECK(rlx_masked_softmax_part(&v, &m, keys[p], stats[p], &o, NULL) ==
              RLX_OK);
      }
      CHECK(split_lse[0] == 42.0f && split_lse[1] == 42.0f);
      /* Step 2: row_lse from part 0 only. */
      for (p = kParts; p-- > 0;) {
        o.row_lse = p == 0 ? split_lse : NULL;
        CHECK(rlx_finish_softmax_part(&v, &m, keys[p], parts, kParts, p, &o,
                                      NULL) == RLX_OK);
      }
    } else {
      /* One row per call, as threads splitting rows too would. */
      for (r = 0; r < kRows; ++r) {
        rows.begin = r;
        rows.end = r + 1;
        for (p = 0; p < kParts; ++p) {
          CHECK(rlx_masked_softmax_part(&v, &m, keys[p], stats[p], &o, &rows) ==
                RLX_OK);
        }
        for (p = 0; p < kParts; ++p) {
          o.row_lse = p == 1 ? split_lse : NULL;
          CHECK(rlx_finish_softmax_part(&v, &m, keys[p], parts, kParts, p, &o,
                                        &rows) == RLX_OK);
        }
        o.row_lse = split_lse;
      }
    }
    for (r = 0; r < kRows; ++r) {
      /* Each part keeps a key of every row; its maximum's value is 1. */
      for (p = 0; p < kParts; ++p) {
        CHECK(isfinite(stats[p][r].log_scale) && stats[p][r].sum >= 0.999);
      }
      CHECK(fabsf(split_lse[r] - lse[r]) <= 1e-5f);
      for (i = r * kKeys; i < (r + 1) * kKeys; ++i) {
        const size_t k = i - r * kKeys;
        if (k >= 400 && k < 599) {
          CHECK(split[i] == 0.0f);
        } else {
          CHECK(fabsf(split[i] - whole[i]) <= 1e-6f);
        }
      }
    }
  }

  /* A range holding no key of the row: no kept key (stats -inf, 0). */
  range.begin = range.end = 7;
  CHECK(rlx_masked_softmax_part(&v, &m, range, stats[0], NULL, NULL) == RLX_OK);
  CHECK(isinf(stats[0][0].log_scale) && stats[0][0].log_scale < 0 &&
        stats[0][0].sum == 0.0);

  /* Bad input: nothing written, a message naming the function. */
  memcpy(before, split, sizeof(split));
  memset(stats, 0x5A, sizeof(stats));
  memcpy(stats_before, stats, sizeof(stats));
  range.begin = 300;
  range.end = kKeys + 1; /* beyond k_len */
  EXPECT_ERROR(rlx_masked_softmax_part(&v, &m, range, stats[0], NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  CHECK(strstr(rlx_last_error(), ": masked_softmax_part") != NULL);
  EXPECT_ERROR(
      rlx_finish_softmax_part(&v, &m, range, parts, kParts, 1, NULL, NULL),
      RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  CHECK(strstr(rlx_last_error(), ": finish_softmax_part") != NULL);
  range.begin = 301;
  range.end = 300; /* begin > end */
  EXPECT_ERROR(rlx_masked_softmax_part(&v, &m, range, stats[0], NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  range = keys[0];
  EXPECT_ERROR(rlx_masked_softmax_part(&v, &m, range, NULL, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  EXPECT_ERROR(rlx_masked_softmax_part(NULL, &m, range, stats[0], NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  EXPECT_ERROR(rlx_masked_softmax_part(&v, NULL, range, stats[0], NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  rows.begin = 1;
  rows.end = 3; /* beyond the 2 rows */
  EXPECT_ERROR(rlx_masked_softmax_part(&v, &m, range, stats[0], NULL, &rows),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
  EXPECT_ERROR(
      rlx_finish_softmax_part(&v, &m, range, parts, kParts, 0, NULL, &rows),
      RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  {
    rlx_mask_spec bad = DecodeMask(400, 598, 0); /* k_len must be 599 */
    EXPECT_ERROR(rlx_masked_softmax_part(&v, &bad, range, stats[0], NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_part");
    bad = m;
    bad.struct_size = 0;
    EXPECT_ERROR(
        rlx_finish_softmax_part(&v, &bad, range, parts, kParts, 0, NULL, NULL),
        RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
    CHECK(strstr(rlx_last_error(), "mask->struct_size 0") != NULL);
  }
  EXPECT_ERROR(
      rlx_finish_softmax_part(&v, &m, range, NULL, kParts, 0, NULL, NULL),
      RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  EXPECT_ERROR(rlx_finish_softmax_part(&v, &m, range, parts, 0, 0, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  EXPECT_ERROR(
      rlx_finish_softmax_part(&v, &m, range, parts, kParts, kParts, NULL, NULL),
      RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  parts[1] = NULL;
  EXPECT_ERROR(
      rlx_finish_softmax_part(&v, &m, range, parts, kParts, 0, NULL, NULL),
      RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
  parts[1] = stats[1];
  {
    static const float nan_sinks[kRows] = {NAN, 0.0f};
    float lse_out[kRows] = {42.0f, 42.0f};
    rlx_softmax_options_init(&o);
    o.sink_logits = nan_sinks;
    o.row_lse = lse_out;
    EXPECT_ERROR(
        rlx_finish_softmax_part(&v, &m, range, parts, kParts, 0, &o, NULL),
        RLX_INVALID_ARGUMENT, "rlx_finish_softmax_part");
    CHECK(lse_out[0] == 42.0f && lse_out[1] == 42.0f);
  }
  CHECK(BitsEqual(split, before, sizeof(split)));
  CHECK(BitsEqual(stats, stats_before, sizeof(stats)));

  /* rlx_split_kept_keys: bad counts, parts and intervals. */
  range.begin = range.end = 12345;
  EXPECT_ERROR(
      rlx_split_kept_keys(NULL, kKeys, 0, 2, RLX_MASKED_KEY_FILL_COST, &range),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  EXPECT_ERROR(
      rlx_split_kept_keys(&kept, kKeys, 0, 2, RLX_MASKED_KEY_FILL_COST, NULL),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  EXPECT_ERROR(
      rlx_split_kept_keys(&kept, kKeys, 0, 0, RLX_MASKED_KEY_FILL_COST, &range),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  CHECK(strstr(rlx_last_error(), ": split_kept_keys") != NULL);
  EXPECT_ERROR(
      rlx_split_kept_keys(&kept, kKeys, 2, 2, RLX_MASKED_KEY_FILL_COST, &range),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  EXPECT_ERROR(
      rlx_split_kept_keys(&kept, 599, 0, 2, RLX_MASKED_KEY_FILL_COST, &range),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  EXPECT_ERROR(rlx_split_kept_keys(&kept, kKeys, 0, 2, -0.5, &range),
               RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  CHECK(strstr(rlx_last_error(), "masked_key_cost -0.5") != NULL);
  kept.count = RLX_MAX_KEPT_INTERVALS + 1;
  EXPECT_ERROR(
      rlx_split_kept_keys(&kept, kKeys, 0, 2, RLX_MASKED_KEY_FILL_COST, &range),
      RLX_INVALID_ARGUMENT, "rlx_split_kept_keys");
  CHECK(strstr(rlx_last_error(), "kept->count 4") != NULL);
  CHECK(range.begin == 12345 && range.end == 12345);
  /* No kept key: a valid range still. */
  kept.count = 0;
  CHECK(rlx_split_kept_keys(&kept, kKeys, 1, 2, RLX_MASKED_KEY_FILL_COST,
                            &range) == RLX_OK);
  CHECK(range.begin <= range.end && range.end <= kKeys);
}

int main(void) {
  TestSoftmaxExtensions();
  TestBadSoftmaxOptions();
  TestAlibiSlopes();
  TestMergeSoftmaxParts();
  TestSplitSoftmaxParts();
  return ReportChecks("c_api_softmax_test");
}
