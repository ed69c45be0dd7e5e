/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of ladders chosen from traffic, compiled as C99: rlx_ladder_fit
 * and rlx_ladder_fit_counts with each cost model (a custom cost through a
 * function pointer and user data), rlx_ladder_capped,
 * rlx_ladder_least_max_padding, and every error: status, message naming
 * the function and the values, outputs untouched. Exit status 0 when all
 * checks pass. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"

static int failures = 0;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, \
              __LINE__, #cond, rlx_last_error());                             \
      ++failures;                                                             \
    }                                                                         \
  } while (0)

/* The extents (bucket uppers) of `ladder` into `extents`; returns how many,
 * or 0 when a call fails. */
static size_t Extents(const rlx_ladder* ladder, uint64_t* extents,
                      size_t capacity) {
  size_t n = 0;
  size_t i;
  if (rlx_ladder_size(ladder, &n) != RLX_OK || n > capacity) return 0;
  for (i = 0; i < n; ++i) {
    uint64_t start = 0, end = 0;
    if (rlx_ladder_bucket(ladder, i, &start, &end) != RLX_OK) return 0;
    extents[i] = end - 1;
  }
  return n;
}

/* A caller's cost: a kernel that works in tiles of `*tile` keys. Counts its
 * calls through the same user data. */
typedef struct {
  uint64_t tile;
  int calls;
} TileCost;

static double TiledCost(uint64_t upper, void* user_data) {
  TileCost* t = (TileCost*)user_data;
  ++t->calls;
  return (double)((upper + t->tile - 1) / t->tile * t->tile);
}

static double Decreasing(uint64_t upper, void* user_data) {
  (void)user_data;
  return 1000.0 - (double)upper;
}

static int Contains(const char* haystack, const char* needle) {
  return strstr(haystack, needle) != NULL;
}

static void TestFit(void) {
  /* 3 x75, 12 x9, 40 x2, 100 x5 as raw lengths and as pairs. */
  uint64_t lengths[91];
  const uint64_t pair_lengths[] = {100, 3, 40, 3, 100, 12};
  const uint64_t pair_counts[] = {1, 50, 2, 25, 4, 9};
  size_t i, n = 0;
  rlx_ladder_cost decode = {RLX_LADDER_COST_DECODE, NULL, NULL};
  rlx_ladder_cost prefill = {RLX_LADDER_COST_PREFILL, NULL, NULL};
  rlx_ladder* ladder = NULL;
  rlx_ladder* from_pairs = NULL;
  uint64_t extents[8], extents2[8];
  size_t count, count2;
  for (i = 0; i < 75; ++i) lengths[n++] = 3;
  for (i = 0; i < 9; ++i) lengths[n++] = 12;
  for (i = 0; i < 2; ++i) lengths[n++] = 40;
  for (i = 0; i < 5; ++i) lengths[n++] = 100;

  /* Two buckets, decode: {3, 12} at 12 and {40, 100} at 100 cost 1708,
   * the least of the three splits (1825 and 3940 otherwise). */
  CHECK(rlx_ladder_fit(lengths, n, 2, &decode, &ladder) == RLX_OK);
  count = Extents(ladder, extents, 8);
  CHECK(count == 2 && extents[0] == 12 && extents[1] == 100);
  CHECK(rlx_ladder_fit_counts(pair_lengths, pair_counts, 6, 2, &decode,
                              &from_pairs) == RLX_OK);
  count2 = Extents(from_pairs, extents2, 8);
  CHECK(count2 == count && memcmp(extents, extents2, count * 8) == 0);
  rlx_ladder_free(ladder);
  rlx_ladder_free(from_pairs);

  /* Enough buckets: every distinct length is an extent. */
  CHECK(rlx_ladder_fit(lengths, n, 10, &prefill, &ladder) == RLX_OK);
  count = Extents(ladder, extents, 8);
  CHECK(count == 4 && extents[0] == 3 && extents[1] == 12 && extents[2] == 40 &&
        extents[3] == 100);
  rlx_ladder_free(ladder);

  /* A custom cost in tiles of 16: 3 and 12 cost the same tile, so one
   * bucket takes both for free; called once per distinct length. */
  {
    TileCost tile = {16, 0};
    rlx_ladder_cost custom = {RLX_LADDER_COST_CUSTOM, TiledCost, &tile};
    CHECK(rlx_ladder_fit(lengths, n, 10, &custom, &ladder) == RLX_OK);
    count = Extents(ladder, extents, 8);
    CHECK(count == 3 && extents[0] == 12 && extents[1] == 40 &&
          extents[2] == 100);
    CHECK(tile.calls == 4);
    rlx_ladder_free(ladder);
  }
}

