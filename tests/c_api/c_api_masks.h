/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Score views and masks for the C API's test programs
 * (tests/c_api/c_api_*_test.c), C99: contiguous f32 views, masks of each
 * kind, and predicates over kept intervals and decode masks. */
#ifndef RLX_TESTS_C_API_C_API_MASKS_H_
#define RLX_TESTS_C_API_C_API_MASKS_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"

static inline rlx_score_view F32View(float* data, size_t batch, size_t heads,
                                     size_t q_len, size_t k_len) {
  rlx_score_view v;
  memset(&v, 0, sizeof(v));
  v.data = data;
  v.type = RLX_SCORE_F32;
  v.shape.batch = batch;
  v.shape.heads = heads;
  v.shape.q_len = q_len;
  v.shape.k_len = k_len;
  v.strides = rlx_contiguous_strides(v.shape);
  return v;
}

static inline rlx_mask_spec Mask(rlx_mask_kind kind) {
  rlx_mask_spec m;
  rlx_mask_spec_init(&m);
  m.kind = kind;
  return m;
}

static inline rlx_mask_spec DecodeMask(size_t past, size_t upper,
                                       size_t window) {
  rlx_mask_spec m = Mask(RLX_MASK_DECODE);
  m.past = past;
  m.upper = upper;
  m.window = window;
  return m;
}

static inline rlx_mask_spec DenseMask(rlx_mask_kind kind, const void* data,
                                      size_t batch, size_t heads, size_t q_len,
                                      size_t k_len) {
  rlx_mask_spec m = Mask(kind);
  m.data = data;
  m.shape.batch = batch;
  m.shape.heads = heads;
  m.shape.q_len = q_len;
  m.shape.k_len = k_len;
  m.strides = rlx_contiguous_strides(m.shape);
  return m;
}

static inline int KeptIs(const rlx_kept_intervals* k, size_t count, size_t b0,
                         size_t e0, size_t b1, size_t e1) {
  if (k->count != count) return 0;
  if (count >= 1 && (k->intervals[0].begin != b0 || k->intervals[0].end != e0))
    return 0;
  if (count >= 2 && (k->intervals[1].begin != b1 || k->intervals[1].end != e1))
    return 0;
  return 1;
}

/* The third interval of *k is [b2, e2). */
static inline int ThirdIs(const rlx_kept_intervals* k, size_t b2, size_t e2) {
  return k->count == 3 && k->intervals[2].begin == b2 &&
         k->intervals[2].end == e2;
}

/* mask[0 .. n) is 1.0f exactly at [lo, past) and at upper, 0.0f elsewhere. */
static inline int IsDecodeMask(const float* mask, size_t n, size_t lo,
                               size_t past, size_t upper) {
  size_t i;
  if (n != upper + 1) return 0;
  for (i = 0; i < n; ++i) {
    const float want = ((i >= lo && i < past) || i == upper) ? 1.0f : 0.0f;
    if (mask[i] != want) return 0;
  }
  return 1;
}

#endif /* RLX_TESTS_C_API_C_API_MASKS_H_ */
