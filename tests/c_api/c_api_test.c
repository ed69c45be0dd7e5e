/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API, compiled as C99: every function, on success and on every error
 * it documents. Each rejected call must return its status, write nothing
 * (outputs hold sentinels before the call and are compared after it) and
 * leave a message in rlx_last_error() that starts with the C function's
 * name.
 *
 * Without arguments it runs the whole suite. `c_api_test env-target` expects
 * RLX_ATTN_TARGET to name an unknown target and checks that the first target
 * query reports it and that forcing a target repairs it. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"
/* From the source tree: the codec is a source header, never installed. */
#include "src/util/half_codec.h"

/* AddressSanitizer's operator new reports an impossible allocation and
 * aborts instead of throwing std::bad_alloc, so the test that needs the
 * throw runs only without it. */
#if defined(__SANITIZE_ADDRESS__)
#define RLX_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLX_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef RLX_TEST_UNDER_ASAN
#define RLX_TEST_UNDER_ASAN 0
#endif

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* The call failed with `want` and a message that names `function`. */
static void ExpectError(rlx_status got, rlx_status want, const char* function,
                        int line) {
  const char* message = rlx_last_error();
  const size_t n = strlen(function);
  ++g_checks;
  if (got != want || message == NULL || strncmp(message, function, n) != 0 ||
      strncmp(message + n, ": ", 2) != 0) {
    ++g_failures;
    fprintf(stderr,
            "%s:%d: want status %d with a message naming %s, got status %d, "
            "message \"%s\"\n",
            __FILE__, line, (int)want, function, (int)got,
            message ? message : "(null)");
  }
}
#define EXPECT_ERROR(call, want, function) \
  ExpectError((call), (want), (function), __LINE__)

static int BitsEqual(const void* a, const void* b, size_t bytes) {
  return memcmp(a, b, bytes) == 0;
}

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

/* mask[0 .. n) is 1.0f exactly at [lo, past) and at upper, 0.0f elsewhere. */
static int IsDecodeMask(const float* mask, size_t n, size_t lo, size_t past,
                        size_t upper) {
  size_t i;
  if (n != upper + 1) return 0;
  for (i = 0; i < n; ++i) {
    const float want = ((i >= lo && i < past) || i == upper) ? 1.0f : 0.0f;
    if (mask[i] != want) return 0;
  }
  return 1;
}

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

/* ------------------------------------------------------------------------ */
/* Targets                                                                  */

