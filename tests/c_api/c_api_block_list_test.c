/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Block lists through the C API (rlx_mask_spec.block_list, rlx_block_list),
 * compiled as C99: a causal mask restricted to listed blocks, full ones
 * kept whatever the rule says, through rlx_apply_mask, rlx_masked_softmax
 * and rlx_kept_keys; rlx_classify_blocks's output fed back in as a block
 * list gives the same kept set; bad lists return RLX_INVALID_ARGUMENT with
 * a message naming the function and the values, and write nothing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

enum { kQ = 4, kK = 10 };

/* kept[q * kK + k] from rlx_apply_mask over ones (fill -7). */
static int Kept(const rlx_mask_spec* m, int* kept) {
  float s[kQ * kK];
  size_t i;
  rlx_score_view v = F32View(s, 1, 1, kQ, kK);
  for (i = 0; i < kQ * kK; ++i) s[i] = 1.0f;
  if (rlx_apply_mask(&v, m, NULL, -7.0f) != RLX_OK) {
    fprintf(stderr, "  rlx_apply_mask: %s\n", rlx_last_error());
    return 0;
  }
  for (i = 0; i < kQ * kK; ++i) kept[i] = s[i] == 1.0f;
  return 1;
}

static void TestBlockList(void) {
  /* q_block 2, k_block 4: key blocks [0, 4), [4, 8), [8, 10). Query block
   * 0 (rows 0, 1 at positions 6, 7): block 0 full, block 1 partial; query
   * block 1 (rows 2, 3 at positions 8, 9): block 2 full, block 0 partial
   * (listed in that order). */
  const int32_t num[] = {1, 1}, idx[] = {1, -1, 0, -1};
  const int32_t full_num[] = {1, 1}, full_idx[] = {0, -1, 2, -1};
  rlx_mask_spec m = Mask(RLX_MASK_CAUSAL);
  int kept[kQ * kK];
  size_t q, k;
  float p[kQ * kK], before[kQ * kK];
  rlx_score_view v = F32View(p, 1, 1, kQ, kK);
  rlx_kept_intervals cover;
  m.window_keys = 3; /* keys p_q - 2 .. p_q of a partial block */
  m.block_list.num_blocks = num;
  m.block_list.indices = idx;
  m.block_list.full_num_blocks = full_num;
  m.block_list.full_indices = full_idx;
  m.block_list.batch = m.block_list.heads = 1;
  m.block_list.q_blocks = 2;
  m.block_list.max_blocks = 2;
  m.block_list.q_block = 2;
  m.block_list.k_block = 4;
  CHECK(Kept(&m, kept));
  for (q = 0; q < kQ; ++q) {
    const size_t p_q = q + kK - kQ;
    for (k = 0; k < kK; ++k) {
      const int full = q < 2 ? k < 4 : k >= 8;
      const int partial = q < 2 ? (k >= 4 && k < 8) : k < 4;
      const int rule = k <= p_q && p_q - k < 3;
      CHECK(kept[q * kK + k] == (full || (partial && rule)));
    }
  }
  /* The softmax keeps the same keys, equally (scores all 0). */
  memset(p, 0, sizeof(p));
  CHECK(rlx_masked_softmax(&v, &m, NULL, NULL) == RLX_OK);
  for (q = 0; q < kQ; ++q) {
    size_t count = 0;
    for (k = 0; k < kK; ++k) count += (size_t)kept[q * kK + k];
    for (k = 0; k < kK; ++k) {
      const float want = kept[q * kK + k] ? 1.0f / (float)count : 0.0f;
      CHECK(fabsf(p[q * kK + k] - want) <= 1e-6f);
    }
  }
  /* kept_keys covers them. */
  for (q = 0; q < kQ; ++q) {
    CHECK(rlx_kept_keys(&m, 0, q, kQ, kK, &cover) == RLX_OK);
    for (k = 0; k < kK; ++k) {
      size_t i;
      int in = 0;
      for (i = 0; i < cover.count; ++i) {
        in |= cover.intervals[i].begin <= k && k < cover.intervals[i].end;
      }
      CHECK(!kept[q * kK + k] || in);
    }
  }

  /* A key block index past the keys: rejected, nothing written. */
  {
    const int32_t bad_idx[] = {3, -1, 0, -1};
    rlx_mask_spec bad = m;
    bad.block_list.indices = bad_idx;
    for (k = 0; k < kQ * kK; ++k) p[k] = before[k] = (float)k;
    EXPECT_ERROR(rlx_masked_softmax(&v, &bad, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), "indices[0] = 3") != NULL);
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, -1.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(BitsEqual(p, before, sizeof(p)));
    bad = m;
    bad.block_list.q_blocks = 3;
    EXPECT_ERROR(rlx_apply_mask(&v, &bad, NULL, -1.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), "q_blocks must be ceil(q_len / q_block)") !=
          NULL);
    CHECK(BitsEqual(p, before, sizeof(p)));
  }
}

/* classify_blocks' lists of a sliding window (uint32) fed back in as an
 * int32 block list on top of it keep the same keys. */
static void TestClassifiedRoundTrip(void) {
  uint32_t num[2], idx[2 * 4], full_num[2], full_idx[2 * 4];
  int32_t num32[2], idx32[2 * 4], full_num32[2], full_idx32[2 * 4];
  rlx_block_mask_view out;
  rlx_shape4 shape;
  rlx_mask_spec m = Mask(RLX_MASK_SLIDING_WINDOW);
  rlx_mask_spec listed;
  int want[kQ * kK], got[kQ * kK];
  size_t i;
  m.window = 3;
  shape.batch = shape.heads = 1;
  shape.q_len = kQ;
  shape.k_len = kK;
  out.q_blocks = 2;
  out.k_blocks = 4;
  out.kv_num_blocks = num;
  out.kv_indices = idx;
  out.full_kv_num_blocks = full_num;
  out.full_kv_indices = full_idx;
  CHECK(rlx_classify_blocks(&m, &shape, 0, 0, 2, 3, &out) == RLX_OK);
  for (i = 0; i < 2; ++i) {
    num32[i] = (int32_t)num[i];
    full_num32[i] = (int32_t)full_num[i];
  }
  for (i = 0; i < 8; ++i) {
    idx32[i] = (int32_t)idx[i];
    full_idx32[i] = (int32_t)full_idx[i];
  }
  listed = m;
  listed.block_list.num_blocks = num32;
  listed.block_list.indices = idx32;
  listed.block_list.full_num_blocks = full_num32;
  listed.block_list.full_indices = full_idx32;
  listed.block_list.batch = listed.block_list.heads = 1;
  listed.block_list.q_blocks = 2;
  listed.block_list.max_blocks = 4;
  listed.block_list.q_block = 2;
  listed.block_list.k_block = 3;
  CHECK(Kept(&m, want));
  CHECK(Kept(&listed, got));
  CHECK(memcmp(want, got, sizeof(want)) == 0);
  /* Some block was full and some partial: both kinds were exercised. */
  CHECK(full_num[0] + full_num[1] > 0 && num[0] + num[1] > 0);
}

int main(void) {
  TestBlockList();
  TestClassifiedRoundTrip();
  return ReportChecks("c_api_block_list_test");
}