static void TestFitErrors(void) {
  const uint64_t lengths[] = {4, 0, 8};
  const uint64_t counts[] = {1, 1, 0};
  rlx_ladder_cost decode = {RLX_LADDER_COST_DECODE, NULL, NULL};
  rlx_ladder_cost no_fn = {RLX_LADDER_COST_CUSTOM, NULL, NULL};
  rlx_ladder_cost bad_model = {(rlx_ladder_cost_model)7, NULL, NULL};
  rlx_ladder_cost decreasing = {RLX_LADDER_COST_CUSTOM, Decreasing, NULL};
  rlx_ladder* sentinel = (rlx_ladder*)&failures; /* never dereferenced */
  rlx_ladder* out = sentinel;

  CHECK(rlx_ladder_fit(lengths, 1, 0, &decode, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "rlx_ladder_fit: ") &&
        Contains(rlx_last_error(), "max_buckets=0"));
  CHECK(rlx_ladder_fit(lengths, 0, 4, &decode, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "no lengths"));
  CHECK(rlx_ladder_fit(lengths, 3, 4, &decode, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "lengths[1] is 0"));
  CHECK(rlx_ladder_fit(NULL, 3, 4, &decode, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "rlx_ladder_fit: lengths is NULL (n=3"));
  CHECK(rlx_ladder_fit(lengths, 1, 4, NULL, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "cost is NULL"));
  CHECK(rlx_ladder_fit(lengths, 1, 4, &no_fn, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "cost->fn is NULL"));
  CHECK(rlx_ladder_fit(lengths, 1, 4, &bad_model, &out) ==
        RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "cost->model"));
  {
    const uint64_t two[] = {4, 8};
    CHECK(rlx_ladder_fit(two, 2, 4, &decreasing, &out) == RLX_INVALID_ARGUMENT);
    CHECK(Contains(rlx_last_error(), "cost(8) = 992 < cost(4) = 996"));
  }
  CHECK(rlx_ladder_fit(lengths, 1, 4, &decode, NULL) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "out is NULL"));
  CHECK(rlx_ladder_fit_counts(lengths, counts, 1, 4, &decode, &out) == RLX_OK);
  rlx_ladder_free(out);
  out = sentinel;
  CHECK(rlx_ladder_fit_counts(lengths + 2, counts + 2, 1, 4, &decode, &out) ==
        RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "rlx_ladder_fit_counts: ") &&
        Contains(rlx_last_error(), "counts[0] (length 8) has count 0"));
  CHECK(rlx_ladder_fit_counts(lengths, NULL, 1, 4, &decode, &out) ==
        RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "counts is NULL"));
  CHECK(out == sentinel); /* nothing written by any failing call */
}

static void TestCapped(void) {
  rlx_ladder* ladder = NULL;
  rlx_ladder* sentinel = (rlx_ladder*)&failures;
  rlx_ladder* out = sentinel;
  uint64_t extents[64];
  double p = -1.0;
  size_t count;
  /* 0.3 is 3/10 exactly: the bucket starting at 20 reaches 26. */
  CHECK(rlx_ladder_capped(26, 0.3, &ladder) == RLX_OK);
  count = Extents(ladder, extents, 64);
  CHECK(count == 9 && extents[7] == 19 && extents[8] == 26);
  rlx_ladder_free(ladder);

  CHECK(rlx_ladder_least_max_padding(26, 9, &p) == RLX_OK);
  CHECK(p > 0 && p <= 0.3);
  CHECK(rlx_ladder_capped(26, p, &ladder) == RLX_OK);
  count = Extents(ladder, extents, 64);
  CHECK(count <= 9);
  rlx_ladder_free(ladder);
  CHECK(rlx_ladder_capped(26, nextafter(p, 0.0), &ladder) == RLX_OK);
  CHECK(Extents(ladder, extents, 64) > 9);
  rlx_ladder_free(ladder);

  CHECK(rlx_ladder_capped(0, 0.5, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "rlx_ladder_capped: ") &&
        Contains(rlx_last_error(), "max_key=0"));
  CHECK(rlx_ladder_capped(10, -1.0, &out) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "max_padding=-1"));
  CHECK(rlx_ladder_capped(10, 0.5, NULL) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "out is NULL (max_key=10"));
  CHECK(out == sentinel);
  p = -1.0;
  CHECK(rlx_ladder_least_max_padding(10, 0, &p) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "rlx_ladder_least_max_padding: ") &&
        Contains(rlx_last_error(), "max_buckets=0"));
  CHECK(p == -1.0);
  CHECK(rlx_ladder_least_max_padding(10, 2, NULL) == RLX_INVALID_ARGUMENT);
  CHECK(Contains(rlx_last_error(), "max_padding is NULL"));
}

int main(void) {
  TestFit();
  TestFitErrors();
  TestCapped();
  if (failures != 0) {
    fprintf(stderr, "ladder_fit_c_test: %d checks failed\n", failures);
    return 1;
  }
  printf("ladder_fit_c_test: all checks passed\n");
  return 0;
}
