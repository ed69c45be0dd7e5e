/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API, compiled as C99, on success and on every error it documents
 * (tests/c_api/c_api_*_test.c, one program per family). This one: what
 * every function shares: the last error, targets, the struct_size of
 * growing structs, and shapes and strides that no tensor can have. Each
 * rejected call must return its status, write nothing (outputs hold
 * sentinels before the call and are compared after it) and leave a message
 * in rlx_last_error() that starts with the C function's name.
 *
 * Without arguments it runs those checks. `c_api_test env-target` expects
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
#include "tests/c_api/c_api_check.h"
#include "tests/c_api/c_api_masks.h"

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
/* Growing structs                                                          */

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

/* ------------------------------------------------------------------------ */
/* Shapes and strides that no tensor can have                               */

/* The call failed with RLX_INVALID_ARGUMENT, the message names `function`
 * and contains `detail` (the C++ function and the values). */
static void ExpectRejected(rlx_status got, const char* function,
                           const char* detail, int line) {
  ExpectError(got, RLX_INVALID_ARGUMENT, function, __FILE__, line);
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
    TestTargets();
    TestGrowingStructs();
    TestImpossibleShapes();
  }
  return ReportChecks("c_api_test");
}
