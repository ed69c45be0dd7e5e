// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows, dispatched to the active target;
// arguments are checked by the caller (score_kernels.cc).
//
// Four units compile it (docs/PERFORMANCE.md, "Build cost"):
// src/softmax_rows.cc (the row loop, and the rows of rules and biases),
// src/softmax_dense_rows.cc (dense keep masks alone),
// src/softmax_alibi_rows.cc and src/softmax_alibi_explicit_rows.cc (ALiBi
// over implicit and explicit key positions). Every row type runs the same
// f32 passes (src/softmax_row-inl.h), so the row type is a runtime choice
// here, not a template parameter.
#ifndef RLX_SRC_SOFTMAX_ROWS_H_
#define RLX_SRC_SOFTMAX_ROWS_H_

#include "rlx/score_kernels.h"

namespace rlx::detail {

void SoftmaxRows(const ScoreView& in, const ScoreView& out,
                 const MaskSpec& mask, const SoftmaxOptions& options,
                 RowRange rows);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_ROWS_H_
