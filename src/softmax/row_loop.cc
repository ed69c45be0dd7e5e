// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target SoftmaxRows of src/softmax/row_loop-inl.h (the row loops,
// the plain paths, the general paths of interval rules and biases) and its
// dispatch (src/softmax/softmax_rows.h).
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#include "src/softmax/softmax_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/row_loop.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/row_loop-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"

namespace rlx {
HWY_EXPORT(SoftmaxRows);

void detail::SoftmaxRows(const ScoreView& in, const ScoreView& out,
                         const MaskSpec& mask, const SoftmaxOptions& options,
                         RowRange rows, const RowPart* part) {
  RLX_DYNAMIC_DISPATCH_NEAREST(SoftmaxRows)(in, out, mask, options, rows, part);
}
}  // namespace rlx
#endif  // HWY_ONCE
