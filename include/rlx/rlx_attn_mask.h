/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C API of rlx-attn-mask: C99, usable from C and through any FFI (Rust,
 * Python ctypes, ...). It mirrors the C++ API (rlx/bucket_ladder.h,
 * rlx/bucketed_cache.h, rlx/attn_mask.h, rlx/targets.h, rlx/scores.h,
 * rlx/score_kernels.h, rlx/block_mask.h, rlx/softmax_merge.h,
 * rlx/softmax_split.h) with plain structs, enums and status codes.
 *
 * This header includes the whole C API. Its declarations live in one part
 * per topic, named after the C++ header it mirrors:
 * rlx/rlx_attn_mask_status.h, _bucket_ladder.h, _ladder_fit.h,
 * _bucketed_cache.h, _decode_mask.h, _targets.h, _scores.h,
 * _score_kernels.h, _block_mask.h, _softmax_merge.h and _softmax_split.h;
 * each may be included alone.
 *
 * Errors. Every function that can fail returns an rlx_status and hands its
 * results back through out-pointers; no return value doubles as an error.
 * No C++ exception ever crosses this API. A failing call writes nothing to
 * its outputs and records a message, retrievable with rlx_last_error(), that
 * starts with the C function's name followed by ": " and names the offending
 * values. Null pointers, bad sizes, unknown enum values and unknown target
 * names are RLX_INVALID_ARGUMENT; so are shapes and strides that no tensor
 * in memory can have (more than PTRDIFF_MAX elements, or a last element
 * beyond byte PTRDIFF_MAX).
 *
 * Threads. Every function may be called from any thread. Ladders are
 * immutable after creation, so one ladder may be shared between threads.
 * The score kernels take row ranges so that a caller can split one call
 * across its own threads; results do not depend on the split. */
#ifndef RLX_RLX_ATTN_MASK_H_
#define RLX_RLX_ATTN_MASK_H_

#include <rlx/export.h>
#include <rlx/rlx_attn_mask_block_mask.h>
#include <rlx/rlx_attn_mask_bucket_ladder.h>
#include <rlx/rlx_attn_mask_bucketed_cache.h>
#include <rlx/rlx_attn_mask_decode_mask.h>
#include <rlx/rlx_attn_mask_ladder_fit.h>
#include <rlx/rlx_attn_mask_score_kernels.h>
#include <rlx/rlx_attn_mask_scores.h>
#include <rlx/rlx_attn_mask_softmax_merge.h>
#include <rlx/rlx_attn_mask_softmax_split.h>
#include <rlx/rlx_attn_mask_status.h>
#include <rlx/rlx_attn_mask_targets.h>
#include <rlx/version.h> /* rlx_version() and the version macros */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#endif /* RLX_RLX_ATTN_MASK_H_ */
