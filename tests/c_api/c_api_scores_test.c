/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's score kernels, compiled as C99: rlx_kept_keys,
 * rlx_apply_mask, rlx_masked_softmax and rlx_masked_softmax_into over f32,
 * bf16 and f16 rows, on success and on every error
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
#include "src/util/half_codec.h"
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

static void TestKeptKeys(void) {
  rlx_kept_intervals kept;
  rlx_kept_intervals before;
  rlx_mask_spec m;
  const int64_t offsets[2] = {-3, 2};

  m = DecodeMask(3, 7, 0);
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 8, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 2, 0, 3, 7, 8));
  m = DecodeMask(5, 6, 2);
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 7, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 2, 3, 5, 6, 7));
  /* Full bucket: the past and the new token are one interval or two
   * adjacent ones; either way the keys are [0, 5). */
  m = DecodeMask(4, 4, 0);
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 5, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 0, 5, 0, 0) || KeptIs(&kept, 2, 0, 4, 4, 5));
  m = DecodeMask(0, 3, 0);
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 4, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 3, 4, 0, 0));

  /* Causal over 4 queries and 6 keys: query q sits at 2 + q. */
  m = Mask(RLX_MASK_CAUSAL);
  CHECK(rlx_kept_keys(&m, 0, 1, 4, 6, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 0, 4, 0, 0));
  m = Mask(RLX_MASK_SLIDING_WINDOW);
  m.window = 1;
  CHECK(rlx_kept_keys(&m, 0, 1, 4, 6, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 2, 4, 0, 0));
  /* Explicit query offsets: batch 0 starts before key 0. */
  m = Mask(RLX_MASK_CAUSAL);
  m.query_offsets = offsets;
  CHECK(rlx_kept_keys(&m, 0, 0, 4, 6, &kept) == RLX_OK);
  CHECK(kept.count == 0);
  CHECK(rlx_kept_keys(&m, 1, 0, 4, 6, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 0, 3, 0, 0));
  /* None and dense kinds: the whole row. */
  m = Mask(RLX_MASK_NONE);
  CHECK(rlx_kept_keys(&m, 0, 0, 1, 9, &kept) == RLX_OK);
  CHECK(KeptIs(&kept, 1, 0, 9, 0, 0));
  {
    static const float keep[9] = {1, 0, 1, 0, 1, 0, 1, 0, 1};
    static const uint8_t keep_per_batch[2 * 9] = {0};
    m = DenseMask(RLX_MASK_KEEP_F32, keep, 1, 1, 1, 9);
    CHECK(rlx_kept_keys(&m, 0, 0, 1, 9, &kept) == RLX_OK);
    CHECK(KeptIs(&kept, 1, 0, 9, 0, 0));
    /* RLX's [batch, k_len] keep mask, asked about its last batch. (Its
     * first batch is rejected by rlx::kept_keys today: reported.) */
    m = DenseMask(RLX_MASK_KEEP_U8, keep_per_batch, 2, 1, 1, 9);
    CHECK(rlx_kept_keys(&m, 1, 0, 1, 9, &kept) == RLX_OK);
    CHECK(KeptIs(&kept, 1, 0, 9, 0, 0));
  }

  /* Errors leave *out alone. */
  memset(&kept, 0xAB, sizeof(kept));
  memcpy(&before, &kept, sizeof(kept));
  m = DecodeMask(3, 7, 0);
  EXPECT_ERROR(rlx_kept_keys(NULL, 0, 0, 1, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  CHECK(strstr(rlx_last_error(), "mask") != NULL);
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 8, NULL), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 1, 1, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  /* Decode: k_len must be upper + 1, past <= upper. */
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 9, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  m = DecodeMask(8, 7, 0);
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  m = Mask(RLX_MASK_CAUSAL);
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 0, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  m = Mask((rlx_mask_kind)99);
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  CHECK(strstr(rlx_last_error(), "99") != NULL);
  CHECK(BitsEqual(&kept, &before, sizeof(kept)));
}

