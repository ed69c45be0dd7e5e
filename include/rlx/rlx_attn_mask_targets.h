/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of SIMD targets (rlx/targets.h): which are compiled in,
 * supported and active, and forcing one.
 *
 * One part of the C API: rlx/rlx_attn_mask.h includes every part, and its
 * opening comment states the rules on errors and threads that hold for all
 * of them. Each part may also be included alone. */
#ifndef RLX_RLX_ATTN_MASK_TARGETS_H_
#define RLX_RLX_ATTN_MASK_TARGETS_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* SIMD targets (rlx/targets.h)                                             */
/*
 * Names are Highway's: "AVX3_DL", "AVX3", "AVX2", "SSE4", "SCALAR"/"EMU128"
 * on x86; "SVE2_128", "SVE_256", "SVE2", "SVE", "NEON" on Arm. */

/* Writes to *names the targets compiled into this library, best first, as
 * one comma-separated string without spaces (e.g.
 * "AVX3_DL,AVX3,AVX2,SSE4,SCALAR"). Static storage: valid for the life of
 * the process, never free it; every call writes the same pointer. Requires
 * names != NULL; RLX_OUT_OF_MEMORY if building the string failed. */
RLX_ATTN_MASK_API rlx_status rlx_compiled_targets(const char** names);

/* The compiled targets this CPU can run, best first, in the same form.
 * Never empty: the portable fallback runs everywhere. */
RLX_ATTN_MASK_API rlx_status rlx_supported_targets(const char** names);

/* Writes to *name the target the next kernel call dispatches to (static
 * storage, never free it). The first call chooses it: RLX_ATTN_TARGET from
 * the environment if set and non-empty, else the best supported target.
 * RLX_INVALID_ARGUMENT, writing nothing, if RLX_ATTN_TARGET names a target
 * that is unknown or not supported here, or name is NULL. */
RLX_ATTN_MASK_API rlx_status rlx_active_target(const char** name);

/* Writes to *name the target whose code the next kernel call runs, as that
 * code reports it itself (a function compiled once per target, reached
 * through the kernels' dispatch table); static storage, never free it. It
 * equals rlx_active_target's unless the dispatch is broken, which is what
 * an embedder's self-test can check. Fails as rlx_active_target does. */
RLX_ATTN_MASK_API rlx_status rlx_dispatched_target(const char** name);

/* Makes every later kernel call use the target `name`; NULL or "" returns to
 * the automatic choice (the best supported target). An unknown or
 * unsupported name is RLX_INVALID_ARGUMENT, with a message that lists the
 * supported targets; the active target is unchanged then. */
RLX_ATTN_MASK_API rlx_status rlx_force_target(const char* name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLX_RLX_ATTN_MASK_TARGETS_H_ */
