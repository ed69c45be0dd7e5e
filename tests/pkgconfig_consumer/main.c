/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A C program built against an installed rlx-attn-mask with nothing but
 * `pkg-config --cflags --libs rlx-attn-mask` (scripts/consumer_pkgconfig.sh):
 * one decode step of a bucketed executor through the C API. */
#include <math.h>
#include <rlx/rlx_attn_mask.h>
#include <stdbool.h>
#include <stdio.h>

int main(void) {
  rlx_ladder* ladder = NULL;
  size_t index = 0;
  bool found = false;
  uint64_t start = 0, end = 0;
  const char* active = NULL;
  const char* supported = NULL;
  float mask[17];
  float scores[17];
  rlx_score_view view;
  rlx_mask_spec spec;
  size_t upper, k;
  const size_t past = 11;
  double sum = 0;

  if (rlx_ladder_power_of_two(8, 64, &ladder) != RLX_OK ||
      rlx_ladder_bucket_for(ladder, past, &found, &index) != RLX_OK || !found ||
      rlx_ladder_bucket(ladder, index, &start, &end) != RLX_OK) {
    fprintf(stderr, "consumer: past %zu: %s\n", past,
            found ? rlx_last_error() : "no bucket");
    rlx_ladder_free(ladder);
    return 1;
  }
  rlx_ladder_free(ladder);
  upper = (size_t)(end - 1); /* 16 */
  if (upper + 1 != 17 ||
      rlx_fill_bucket_decode_mask(mask, upper + 1, past, upper, 0) != RLX_OK) {
    fprintf(stderr, "consumer: bucket upper %zu: %s\n", upper,
            rlx_last_error());
    return 1;
  }

  /* The same mask as the structured decode kind, on one score row whose
   * padding would dominate if it were attended. */
  for (k = 0; k <= upper; ++k) scores[k] = mask[k] != 0.0f ? 1.0f : 1e30f;
  view.data = scores;
  view.type = RLX_SCORE_F32;
  view.shape.batch = view.shape.heads = view.shape.q_len = 1;
  view.shape.k_len = upper + 1;
  view.strides = rlx_contiguous_strides(view.shape);
  rlx_mask_spec_init(&spec); /* sets struct_size: the library checks it */
  spec.kind = RLX_MASK_DECODE;
  spec.past = past;
  spec.upper = upper;
  if (rlx_masked_softmax(&view, &spec, NULL, NULL) != RLX_OK) {
    fprintf(stderr, "consumer: %s\n", rlx_last_error());
    return 1;
  }
  for (k = 0; k <= upper; ++k) {
    if ((mask[k] == 0.0f) != (scores[k] == 0.0f)) {
      fprintf(stderr, "consumer: key %zu: mask %g, probability %g\n", k,
              mask[k], scores[k]);
      return 1;
    }
    sum += scores[k];
  }
  if (fabs(sum - 1.0) > 1e-6) {
    fprintf(stderr, "consumer: probabilities sum to %.9f\n", sum);
    return 1;
  }
  if (rlx_active_target(&active) != RLX_OK ||
      rlx_supported_targets(&supported) != RLX_OK) {
    fprintf(stderr, "consumer: %s\n", rlx_last_error());
    return 1;
  }
  printf(
      "consumer: past %zu -> bucket [%llu, %llu), %zu keys kept, target %s"
      " (supported: %s)\n",
      past, (unsigned long long)start, (unsigned long long)end, past + 1,
      active, supported);
  return 0;
}
