/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of ladders, compiled as C99: power-of-two, geometric and custom
 * ladders, routing, the per-bucket cache, and the decode masks of every
 * bucket, on success and on every error
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

/* ------------------------------------------------------------------------ */
/* Ladders                                                                  */

/* The ladder's extents (end - 1 of each bucket) equal want[0 .. n). */
static int HasExtents(const rlx_ladder* ladder, const uint64_t* want,
                      size_t n) {
  size_t i, size = 0;
  if (rlx_ladder_size(ladder, &size) != RLX_OK || size != n) return 0;
  for (i = 0; i < n; ++i) {
    uint64_t start = 0, end = 0;
    if (rlx_ladder_bucket(ladder, i, &start, &end) != RLX_OK) return 0;
    if (end - 1 != want[i]) return 0;
    if (start != (i == 0 ? 1 : want[i - 1] + 1)) return 0;
  }
  return 1;
}

static void TestPowerOfTwo(void) {
  static const uint64_t k8to256[] = {8, 16, 32, 64, 128, 256};
  static const uint64_t k1to1[] = {1};
  static const uint64_t k10to64[] = {16, 32, 64};
  static const uint64_t k8to20[] = {8, 16, 32};
  rlx_ladder* ladder = NULL;
  rlx_ladder* const sentinel = (rlx_ladder*)&g_checks;
  rlx_ladder* untouched = sentinel;

  CHECK(rlx_ladder_power_of_two(8, 256, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k8to256, 6));
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_power_of_two(1, 1, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k1to1, 1));
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_power_of_two(10, 64, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k10to64, 3));
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_power_of_two(8, 20, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k8to20, 3));
  rlx_ladder_free(ladder);

  EXPECT_ERROR(rlx_ladder_power_of_two(0, 8, &untouched), RLX_INVALID_ARGUMENT,
               "rlx_ladder_power_of_two");
  CHECK(strstr(rlx_last_error(), "min=0") != NULL);
  EXPECT_ERROR(rlx_ladder_power_of_two(9, 8, &untouched), RLX_INVALID_ARGUMENT,
               "rlx_ladder_power_of_two");
  CHECK(strstr(rlx_last_error(), "max=8") != NULL);
  /* Doubling past 2^63 would wrap: an error, not a wrapped ladder. */
  EXPECT_ERROR(rlx_ladder_power_of_two(1, UINT64_MAX, &untouched),
               RLX_INVALID_ARGUMENT, "rlx_ladder_power_of_two");
  EXPECT_ERROR(
      rlx_ladder_power_of_two(((uint64_t)1 << 63) + 1, UINT64_MAX, &untouched),
      RLX_INVALID_ARGUMENT, "rlx_ladder_power_of_two");
  EXPECT_ERROR(rlx_ladder_power_of_two(1, 8, NULL), RLX_INVALID_ARGUMENT,
               "rlx_ladder_power_of_two");
  CHECK(strstr(rlx_last_error(), "out") != NULL);
  CHECK(untouched == sentinel);
}

static void TestGeometric(void) {
  static const uint64_t k512by3[] = {8, 64, 512};
  static const uint64_t k512by1[] = {512};
  static const uint64_t k4096by5[] = {6, 28, 148, 777, 4096};
  rlx_ladder* ladder = NULL;
  rlx_ladder* const sentinel = (rlx_ladder*)&g_checks;
  rlx_ladder* untouched = sentinel;

  CHECK(rlx_ladder_geometric(512, 3, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k512by3, 3));
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_geometric(512, 1, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k512by1, 1));
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_geometric(4096, 5, &ladder) == RLX_OK);
  CHECK(HasExtents(ladder, k4096by5, 5));
  rlx_ladder_free(ladder);

  EXPECT_ERROR(rlx_ladder_geometric(0, 3, &untouched), RLX_INVALID_ARGUMENT,
               "rlx_ladder_geometric");
  CHECK(strstr(rlx_last_error(), "max=0") != NULL);
  EXPECT_ERROR(rlx_ladder_geometric(512, 0, &untouched), RLX_INVALID_ARGUMENT,
               "rlx_ladder_geometric");
  CHECK(strstr(rlx_last_error(), "count=0") != NULL);
  EXPECT_ERROR(rlx_ladder_geometric(UINT64_MAX, 2, &untouched),
               RLX_INVALID_ARGUMENT, "rlx_ladder_geometric");
  EXPECT_ERROR(rlx_ladder_geometric(512, 3, NULL), RLX_INVALID_ARGUMENT,
               "rlx_ladder_geometric");
  CHECK(untouched == sentinel);
}

