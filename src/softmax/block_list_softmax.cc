// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target BlockListSoftmaxRows of src/softmax/block_list_softmax-inl.h
// and its dispatch (src/softmax/block_list_softmax.h).
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#include "src/softmax/block_list_softmax.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/block_list_softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/block_list_softmax-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/softmax/row_path.h"

namespace rlx {
HWY_EXPORT(BlockListSoftmaxRows);

void detail::BlockListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                                  const MaskSpec& mask,
                                  const SoftmaxOptions& options, RowRange rows,
                                  const RowPart* part) {
  CountRowPaths(RowPath::kBlockList, rows.end - rows.begin);
  RLX_DYNAMIC_DISPATCH_NEAREST(BlockListSoftmaxRows)
  (in, out, mask, options, rows, part);
}
}  // namespace rlx
#endif  // HWY_ONCE
