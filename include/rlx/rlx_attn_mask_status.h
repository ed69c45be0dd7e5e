/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API's status codes (rlx_status) and the message of the last failing
 * call (rlx_last_error).
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_STATUS_H_
#define RLX_RLX_ATTN_MASK_STATUS_H_

#include <rlx/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status and errors                                                        */

typedef enum {
  RLX_OK = 0,
  RLX_INVALID_ARGUMENT = 1, /* rejected before anything was written */
  RLX_OUT_OF_MEMORY = 2,    /* an allocation failed or was too large */
  RLX_INTERNAL_ERROR = 3    /* a bug in the library: please report it */
} rlx_status;

/* The message of this thread's most recent failing call, "" if none has
 * failed yet. Successful calls leave it alone. The pointer stays valid until
 * the next failing call on the same thread (or the thread's exit); never
 * free it. Messages longer than 1023 bytes are truncated. */
RLX_ATTN_MASK_API const char* rlx_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_STATUS_H_ */