static void TestCustomLadderAndRouting(void) {
  /* [1,5) [5,9) gap [20,30). */
  static const uint64_t starts[] = {1, 5, 20};
  static const uint64_t ends[] = {5, 9, 30};
  rlx_ladder* ladder = NULL;
  rlx_ladder* const sentinel = (rlx_ladder*)&g_checks;
  rlx_ladder* untouched = sentinel;
  size_t index = 77, size = 0;
  bool found = false;
  uint64_t start = 123, end = 456;

  CHECK(rlx_ladder_custom(starts, ends, 3, &ladder) == RLX_OK);
  CHECK(rlx_ladder_size(ladder, &size) == RLX_OK && size == 3);
  CHECK(rlx_ladder_bucket(ladder, 2, &start, &end) == RLX_OK);
  CHECK(start == 20 && end == 30);

#define ROUTES_TO(key, want)                                                  \
  (found = false, index = 77,                                                 \
   rlx_ladder_bucket_for(ladder, (key), &found, &index) == RLX_OK && found && \
       index == (want))
  CHECK(ROUTES_TO(1, 0));
  CHECK(ROUTES_TO(4, 0));
  CHECK(ROUTES_TO(5, 1));
  CHECK(ROUTES_TO(29, 2));
#undef ROUTES_TO
  /* Keys in the gap, below the first and past the last bucket route
   * nowhere: RLX_OK, found false, and the index is left alone. */
#define ROUTES_NOWHERE(key)                                                    \
  (found = true, index = 77,                                                   \
   rlx_ladder_bucket_for(ladder, (key), &found, &index) == RLX_OK && !found && \
       index == 77)
  CHECK(ROUTES_NOWHERE(0));
  CHECK(ROUTES_NOWHERE(9));
  CHECK(ROUTES_NOWHERE(19));
  CHECK(ROUTES_NOWHERE(30));
  CHECK(ROUTES_NOWHERE(UINT64_MAX));
#undef ROUTES_NOWHERE

  /* Routing errors: RLX_INVALID_ARGUMENT, nothing written, a message. */
  found = true;
  index = 77;
  EXPECT_ERROR(rlx_ladder_bucket_for(NULL, 3, &found, &index),
               RLX_INVALID_ARGUMENT, "rlx_ladder_bucket_for");
  CHECK(found && index == 77);
  CHECK(strstr(rlx_last_error(), "ladder") != NULL);
  EXPECT_ERROR(rlx_ladder_bucket_for(ladder, 3, &found, NULL),
               RLX_INVALID_ARGUMENT, "rlx_ladder_bucket_for");
  CHECK(found);
  CHECK(strstr(rlx_last_error(), "index") != NULL);
  EXPECT_ERROR(rlx_ladder_bucket_for(ladder, 3, NULL, &index),
               RLX_INVALID_ARGUMENT, "rlx_ladder_bucket_for");
  CHECK(index == 77);
  CHECK(strstr(rlx_last_error(), "found") != NULL);

  /* rlx_ladder_bucket errors: nothing written, a message. */
  start = 123;
  end = 456;
  EXPECT_ERROR(rlx_ladder_bucket(ladder, 3, &start, &end), RLX_INVALID_ARGUMENT,
               "rlx_ladder_bucket");
  CHECK(start == 123 && end == 456);
  CHECK(strstr(rlx_last_error(), "3") != NULL);
  EXPECT_ERROR(rlx_ladder_bucket(NULL, 0, &start, &end), RLX_INVALID_ARGUMENT,
               "rlx_ladder_bucket");
  CHECK(start == 123 && end == 456);
  EXPECT_ERROR(rlx_ladder_bucket(ladder, 0, NULL, &end), RLX_INVALID_ARGUMENT,
               "rlx_ladder_bucket");
  CHECK(end == 456);
  EXPECT_ERROR(rlx_ladder_bucket(ladder, 0, &start, NULL), RLX_INVALID_ARGUMENT,
               "rlx_ladder_bucket");
  CHECK(start == 123);

  /* rlx_ladder_size errors. */
  size = 99;
  EXPECT_ERROR(rlx_ladder_size(NULL, &size), RLX_INVALID_ARGUMENT,
               "rlx_ladder_size");
  CHECK(size == 99);
  EXPECT_ERROR(rlx_ladder_size(ladder, NULL), RLX_INVALID_ARGUMENT,
               "rlx_ladder_size");

  rlx_ladder_free(ladder);
  rlx_ladder_free(NULL); /* a no-op */

  /* rlx_ladder_custom errors. */
  {
    static const uint64_t empty_starts[] = {1, 5};
    static const uint64_t empty_ends[] = {5, 5};
    static const uint64_t overlap_starts[] = {1, 4};
    static const uint64_t overlap_ends[] = {5, 9};
    static const uint64_t unsorted_starts[] = {10, 1};
    static const uint64_t unsorted_ends[] = {20, 5};
    EXPECT_ERROR(rlx_ladder_custom(starts, ends, 0, &untouched),
                 RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    EXPECT_ERROR(rlx_ladder_custom(NULL, ends, 3, &untouched),
                 RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    EXPECT_ERROR(rlx_ladder_custom(starts, NULL, 3, &untouched),
                 RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    EXPECT_ERROR(rlx_ladder_custom(starts, ends, 3, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_ladder_custom");
    EXPECT_ERROR(rlx_ladder_custom(empty_starts, empty_ends, 2, &untouched),
                 RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    CHECK(strstr(rlx_last_error(), "bucket 1 [5, 5)") != NULL);
    EXPECT_ERROR(rlx_ladder_custom(overlap_starts, overlap_ends, 2, &untouched),
                 RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    CHECK(strstr(rlx_last_error(), "bucket 1 [4, 9)") != NULL);
    EXPECT_ERROR(
        rlx_ladder_custom(unsorted_starts, unsorted_ends, 2, &untouched),
        RLX_INVALID_ARGUMENT, "rlx_ladder_custom");
    /* A bucket count no memory can hold fails before any bucket is read:
     * one past what a vector can ever hold (length_error), one it could in
     * principle but the allocator cannot (bad_alloc). */
    EXPECT_ERROR(rlx_ladder_custom(starts, ends, SIZE_MAX / 2, &untouched),
                 RLX_OUT_OF_MEMORY, "rlx_ladder_custom");
    if (!RLX_TEST_UNDER_ASAN) {
      EXPECT_ERROR(rlx_ladder_custom(starts, ends, SIZE_MAX / 64, &untouched),
                   RLX_OUT_OF_MEMORY, "rlx_ladder_custom");
    }
  }
  CHECK(untouched == sentinel);
}

/* The test's build function: artifacts are heap ints holding the upper;
 * *user counts builds and releases (user[0], user[1]); an upper of 16
 * fails with RLX_OUT_OF_MEMORY while user[2] is set. */
static rlx_status BuildUpper(uint64_t upper, void* user, void** artifact) {
  int* counts = (int*)user;
  uint64_t* data;
  if (upper == 16 && counts[2]) return RLX_OUT_OF_MEMORY;
  data = (uint64_t*)malloc(sizeof(*data));
  if (data == NULL) return RLX_OUT_OF_MEMORY;
  *data = upper;
  *artifact = data;
  ++counts[0];
  return RLX_OK;
}

static void ReleaseUpper(void* artifact, void* user) {
  ++((int*)user)[1];
  free(artifact);
}

static void TestBucketedCache(void) {
  rlx_ladder* ladder = NULL;
  rlx_bucketed_cache* cache = NULL;
  int counts[3] = {0, 0, 0};
  uint64_t upper = 0;
  void* artifact = NULL;
  void* first = NULL;
  bool built = true;
  size_t count = 99;

  CHECK(rlx_ladder_power_of_two(8, 64, &ladder) == RLX_OK); /* 8 16 32 64 */
  EXPECT_ERROR(rlx_bucketed_cache_new(NULL, BuildUpper, NULL, NULL, &cache),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_new");
  EXPECT_ERROR(rlx_bucketed_cache_new(ladder, NULL, NULL, NULL, &cache),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_new");
  EXPECT_ERROR(rlx_bucketed_cache_new(ladder, BuildUpper, NULL, NULL, NULL),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_new");
  CHECK(rlx_bucketed_cache_new(ladder, BuildUpper, ReleaseUpper, counts,
                               &cache) == RLX_OK);
  /* The cache holds its own copy of the ladder. */
  rlx_ladder_free(ladder);
  if (cache == NULL) return;

  /* Built once per bucket, at its upper. */
  CHECK(rlx_bucketed_cache_get(cache, 3, &upper, &artifact) == RLX_OK);
  CHECK(upper == 8 && artifact != NULL && *(uint64_t*)artifact == 8);
  first = artifact;
  CHECK(rlx_bucketed_cache_get(cache, 8, &upper, &artifact) == RLX_OK);
  CHECK(upper == 8 && artifact == first && counts[0] == 1);
  CHECK(rlx_bucketed_cache_get(cache, 40, &upper, &artifact) == RLX_OK);
  CHECK(upper == 64 && *(uint64_t*)artifact == 64 && counts[0] == 2);
  CHECK(rlx_bucketed_cache_is_built(cache, 0, &built) == RLX_OK && built);
  CHECK(rlx_bucketed_cache_is_built(cache, 1, &built) == RLX_OK && !built);
  CHECK(rlx_bucketed_cache_is_built(cache, 9, &built) == RLX_OK && !built);
  CHECK(rlx_bucketed_cache_built_count(cache, &count) == RLX_OK && count == 2);

  /* A key in no bucket, and a failing build: the status, nothing cached
   * or written. */
  upper = 7;
  artifact = first;
  EXPECT_ERROR(rlx_bucketed_cache_get(cache, 65, &upper, &artifact),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_get");
  CHECK(strstr(rlx_last_error(), "key 65") != NULL);
  counts[2] = 1;
  EXPECT_ERROR(rlx_bucketed_cache_get(cache, 9, &upper, &artifact),
               RLX_OUT_OF_MEMORY, "rlx_bucketed_cache_get");
  CHECK(strstr(rlx_last_error(), "upper 16") != NULL);
  CHECK(upper == 7 && artifact == first);
  CHECK(rlx_bucketed_cache_built_count(cache, &count) == RLX_OK && count == 2);
  counts[2] = 0;
  CHECK(rlx_bucketed_cache_get(cache, 9, &upper, &artifact) == RLX_OK);
  CHECK(upper == 16 && counts[0] == 3 && counts[1] == 0);
  EXPECT_ERROR(rlx_bucketed_cache_get(cache, 9, NULL, &artifact),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_get");
  EXPECT_ERROR(rlx_bucketed_cache_get(NULL, 9, &upper, &artifact),
               RLX_INVALID_ARGUMENT, "rlx_bucketed_cache_get");

  /* retain_only keeps one bucket's and releases the others; a bad index
   * releases nothing. */
  EXPECT_ERROR(rlx_bucketed_cache_retain_only(cache, 4), RLX_INVALID_ARGUMENT,
               "rlx_bucketed_cache_retain_only");
  CHECK(strstr(rlx_last_error(), "index 4") != NULL);
  CHECK(counts[1] == 0);
  CHECK(rlx_bucketed_cache_retain_only(cache, 1) == RLX_OK);
  CHECK(counts[1] == 2);
  CHECK(rlx_bucketed_cache_built_count(cache, &count) == RLX_OK && count == 1);
  CHECK(rlx_bucketed_cache_is_built(cache, 1, &built) == RLX_OK && built);
  /* A dropped bucket is built again on its next use. */
  CHECK(rlx_bucketed_cache_get(cache, 2, &upper, &artifact) == RLX_OK);
  CHECK(upper == 8 && counts[0] == 4);
  CHECK(rlx_bucketed_cache_clear(cache) == RLX_OK);
  CHECK(counts[1] == 4);
  CHECK(rlx_bucketed_cache_built_count(cache, &count) == RLX_OK && count == 0);
  CHECK(rlx_bucketed_cache_get(cache, 64, &upper, &artifact) == RLX_OK);
  /* Freeing releases what is left. */
  rlx_bucketed_cache_free(cache);
  CHECK(counts[0] == 5 && counts[1] == 5);
  rlx_bucketed_cache_free(NULL);
}

/* ------------------------------------------------------------------------ */
/* Decode masks                                                             */

static void TestFillDecodeMask(void) {
  float mask[32];
  float before[32];
  size_t i;

  /* The seed's cases. */
  CHECK(rlx_fill_bucket_decode_mask(mask, 8, 3, 7, 0) == RLX_OK);
  CHECK(IsDecodeMask(mask, 8, 0, 3, 7));
  CHECK(rlx_fill_bucket_decode_mask(mask, 5, 4, 4, 0) == RLX_OK);
  CHECK(IsDecodeMask(mask, 5, 0, 4, 4));
  CHECK(rlx_fill_bucket_decode_mask(mask, 4, 0, 3, 0) == RLX_OK);
  CHECK(IsDecodeMask(mask, 4, 0, 0, 3));
  {
    static const float want[] = {0, 0, 0, 1, 1, 0, 1};
    CHECK(rlx_fill_bucket_decode_mask(mask, 7, 5, 6, 2) == RLX_OK);
    CHECK(memcmp(mask, want, sizeof(want)) == 0);
  }
  /* A window at least as wide as the past is the causal mask. */
  CHECK(rlx_fill_bucket_decode_mask(mask, 9, 5, 8, 100) == RLX_OK);
  CHECK(IsDecodeMask(mask, 9, 0, 5, 8));
  /* Unaligned output. */
  CHECK(rlx_fill_bucket_decode_mask(mask + 1, 20, 10, 19, 4) == RLX_OK);
  CHECK(IsDecodeMask(mask + 1, 20, 6, 10, 19));

  for (i = 0; i < 32; ++i) mask[i] = NAN;
  memcpy(before, mask, sizeof(mask));
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(NULL, 8, 3, 7, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  CHECK(strstr(rlx_last_error(), "out") != NULL);
  /* past > upper is an error, not an all-ones mask. */
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 8, 8, 7, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  CHECK(strstr(rlx_last_error(), "past_seq 8") != NULL);
  CHECK(strstr(rlx_last_error(), "upper 7") != NULL);
  /* out_len must be upper + 1, neither more nor less. */
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 7, 3, 7, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  CHECK(strstr(rlx_last_error(), "7") != NULL);
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 9, 3, 7, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 0, 0, 0, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  /* upper + 1 would overflow. */
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 0, 0, SIZE_MAX, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  CHECK(BitsEqual(mask, before, sizeof(mask)));
}

/* The seed's every_bucket_of_every_ladder_masks_its_padding, through C: for
 * any past a ladder routes to a bucket, that bucket's mask attends to
 * exactly the past keys and the new token. */
static void TestEveryBucketOfEveryLadderMasksItsPadding(void) {
  rlx_ladder* ladders[5] = {NULL, NULL, NULL, NULL, NULL};
  size_t l;
  float* mask = NULL;
  CHECK(rlx_ladder_power_of_two(1, 512, &ladders[0]) == RLX_OK);
  CHECK(rlx_ladder_power_of_two(1, 1, &ladders[1]) == RLX_OK);
  CHECK(rlx_ladder_geometric(512, 3, &ladders[2]) == RLX_OK);
  CHECK(rlx_ladder_geometric(512, 1, &ladders[3]) == RLX_OK);
  CHECK(rlx_ladder_geometric(4096, 5, &ladders[4]) == RLX_OK);
  mask = (float*)malloc(sizeof(float) * 4097);
  CHECK(mask != NULL);
  for (l = 0; l < 5 && mask != NULL; ++l) {
    uint64_t first = 0, max = 0;
    uint64_t past;
    size_t size = 0;
    int ok = rlx_ladder_size(ladders[l], &size) == RLX_OK &&
             rlx_ladder_bucket(ladders[l], size - 1, &first, &max) == RLX_OK;
    max -= 1;
    for (past = 0; past <= max && ok; ++past) {
      size_t index = 0;
      bool found = false;
      uint64_t start = 0, end = 0;
      size_t upper;
      /* The cache keys on the length being run, at least 1. */
      if (rlx_ladder_bucket_for(ladders[l], past > 0 ? past : 1, &found,
                                &index) != RLX_OK ||
          !found ||
          rlx_ladder_bucket(ladders[l], index, &start, &end) != RLX_OK) {
        ok = 0;
        break;
      }
      upper = (size_t)(end - 1);
      ok = past <= upper &&
           rlx_fill_bucket_decode_mask(mask, upper + 1, (size_t)past, upper,
                                       0) == RLX_OK &&
           IsDecodeMask(mask, upper + 1, 0, (size_t)past, upper);
    }
    CHECK(ok);
    if (!ok)
      fprintf(stderr, "  ladder %zu failed at past %llu\n", l,
              (unsigned long long)past);
  }
  free(mask);
  for (l = 0; l < 5; ++l) rlx_ladder_free(ladders[l]);
}

int main(void) {
  TestPowerOfTwo();
  TestGeometric();
  TestCustomLadderAndRouting();
  TestBucketedCache();
  TestFillDecodeMask();
  TestEveryBucketOfEveryLadderMasksItsPadding();
  return ReportChecks("c_api_ladders_test");
}