static void TestApplyMask(void) {
  /* 2 heads x 1 query x 8 keys, decode past 3 in bucket 7. */
  float s[16];
  float before[16];
  size_t i;
  rlx_score_view v = F32View(s, 1, 2, 1, 8);
  rlx_mask_spec m = DecodeMask(3, 7, 0);
  rlx_row_range rows;

  for (i = 0; i < 16; ++i) s[i] = (float)i + 0.5f;
  CHECK(rlx_apply_mask(&v, &m, NULL, -INFINITY) == RLX_OK);
  for (i = 0; i < 16; ++i) {
    const size_t k = i % 8;
    if (k < 3 || k == 7) {
      CHECK(s[i] == (float)i + 0.5f);
    } else {
      CHECK(isinf(s[i]) && s[i] < 0);
    }
  }
  /* A row range: only row 1, with the RLX executor's fill. */
  for (i = 0; i < 16; ++i) s[i] = 1.0f;
  rows.begin = 1;
  rows.end = 2;
  CHECK(rlx_apply_mask(&v, &m, &rows, -1e9f) == RLX_OK);
  for (i = 0; i < 8; ++i) CHECK(s[i] == 1.0f);
  for (i = 8; i < 16; ++i) {
    const size_t k = i % 8;
    CHECK(s[i] == ((k < 3 || k == 7) ? 1.0f : -1e9f));
  }

  /* Dense keep masks broadcast over heads, u8 and f32; a bias is added. */
  {
    static const float keep_f32[8] = {1, 0, 0.5f, 0.49f, 1, 1, 0, 1};
    static const uint8_t keep_u8[8] = {1, 0, 2, 0, 1, 1, 0, 255};
    static const float bias[8] = {0, -1, 0, -INFINITY, 0, 0, 2, 0};
    rlx_mask_spec keep = DenseMask(RLX_MASK_KEEP_F32, keep_f32, 1, 1, 1, 8);
    for (i = 0; i < 16; ++i) s[i] = 3.0f;
    CHECK(rlx_apply_mask(&v, &keep, NULL, -2.0f) == RLX_OK);
    for (i = 0; i < 16; ++i) {
      CHECK(s[i] == (keep_f32[i % 8] >= 0.5f ? 3.0f : -2.0f));
    }
    keep = DenseMask(RLX_MASK_KEEP_U8, keep_u8, 1, 1, 1, 8);
    for (i = 0; i < 16; ++i) s[i] = 3.0f;
    CHECK(rlx_apply_mask(&v, &keep, NULL, -2.0f) == RLX_OK);
    for (i = 0; i < 16; ++i) CHECK(s[i] == (keep_u8[i % 8] ? 3.0f : -2.0f));
    keep = DenseMask(RLX_MASK_BIAS, bias, 1, 1, 1, 8);
    for (i = 0; i < 16; ++i) s[i] = 3.0f;
    CHECK(rlx_apply_mask(&v, &keep, NULL, -2.0f) == RLX_OK);
    for (i = 0; i < 16; ++i) CHECK(s[i] == 3.0f + bias[i % 8]);
  }

  /* Errors write nothing. */
  for (i = 0; i < 16; ++i) s[i] = (float)i;
  memcpy(before, s, sizeof(s));
  EXPECT_ERROR(rlx_apply_mask(NULL, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  CHECK(strstr(rlx_last_error(), "scores") != NULL);
  EXPECT_ERROR(rlx_apply_mask(&v, NULL, NULL, 0.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  {
    rlx_score_view bad = v;
    bad.type = (rlx_score_type)7;
    EXPECT_ERROR(rlx_apply_mask(&bad, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), "7") != NULL);
    bad = v;
    bad.data = NULL;
    EXPECT_ERROR(rlx_apply_mask(&bad, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = F32View(s, 1, 1, 2, 8); /* 2 rows, row stride below k_len */
    bad.strides.row = 7;
    EXPECT_ERROR(rlx_apply_mask(&bad, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = F32View(s, 1, 2, 1, 0); /* k_len 0 */
    EXPECT_ERROR(rlx_apply_mask(&bad, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
  }
  {
    rlx_mask_spec bad = Mask((rlx_mask_kind)-1);
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = DecodeMask(3, 8, 0); /* k_len 8 != upper + 1 */
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = DecodeMask(8, 7, 0); /* past > upper */
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = DenseMask(RLX_MASK_KEEP_F32, NULL, 1, 1, 1, 8); /* no data */
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = DenseMask(RLX_MASK_KEEP_F32, s, 1, 3, 1, 8); /* 3 heads vs 2 */
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    bad = DenseMask(RLX_MASK_KEEP_F32, s, 1, 1, 1, 4); /* k_len 4 vs 8 */
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
  }
  rows.begin = 1;
  rows.end = 3; /* past the 2 rows */
  EXPECT_ERROR(rlx_apply_mask(&v, &m, &rows, 0.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  rows.begin = 2;
  rows.end = 1; /* reversed */
  EXPECT_ERROR(rlx_apply_mask(&v, &m, &rows, 0.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  CHECK(BitsEqual(s, before, sizeof(s)));
}

/* Row r of n keys is a softmax: masked entries exactly 0, kept ones
 * positive, summing to 1 within 1e-6. keep(k) for this row is given by
 * `kept_mask` (1 = kept). */
static int IsSoftmaxRow(const float* row, const int* kept_mask, size_t n) {
  double sum = 0;
  size_t k;
  int any = 0;
  for (k = 0; k < n; ++k) {
    if (!kept_mask[k]) {
      if (row[k] != 0.0f || signbit(row[k])) return 0;
    } else {
      if (!(row[k] >= 0.0f)) return 0;
      sum += row[k];
      any = 1;
    }
  }
  return any ? fabs(sum - 1.0) <= 1e-6 : sum == 0.0;
}

/* bf16 and f16 bits: the library's half-precision codec (round to nearest
 * even), shared with the C++ tests and the oracle. */
static uint16_t ToBf16(float f) { return rlx_bf16_from_f32(f); }
static float FromBf16(uint16_t h) { return rlx_f32_from_bf16(h); }
static uint16_t ToF16(float f) { return rlx_f16_from_f32(f); }
static float FromF16(uint16_t h) { return rlx_f32_from_f16(h); }

static void TestMaskedSoftmax(void) {
  /* 2 heads x 1 query x 8 keys, decode past 3 in bucket 7. */
  float s[16];
  float out[16];
  float before[16];
  float out_before[16];
  int keep[8];
  size_t i;
  rlx_score_view v = F32View(s, 1, 2, 1, 8);
  rlx_score_view o = F32View(out, 1, 2, 1, 8);
  const rlx_mask_spec m = DecodeMask(3, 7, 0);
  rlx_softmax_options options;
  rlx_row_range rows;

  for (i = 0; i < 8; ++i) keep[i] = (i < 3 || i == 7);
  /* Padding scores that would win if attended. */
  for (i = 0; i < 16; ++i) s[i] = (i % 8 >= 3 && i % 8 < 7) ? 1e30f : 0.1f * i;
  CHECK(rlx_masked_softmax(&v, &m, NULL, NULL) == RLX_OK);
  CHECK(IsSoftmaxRow(s, keep, 8));
  CHECK(IsSoftmaxRow(s + 8, keep, 8));
  /* Equal kept scores: uniform. */
  for (i = 0; i < 16; ++i) s[i] = 2.0f;
  CHECK(rlx_masked_softmax(&v, &m, NULL, NULL) == RLX_OK);
  CHECK(fabsf(s[0] - 0.25f) < 1e-6f && fabsf(s[7] - 0.25f) < 1e-6f);

  /* Scale and softcap: with scale 0 every kept score is 0, so uniform
   * again; a softcap bounds huge scores, so the row is not one-hot. */
  for (i = 0; i < 16; ++i) s[i] = (float)i * 100.0f;
  rlx_softmax_options_init(&options);
  options.scale = 0.0f;
  CHECK(rlx_masked_softmax(&v, &m, &options, NULL) == RLX_OK);
  CHECK(fabsf(s[8] - 0.25f) < 1e-6f);
  s[0] = 1e6f;
  s[1] = 0.0f;
  s[2] = 0.0f;
  s[7] = 0.0f;
  options.scale = 1.0f;
  options.softcap = 1.0f;
  CHECK(rlx_masked_softmax(&v, &m, &options, NULL) == RLX_OK);
  CHECK(IsSoftmaxRow(s, keep, 8));
  CHECK(s[0] < 0.5f && s[1] > 0.1f); /* e / (e + 3) and 1 / (e + 3) */

  /* A fully masked row: all zeros, never NaN. */
  {
    static const float none_kept[8] = {0};
    const int no_keys[8] = {0};
    rlx_mask_spec dense = DenseMask(RLX_MASK_KEEP_F32, none_kept, 1, 1, 1, 8);
    for (i = 0; i < 16; ++i) s[i] = 1.0f;
    CHECK(rlx_masked_softmax(&v, &dense, NULL, NULL) == RLX_OK);
    CHECK(IsSoftmaxRow(s, no_keys, 8) && IsSoftmaxRow(s + 8, no_keys, 8));
  }

  /* From `in` into `out`, one row range: `in` and the other row of `out`
   * are not written. */
  for (i = 0; i < 16; ++i) {
    s[i] = (float)(i % 5);
    out[i] = -7.0f;
  }
  memcpy(before, s, sizeof(s));
  rows.begin = 1;
  rows.end = 2;
  CHECK(rlx_masked_softmax_into(&v, &o, &m, NULL, &rows) == RLX_OK);
  CHECK(BitsEqual(s, before, sizeof(s)));
  for (i = 0; i < 8; ++i) CHECK(out[i] == -7.0f);
  CHECK(IsSoftmaxRow(out + 8, keep, 8));
  /* The split does not change the result. */
  {
    float whole[16];
    rlx_score_view w = F32View(whole, 1, 2, 1, 8);
    rows.begin = 0;
    rows.end = 1;
    CHECK(rlx_masked_softmax_into(&v, &o, &m, NULL, &rows) == RLX_OK);
    CHECK(rlx_masked_softmax_into(&v, &w, &m, NULL, NULL) == RLX_OK);
    CHECK(BitsEqual(whole, out, sizeof(out)));
  }

  /* bf16 and f16 rows are read and written in their own type. */
  {
    uint16_t h[8];
    rlx_score_view hv = F32View(NULL, 1, 1, 1, 8);
    const rlx_mask_spec m1 = DecodeMask(3, 7, 0);
    float probs[8];
    hv.data = h;
    hv.type = RLX_SCORE_BF16;
    for (i = 0; i < 8; ++i) h[i] = ToBf16(i < 3 || i == 7 ? 1.0f : 1e30f);
    CHECK(rlx_masked_softmax(&hv, &m1, NULL, NULL) == RLX_OK);
    for (i = 0; i < 8; ++i) probs[i] = FromBf16(h[i]);
    for (i = 0; i < 8; ++i) {
      CHECK(keep[i] ? fabsf(probs[i] - 0.25f) < 1e-6f : probs[i] == 0.0f);
    }
    hv.type = RLX_SCORE_F16;
    for (i = 0; i < 8; ++i) h[i] = ToF16(i < 3 || i == 7 ? -1.5f : 1000.0f);
    CHECK(FromF16(ToF16(-1.5f)) == -1.5f);
    CHECK(rlx_masked_softmax(&hv, &m1, NULL, NULL) == RLX_OK);
    for (i = 0; i < 8; ++i) probs[i] = FromF16(h[i]);
    for (i = 0; i < 8; ++i) {
      CHECK(keep[i] ? fabsf(probs[i] - 0.25f) < 1e-6f : probs[i] == 0.0f);
    }
    /* apply_mask on f16 rounds the fill: -1e9f is -inf there. */
    for (i = 0; i < 8; ++i) h[i] = ToF16(1.0f);
    CHECK(rlx_apply_mask(&hv, &m1, NULL, -1e9f) == RLX_OK);
    CHECK(FromF16(h[0]) == 1.0f && FromF16(h[7]) == 1.0f);
    CHECK(isinf(FromF16(h[4])) && FromF16(h[4]) < 0);
  }

  /* Errors write nothing, into either view. */
  for (i = 0; i < 16; ++i) {
    s[i] = (float)i;
    out[i] = (float)-i;
  }
  memcpy(before, s, sizeof(s));
  EXPECT_ERROR(rlx_masked_softmax(NULL, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  EXPECT_ERROR(rlx_masked_softmax(&v, NULL, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  {
    rlx_score_view bad = v;
    rlx_mask_spec bad_mask = DecodeMask(2, 6, 0);
    bad.type = (rlx_score_type)3;
    EXPECT_ERROR(rlx_masked_softmax(&bad, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    bad = v;
    bad.data = NULL;
    EXPECT_ERROR(rlx_masked_softmax(&bad, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    bad = F32View(s, 1, 1, 2, 8); /* 2 rows, row stride below k_len */
    bad.strides.row = 4;
    EXPECT_ERROR(rlx_masked_softmax(&bad, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    EXPECT_ERROR(rlx_masked_softmax(&v, &bad_mask, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax");
    bad_mask = Mask((rlx_mask_kind)42);
    EXPECT_ERROR(rlx_masked_softmax(&v, &bad_mask, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax");
    rows.begin = 0;
    rows.end = 3;
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, &rows), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
  }
  CHECK(BitsEqual(s, before, sizeof(s)));
  memcpy(out_before, out, sizeof(out));
  EXPECT_ERROR(rlx_masked_softmax_into(NULL, &o, &m, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
  CHECK(strstr(rlx_last_error(), "in") != NULL);
  EXPECT_ERROR(rlx_masked_softmax_into(&v, NULL, &m, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
  CHECK(strstr(rlx_last_error(), "out") != NULL);
  EXPECT_ERROR(rlx_masked_softmax_into(&v, &o, NULL, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
  {
    rlx_score_view bad = o;
    bad.type = (rlx_score_type)9;
    EXPECT_ERROR(rlx_masked_softmax_into(&v, &bad, &m, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
    bad = F32View(out, 1, 1, 2, 8); /* a different shape */
    EXPECT_ERROR(rlx_masked_softmax_into(&v, &bad, &m, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
    bad = o;
    bad.type = RLX_SCORE_BF16; /* a different type */
    EXPECT_ERROR(rlx_masked_softmax_into(&v, &bad, &m, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
    bad = o;
    bad.data = NULL;
    EXPECT_ERROR(rlx_masked_softmax_into(&v, &bad, &m, NULL, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
  }
  CHECK(BitsEqual(s, before, sizeof(s)));
  CHECK(BitsEqual(out, out_before, sizeof(out)));
}

int main(void) {
  TestKeptKeys();
  TestApplyMask();
  TestMaskedSoftmax();
  return ReportChecks("c_api_scores_test");
}
