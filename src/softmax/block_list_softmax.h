// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows of a mask with a block list,
// dispatched to the active target (src/softmax/block_list_softmax-inl.h);
// the row loops' entry routes such masks here (RowPath::kBlockList). Arguments
// are checked by the caller (score_kernels.cc, softmax_split.cc).
#ifndef RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_H_
#define RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_H_

#include "rlx/score_kernels.h"
#include "src/softmax/softmax_rows.h"

namespace rlx::detail {

// `part` null: whole rows; else step 1 of split rows (RowPart).
void BlockListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                          const MaskSpec& mask, const SoftmaxOptions& options,
                          RowRange rows, const RowPart* part);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_BLOCK_LIST_SOFTMAX_H_
