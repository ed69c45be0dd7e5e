/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The checks of the C API's test programs (tests/c_api/c_api_*_test.c),
 * C99. CHECK counts a check and reports a failed one without stopping;
 * EXPECT_ERROR checks that a call failed with a status and left a message
 * in rlx_last_error() that starts with the C function's name. Each program
 * ends with ReportChecks: a line `PROGRAM: N checks, M failed`, and its
 * exit status. */
#ifndef RLX_TESTS_C_API_C_API_CHECK_H_
#define RLX_TESTS_C_API_C_API_CHECK_H_

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "rlx/rlx_attn_mask.h"

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
static inline void ExpectError(rlx_status got, rlx_status want,
                               const char* function, const char* file,
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
            file, line, (int)want, function, (int)got,
            message ? message : "(null)");
  }
}
#define EXPECT_ERROR(call, want, function) \
  ExpectError((call), (want), (function), __FILE__, __LINE__)

static inline int BitsEqual(const void* a, const void* b, size_t bytes) {
  return memcmp(a, b, bytes) == 0;
}

/* Prints how many checks ran and failed; the program's exit status. */
static inline int ReportChecks(const char* program) {
  printf("%s: %d checks, %d failed\n", program, g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}

#endif /* RLX_TESTS_C_API_C_API_CHECK_H_ */
