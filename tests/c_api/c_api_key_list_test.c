/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's key lists (rlx_mask_spec.key_indices), compiled as C99:
 * rlx_apply_mask keeps exactly the listed keys the rest of the mask keeps,
 * rlx_kept_keys covers them, rlx_masked_softmax in kept-only mode writes
 * the listed keys alone, rlx_classify_blocks sees them; and every error
 * (a bad slot, extents that do not broadcast, a key list with a block
 * list) returns its status, names the C function and writes nothing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

/* 3 query rows of 8 keys (causal: row q at position 5 + q), a list of 4
 * slots per row: repeats and -1 slots included. */
static const int32_t kSlots[12] = {0,  6,  6,  -1, /* key 6 beyond row 0 */
                                   7,  2,  -1, 2,  /* key 7 beyond row 1 */
                                   -1, -1, 7,  3};

static void WithList(rlx_mask_spec* m) {
  m->key_indices = kSlots;
  m->key_indices_shape.batch = 1;
  m->key_indices_shape.heads = 1;
  m->key_indices_shape.q_len = 3;
  m->key_indices_shape.k_len = 4;
}

static void TestApplyAndKeptKeys(void) {
  float s[24];
  size_t i, q;
  const int want[24] = {1, 0, 0, 0, 0, 0, 0, 0,  /* 0 listed, 6 > 5 */
                        0, 0, 1, 0, 0, 0, 0, 0,  /* 2 listed, 7 > 6 */
                        0, 0, 0, 1, 0, 0, 0, 1}; /* 3 and 7 */
  rlx_score_view v = F32View(s, 1, 1, 3, 8);
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  WithList(&m);
  for (i = 0; i < 24; ++i) s[i] = 1.0f;
  CHECK(rlx_apply_mask(&v, &m, NULL, -7.0f) == RLX_OK);
  for (i = 0; i < 24; ++i) CHECK((s[i] == 1.0f) == want[i]);
  for (q = 0; q < 3; ++q) {
    rlx_kept_intervals kept;
    size_t k, j;
    CHECK(rlx_kept_keys(&m, 0, q, 3, 8, &kept) == RLX_OK);
    for (k = 0; k < 8; ++k) {
      int in = 0;
      for (j = 0; j < kept.count; ++j) {
        in |= kept.intervals[j].begin <= k && k < kept.intervals[j].end;
      }
      CHECK(!want[q * 8 + k] || in);
    }
  }
  /* Row 2 keeps 3 and 7: kept_keys is [3, 8). */
  {
    rlx_kept_intervals kept;
    CHECK(rlx_kept_keys(&m, 0, 2, 3, 8, &kept) == RLX_OK);
    CHECK(KeptIs(&kept, 1, 3, 8, 0, 0));
  }
}

static void TestKeptOnlySoftmax(void) {
  float s[24];
  size_t i;
  rlx_score_view v = F32View(s, 1, 1, 3, 8);
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  rlx_softmax_options o;
  WithList(&m);
  rlx_softmax_options_init(&o);
  o.zero_masked = false;
  for (i = 0; i < 24; ++i) s[i] = 5.0f;
  CHECK(rlx_masked_softmax(&v, &m, &o, NULL) == RLX_OK);
  /* Row 0 keeps key 0 alone, row 1 key 2, row 2 keys 3 and 7 (equal). */
  CHECK(s[0] == 1.0f && s[8 + 2] == 1.0f);
  CHECK(fabsf(s[16 + 3] - 0.5f) < 1e-6f && fabsf(s[16 + 7] - 0.5f) < 1e-6f);
  /* Key 6 of row 0 is listed but outside kept_keys: untouched, as every
   * unlisted key. */
  CHECK(s[6] == 5.0f && s[1] == 5.0f && s[8 + 7] == 5.0f && s[16 + 4] == 5.0f);
  /* The default mode zeroes the rest. */
  for (i = 0; i < 24; ++i) s[i] = 5.0f;
  CHECK(rlx_masked_softmax(&v, &m, NULL, NULL) == RLX_OK);
  CHECK(s[0] == 1.0f && s[6] == 0.0f && s[1] == 0.0f && s[16 + 4] == 0.0f);
}

static void TestClassifyBlocks(void) {
  uint32_t num[2], idx[4], full_num[2], full_idx[4];
  rlx_block_mask_view out;
  rlx_shape4 shape = {1, 1, 3, 8};
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  WithList(&m);
  out.q_blocks = 1;
  out.k_blocks = 2;
  out.kv_num_blocks = num;
  out.kv_indices = idx;
  out.full_kv_num_blocks = full_num;
  out.full_kv_indices = full_idx;
  /* One query block of 3 rows, key blocks [0, 4) and [4, 8): both partial
   * (keys 0, 2, 3 and 7 kept, none whole). */
  CHECK(rlx_classify_blocks(&m, &shape, 0, 0, 3, 4, &out) == RLX_OK);
  CHECK(num[0] == 2 && idx[0] == 0 && idx[1] == 1 && full_num[0] == 0);
}

static void TestErrors(void) {
  float s[24], before[24];
  size_t i;
  int32_t bad[12];
  rlx_score_view v = F32View(s, 1, 1, 3, 8);
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  rlx_kept_intervals kept;
  for (i = 0; i < 24; ++i) s[i] = (float)i;
  memcpy(before, s, sizeof(s));
  memcpy(bad, kSlots, sizeof(bad));
  bad[9] = 8; /* row 2, slot 1: k_len is 8 */
  WithList(&m);
  m.key_indices = bad;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "query 2), slot 1, is 8") != NULL);
  EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, -1.0f), RLX_INVALID_ARGUMENT,
               "rlx_apply_mask");
  CHECK(strstr(rlx_last_error(), "slot 1, is 8") != NULL);
  EXPECT_ERROR(rlx_kept_keys(&m, 0, 2, 3, 8, &kept), RLX_INVALID_ARGUMENT,
               "rlx_kept_keys");
  bad[9] = -2;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "is -2") != NULL);
  CHECK(BitsEqual(s, before, sizeof(s)));
  /* Extents: q_len 2 neither 1 nor the scores' 3. */
  WithList(&m);
  m.key_indices_shape.q_len = 2;
  EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
               "rlx_masked_softmax");
  CHECK(strstr(rlx_last_error(), "key_indices shape [1, 1, 2, 4]") != NULL);
  /* With a block list. */
  {
    const int32_t one = 1, zero = 0;
    WithList(&m);
    m.block_list.num_blocks = &one;
    m.block_list.indices = &zero;
    m.block_list.batch = m.block_list.heads = m.block_list.q_blocks = 1;
    m.block_list.max_blocks = 1;
    m.block_list.q_block = 4;
    m.block_list.k_block = 8;
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), "key_indices") != NULL &&
          strstr(rlx_last_error(), "block_list") != NULL);
  }
  CHECK(BitsEqual(s, before, sizeof(s)));
}

int main(void) {
  TestApplyAndKeptKeys();
  TestKeptOnlySoftmax();
  TestClassifyBlocks();
  TestErrors();
  return ReportChecks("c_api_key_list_test");
}