/* `name` is one of the comma-separated names of `list`. */
static int ListHas(const char* list, const char* name) {
  const size_t n = strlen(name);
  const char* p = list;
  while (p != NULL && *p != '\0') {
    const char* comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

/* The active target's name, or NULL when rlx_active_target fails. */
static const char* ActiveTarget(void) {
  const char* name = NULL;
  return rlx_active_target(&name) == RLX_OK ? name : NULL;
}

/* The name the dispatched code reports, or NULL when
 * rlx_dispatched_target fails. */
static const char* DispatchedTarget(void) {
  const char* name = NULL;
  return rlx_dispatched_target(&name) == RLX_OK ? name : NULL;
}

static void TestTargets(void) {
  const char* compiled = NULL;
  const char* supported = NULL;
  const char* again = NULL;
  const char* active;
  char name[64];
  const char* p;
  char first[64] = "";

  CHECK(rlx_compiled_targets(&compiled) == RLX_OK);
  CHECK(rlx_supported_targets(&supported) == RLX_OK);
  CHECK(compiled != NULL && compiled[0] != '\0');
  CHECK(supported != NULL && supported[0] != '\0');
  if (compiled == NULL || supported == NULL) return;
  CHECK(strchr(compiled, ' ') == NULL);
  /* The same storage every call. */
  CHECK(rlx_compiled_targets(&again) == RLX_OK && again == compiled);
  CHECK(rlx_supported_targets(&again) == RLX_OK && again == supported);
  /* A NULL out-pointer is an error. */
  EXPECT_ERROR(rlx_compiled_targets(NULL), RLX_INVALID_ARGUMENT,
               "rlx_compiled_targets");
  EXPECT_ERROR(rlx_supported_targets(NULL), RLX_INVALID_ARGUMENT,
               "rlx_supported_targets");
  EXPECT_ERROR(rlx_active_target(NULL), RLX_INVALID_ARGUMENT,
               "rlx_active_target");
  EXPECT_ERROR(rlx_dispatched_target(NULL), RLX_INVALID_ARGUMENT,
               "rlx_dispatched_target");

  active = ActiveTarget();
  CHECK(active != NULL && ListHas(supported, active));

  /* Every supported target can be forced, and is compiled. */
  for (p = supported; p != NULL && *p != '\0';) {
    const char* comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    CHECK(len < sizeof(name));
    memcpy(name, p, len);
    name[len] = '\0';
    if (first[0] == '\0') memcpy(first, name, len + 1);
    CHECK(ListHas(compiled, name));
    CHECK(rlx_force_target(name) == RLX_OK);
    active = ActiveTarget();
    CHECK(active != NULL && strcmp(active, name) == 0);
    /* The dispatch reaches that target's code, and the name is the same
     * static string as rlx_active_target's. */
    CHECK(DispatchedTarget() == active);
    p = comma ? comma + 1 : NULL;
  }

  /* NULL and "" return to the automatic choice: the best supported. */
  CHECK(rlx_force_target(NULL) == RLX_OK);
  active = ActiveTarget();
  CHECK(active != NULL && strcmp(active, first) == 0);
  CHECK(rlx_force_target(first) == RLX_OK);
  CHECK(rlx_force_target("") == RLX_OK);
  CHECK(strcmp(ActiveTarget(), first) == 0);

  /* An unknown name: invalid, listing the supported targets, and the active
   * target unchanged. */
  EXPECT_ERROR(rlx_force_target("AVX9000"), RLX_INVALID_ARGUMENT,
               "rlx_force_target");
  CHECK(strstr(rlx_last_error(), "AVX9000") != NULL);
  CHECK(strstr(rlx_last_error(), first) != NULL);
  CHECK(strcmp(ActiveTarget(), first) == 0);
  /* Compiled but not runnable here, where there is such a target. */
  for (p = compiled; p != NULL && *p != '\0';) {
    const char* comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    memcpy(name, p, len);
    name[len] = '\0';
    if (!ListHas(supported, name)) {
      EXPECT_ERROR(rlx_force_target(name), RLX_INVALID_ARGUMENT,
                   "rlx_force_target");
      CHECK(strstr(rlx_last_error(), "not supported") != NULL);
      CHECK(strcmp(ActiveTarget(), first) == 0);
    }
    p = comma ? comma + 1 : NULL;
  }
}

/* Run with RLX_ATTN_TARGET=NOT_A_TARGET: the first query fails cleanly. */
static int RunEnvTarget(void) {
  const char* const sentinel = "unchanged";
  const char* active = sentinel;
  float mask[4];
  EXPECT_ERROR(rlx_active_target(&active), RLX_INVALID_ARGUMENT,
               "rlx_active_target");
  CHECK(active == sentinel);
  EXPECT_ERROR(rlx_dispatched_target(&active), RLX_INVALID_ARGUMENT,
               "rlx_dispatched_target");
  CHECK(active == sentinel);
  CHECK(strstr(rlx_last_error(), "RLX_ATTN_TARGET") != NULL);
  CHECK(strstr(rlx_last_error(), "NOT_A_TARGET") != NULL);
  /* A kernel call reports it as its own error, writing nothing. */
  mask[0] = mask[1] = mask[2] = mask[3] = 7.0f;
  EXPECT_ERROR(rlx_fill_bucket_decode_mask(mask, 4, 1, 3, 0),
               RLX_INVALID_ARGUMENT, "rlx_fill_bucket_decode_mask");
  CHECK(mask[0] == 7.0f && mask[3] == 7.0f);
  /* Forcing a target repairs it. */
  CHECK(rlx_force_target("") == RLX_OK);
  CHECK(ActiveTarget() != NULL);
  CHECK(rlx_fill_bucket_decode_mask(mask, 4, 1, 3, 0) == RLX_OK);
  CHECK(IsDecodeMask(mask, 4, 0, 1, 3));
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Score kernels                                                            */

static rlx_score_view F32View(float* data, size_t batch, size_t heads,
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

static rlx_mask_spec Mask(rlx_mask_kind kind) {
  rlx_mask_spec m;
  rlx_mask_spec_init(&m);
  m.kind = kind;
  return m;
}

static rlx_mask_spec DecodeMask(size_t past, size_t upper, size_t window) {
  rlx_mask_spec m = Mask(RLX_MASK_DECODE);
  m.past = past;
  m.upper = upper;
  m.window = window;
  return m;
}

static rlx_mask_spec DenseMask(rlx_mask_kind kind, const void* data,
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

static int KeptIs(const rlx_kept_intervals* k, size_t count, size_t b0,
                  size_t e0, size_t b1, size_t e1) {
  if (k->count != count) return 0;
  if (count >= 1 && (k->intervals[0].begin != b0 || k->intervals[0].end != e0))
    return 0;
  if (count >= 2 && (k->intervals[1].begin != b1 || k->intervals[1].end != e1))
    return 0;
  return 1;
}

/* The third interval of *k is [b2, e2). */
static int ThirdIs(const rlx_kept_intervals* k, size_t b2, size_t e2) {
  return k->count == 3 && k->intervals[2].begin == b2 &&
         k->intervals[2].end == e2;
}

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

/* ------------------------------------------------------------------------ */
/* Mask rules over logical positions, growing structs, softmax extensions   */

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

/* A struct_size the library does not know is rejected before anything is
 * read or written: 0 (zeroed, never initialised), a smaller one and a
 * newer header's larger one. */
static void TestGrowingStructs(void) {
  float s[8];
  float before[8];
  size_t i;
  rlx_score_view v = F32View(s, 1, 1, 1, 8);
  rlx_mask_spec m;
  rlx_softmax_options o;
  rlx_kept_intervals kept;
  rlx_kept_intervals kept_before;
  const size_t bad_sizes[3] = {0, sizeof(size_t), sizeof(rlx_mask_spec) + 8};

  rlx_softmax_options_init(&o);
  CHECK(o.struct_size == sizeof(o) && o.scale == 1.0f && o.softcap == 0.0f &&
        o.zero_masked && o.sink_logits == NULL && o.row_lse == NULL);
  rlx_mask_spec_init(&m);
  CHECK(m.struct_size == sizeof(m) && m.kind == RLX_MASK_NONE &&
        m.dense == RLX_DENSE_NONE && m.window_keys == 0 &&
        m.k_position == NULL);

  for (i = 0; i < 8; ++i) s[i] = (float)i;
  memcpy(before, s, sizeof(s));
  memset(&kept, 0x3C, sizeof(kept));
  memcpy(&kept_before, &kept, sizeof(kept));
  for (i = 0; i < 3; ++i) {
    char text[64];
    m = Mask(RLX_MASK_CAUSAL);
    m.struct_size = bad_sizes[i];
    snprintf(text, sizeof(text), "mask->struct_size %zu", bad_sizes[i]);
    EXPECT_ERROR(rlx_apply_mask(&v, &m, NULL, 0.0f), RLX_INVALID_ARGUMENT,
                 "rlx_apply_mask");
    CHECK(strstr(rlx_last_error(), text) != NULL);
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, NULL, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    EXPECT_ERROR(rlx_kept_keys(&m, 0, 0, 1, 8, &kept), RLX_INVALID_ARGUMENT,
                 "rlx_kept_keys");
    m = Mask(RLX_MASK_CAUSAL);
    rlx_softmax_options_init(&o);
    o.struct_size = bad_sizes[i];
    snprintf(text, sizeof(text), "options->struct_size %zu", bad_sizes[i]);
    EXPECT_ERROR(rlx_masked_softmax(&v, &m, &o, NULL), RLX_INVALID_ARGUMENT,
                 "rlx_masked_softmax");
    CHECK(strstr(rlx_last_error(), text) != NULL);
    EXPECT_ERROR(rlx_masked_softmax_into(&v, &v, &m, &o, NULL),
                 RLX_INVALID_ARGUMENT, "rlx_masked_softmax_into");
  }
  CHECK(BitsEqual(s, before, sizeof(s)));
  CHECK(BitsEqual(&kept, &kept_before, sizeof(kept)));
}

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

/* ------------------------------------------------------------------------ */
/* Block masks and split rows                                               */

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

/* ------------------------------------------------------------------------ */
/* Shapes and strides that no tensor can have                               */

/* The call failed with RLX_INVALID_ARGUMENT, the message names `function`
 * and contains `detail` (the C++ function and the values). */
static void ExpectRejected(rlx_status got, const char* function,
                           const char* detail, int line) {
  ExpectError(got, RLX_INVALID_ARGUMENT, function, line);
  ++g_checks;
  if (strstr(rlx_last_error(), detail) == NULL) {
    ++g_failures;
    fprintf(stderr, "%s:%d: want a message containing \"%s\", got \"%s\"\n",
            __FILE__, line, detail, rlx_last_error());
  }
}
#define EXPECT_REJECTED(call, function, detail) \
  ExpectRejected((call), (function), (detail), __LINE__)

/* A 64-float buffer described as tensors whose element count or last byte
 * offset exceeds PTRDIFF_MAX: offsets into them would wrap (a crash, or a
 * silent no-op over 0 rows). Each call is rejected and writes nothing. */
static void TestImpossibleShapes(void) {
  const size_t k2p61 = (size_t)1 << 61, k2p62 = (size_t)1 << 62;
  const size_t k2p63 = (size_t)1 << 63;
  float s[64];
  float before[64];
  float m[64];
  rlx_score_view v;
  rlx_mask_spec none;
  rlx_mask_spec keep;
  rlx_kept_intervals kept;
  rlx_kept_intervals kept_before;
  size_t i;

  for (i = 0; i < 64; ++i) s[i] = m[i] = (float)i;
  memcpy(before, s, sizeof(s));
  rlx_mask_spec_init(&none);
  memset(&v, 0, sizeof(v));
  v.data = s;
  v.type = RLX_SCORE_F32;

  /* [2, 1, 1, 8] with a batch stride of 2^61 floats: batch 1 at byte 2^63. */
  v.shape.batch = 2;
  v.shape.heads = 1;
  v.shape.q_len = 1;
  v.shape.k_len = 8;
  v.strides.batch = k2p61;
  v.strides.head = 8;
  v.strides.row = 8;
  EXPECT_REJECTED(rlx_masked_softmax(&v, &none, NULL, NULL),
                  "rlx_masked_softmax",
                  "masked_softmax: scores shape [2, 1, 1, 8] at strides "
                  "[2305843009213693952, 8, 8] spans more than PTRDIFF_MAX "
                  "(9223372036854775807) bytes of 4-byte elements");
  CHECK(BitsEqual(s, before, sizeof(s)));
  EXPECT_REJECTED(rlx_apply_mask(&v, &none, NULL, -INFINITY), "rlx_apply_mask",
                  "apply_mask: scores shape [2, 1, 1, 8] at strides "
                  "[2305843009213693952, 8, 8] spans more than");
  CHECK(BitsEqual(s, before, sizeof(s)));

  /* [1, 1, 1, 2^63] with a row stride of 2^63. */
  v.shape.batch = 1;
  v.shape.k_len = k2p63;
  v.strides.batch = v.strides.head = v.strides.row = k2p63;
  EXPECT_REJECTED(rlx_masked_softmax(&v, &none, NULL, NULL),
                  "rlx_masked_softmax",
                  "masked_softmax: scores shape [1, 1, 1, 9223372036854775808] "
                  "has more than PTRDIFF_MAX (9223372036854775807) elements");
  CHECK(BitsEqual(s, before, sizeof(s)));

  /* [2^62, 8, 1, 8]: batch * heads wraps to 0 rows; [2^62 + 1, 4, 1, 8]
   * wraps to 4 rows. Contiguous strides wrap too. */
  v.shape.batch = k2p62;
  v.shape.heads = 8;
  v.shape.k_len = 8;
  v.strides = rlx_contiguous_strides(v.shape);
  EXPECT_REJECTED(rlx_masked_softmax(&v, &none, NULL, NULL),
                  "rlx_masked_softmax",
                  "masked_softmax: scores shape [4611686018427387904, 8, 1, 8] "
                  "has more than PTRDIFF_MAX (9223372036854775807) elements");
  CHECK(BitsEqual(s, before, sizeof(s)));
  v.shape.batch = k2p62 + 1;
  v.shape.heads = 4;
  v.strides = rlx_contiguous_strides(v.shape);
  EXPECT_REJECTED(rlx_masked_softmax_into(&v, &v, &none, NULL, NULL),
                  "rlx_masked_softmax_into",
                  "masked_softmax: in shape [4611686018427387905, 4, 1, 8] has "
                  "more than PTRDIFF_MAX");
  CHECK(BitsEqual(s, before, sizeof(s)));

  /* A dense mask whose batch stride puts batch 1 at byte 2^63, over valid
   * scores [2, 1, 1, 8]. */
  v.shape.batch = 2;
  v.shape.heads = 1;
  v.strides = rlx_contiguous_strides(v.shape);
  rlx_mask_spec_init(&keep);
  keep.kind = RLX_MASK_KEEP_F32;
  keep.data = m;
  keep.shape = v.shape;
  keep.strides = v.strides;
  keep.strides.batch = k2p61;
  EXPECT_REJECTED(rlx_masked_softmax(&v, &keep, NULL, NULL),
                  "rlx_masked_softmax",
                  "masked_softmax: mask shape [2, 1, 1, 8] at strides "
                  "[2305843009213693952, 8, 8] spans more than PTRDIFF_MAX "
                  "(9223372036854775807) bytes of 4-byte elements");
  CHECK(BitsEqual(s, before, sizeof(s)));
  keep.kind = RLX_MASK_BIAS;
  EXPECT_REJECTED(rlx_apply_mask(&v, &keep, NULL, -INFINITY), "rlx_apply_mask",
                  "apply_mask: mask shape [2, 1, 1, 8] at strides");
  CHECK(BitsEqual(s, before, sizeof(s)));
  memset(&kept, 0x5A, sizeof(kept));
  memcpy(&kept_before, &kept, sizeof(kept));
  EXPECT_REJECTED(rlx_kept_keys(&keep, 1, 0, 1, 8, &kept), "rlx_kept_keys",
                  "kept_keys: mask shape [2, 1, 1, 8] at strides");
  CHECK(BitsEqual(&kept, &kept_before, sizeof(kept)));
  EXPECT_REJECTED(rlx_kept_keys(&none, 0, 0, 1, k2p63, &kept), "rlx_kept_keys",
                  "kept_keys: batch_index 0, q_len 1 and k_len "
                  "9223372036854775808 describe a tensor of more than "
                  "PTRDIFF_MAX");
  CHECK(BitsEqual(&kept, &kept_before, sizeof(kept)));

  /* A decode mask of 2^62 + 1 floats is more than PTRDIFF_MAX bytes. */
  EXPECT_REJECTED(rlx_fill_bucket_decode_mask(m, k2p62 + 1, 0, k2p62, 0),
                  "rlx_fill_bucket_decode_mask",
                  "fill_bucket_decode_mask: upper 4611686018427387904 asks for "
                  "a mask of upper + 1 floats, more than PTRDIFF_MAX");
  for (i = 0; i < 64; ++i) CHECK(m[i] == (float)i);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "env-target") == 0) {
    RunEnvTarget();
  } else {
    /* Nothing has failed on this thread yet. */
    CHECK(strcmp(rlx_last_error(), "") == 0);
    TestPowerOfTwo();
    TestGeometric();
    TestCustomLadderAndRouting();
    TestBucketedCache();
    TestFillDecodeMask();
    TestEveryBucketOfEveryLadderMasksItsPadding();
    TestTargets();
    TestKeptKeys();
    TestApplyMask();
    TestMaskedSoftmax();
    TestMaskRules();
    TestGrowingStructs();
    TestSoftmaxExtensions();
    TestBadSoftmaxOptions();
    TestAlibiSlopes();
    TestClassifyBlocks();
    TestMergeSoftmaxParts();
    TestSplitSoftmaxParts();
    TestImpossibleShapes();
  }
  printf("c_api_test: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
