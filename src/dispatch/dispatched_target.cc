// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx::dispatched_target(): each target's code names itself, so a test can
// see which code a dispatch reached rather than which target a variable says
// is active. Compiled with the same Highway options as every kernel, so its
// HWY_EXPORT table has the kernels' layout.
#include <string>

#include "rlx/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/dispatch/dispatched_target.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {

// HWY_TARGET is the target this copy is compiled for.
const char* CompiledTargetName() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/dispatch/dispatch.h"

namespace rlx {

HWY_EXPORT(CompiledTargetName);

std::string dispatched_target() {
  return RLX_DYNAMIC_DISPATCH(CompiledTargetName)();
}

}  // namespace rlx
#endif  // HWY_ONCE
