// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target SoftmaxRows of src/softmax/softmax_rows-inl.h and its dispatch
// (src/softmax/softmax_rows.h).
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#include "src/softmax/softmax_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/softmax_rows.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/softmax_rows-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/softmax/block_list_softmax.h"
#include "src/softmax/key_list_softmax.h"

namespace rlx {
HWY_EXPORT(SoftmaxRows);

void detail::SoftmaxRows(const ScoreView& in, const ScoreView& out,
                         const MaskSpec& mask, const SoftmaxOptions& options,
                         RowRange rows, const RowPart* part) {
  // A key list: its rows read and write their listed keys alone
  // (src/softmax/key_list_softmax-inl.h). Split rows reject key lists.
  if (mask.key_indices != nullptr && part == nullptr) {
    return KeyListSoftmaxRows(in, out, mask, options, rows);
  }
  // A block list: its rows walk their listed blocks alone.
  if (mask.block_list.num_blocks != nullptr) {
    return BlockListSoftmaxRows(in, out, mask, options, rows, part);
  }
  RLX_DYNAMIC_DISPATCH_NEAREST(SoftmaxRows)(in, out, mask, options, rows, part);
}
}  // namespace rlx
#endif  // HWY_ONCE
