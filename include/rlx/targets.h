// SPDX-License-Identifier: MIT OR Apache-2.0
// Which SIMD instruction sets this build carries, which of them the CPU can
// run, and which one the kernels dispatch to. Names are Highway's target
// names: "AVX3_DL", "AVX3", "AVX2", "SSE4", "SCALAR" or "EMU128" on x86;
// "SVE2_128", "SVE_256", "SVE2", "SVE", "NEON" on Arm.
//
// The active target is chosen once, at the first dispatching call (or the
// first call below): the value of the environment variable RLX_ATTN_TARGET if
// it is set and non-empty, otherwise the best supported target.
// force_target() overrides it at any time. Changing the target while another
// thread is inside a kernel is allowed (each call dispatches once, up front)
// but makes which target that call used unspecified.
#ifndef RLX_TARGETS_H_
#define RLX_TARGETS_H_

#include <rlx/export.h>

#include <string>
#include <string_view>
#include <vector>

namespace rlx {

// Targets compiled into this library, best first.
RLX_ATTN_MASK_API std::vector<std::string> compiled_targets();

// Compiled targets this CPU can run, best first. Never empty: the portable
// fallback (SCALAR or EMU128) runs everywhere.
RLX_ATTN_MASK_API std::vector<std::string> supported_targets();

// The target the next kernel call dispatches to. Throws std::invalid_argument
// if RLX_ATTN_TARGET names a target that is unknown or not supported here.
RLX_ATTN_MASK_API std::string active_target();

// The target whose code the next kernel call runs, as that code reports it
// itself: a function compiled once per target, reached through the same
// dispatch table as the kernels. Equals active_target() unless the dispatch
// is broken, which is what tests check it for. Throws like active_target().
RLX_ATTN_MASK_API std::string dispatched_target();

// Makes every later kernel call use `name`; "" returns to automatic choice
// (the best supported target; RLX_ATTN_TARGET is not read again). Throws
// std::invalid_argument, listing the supported targets, if `name` is not one
// of them; the active target is unchanged then.
RLX_ATTN_MASK_API void force_target(std::string_view name);

}  // namespace rlx

#endif  // RLX_TARGETS_H_
