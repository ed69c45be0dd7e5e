// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows, dispatched to the active target;
// arguments are checked by the caller (score_kernels.cc, softmax_split.cc).
//
// Five units compile it (docs/PERFORMANCE.md, "Build cost"):
// src/softmax/row_loop.cc (the row loops, the plain paths and the general
// rows of interval rules and biases) and the four units of
// src/softmax/general_row_units-inl.h (dense keep masks, keep bytes, ALiBi
// over implicit and over explicit key positions). Which code runs a row is
// decided in one place, src/softmax/row_path.h. Every row type runs the
// same f32 passes (src/softmax/softmax_passes-inl.h), so the row type is a
// runtime choice here, not a template parameter.
#ifndef RLX_SRC_SOFTMAX_SOFTMAX_ROWS_H_
#define RLX_SRC_SOFTMAX_SOFTMAX_ROWS_H_

#include "rlx/score_kernels.h"
#include "rlx/softmax_split.h"

namespace rlx::detail {

// Step 1 of a split row (rlx/softmax_split.h): only the keys in `keys` of
// each row, left as exps relative to the part's maximum, with the part's
// statistics in stats[r] instead of a normalisation (and no sink, no
// row_lse). A runtime choice of the row loop: the passes are the same.
struct RowPart {
  KeyInterval keys;
  SoftmaxPartStats* stats;
};

// `part` null: whole rows (masked_softmax).
void SoftmaxRows(const ScoreView& in, const ScoreView& out,
                 const MaskSpec& mask, const SoftmaxOptions& options,
                 RowRange rows, const RowPart* part);

// masked_softmax's argument checks, naming `who` (std::invalid_argument;
// score_kernels.cc): the views (`out` null: in place, the one view named
// "scores"), the mask, the options and the row range.
void CheckSoftmaxCall(const char* who, const ScoreView& in,
                      const ScoreView* out, const MaskSpec& mask,
                      const SoftmaxOptions& options, RowRange rows);

// Throws std::bad_alloc unless this thread's exp buffer serves rows of
// `in` (16-bit rows longer than the stack scratch), so that a failed
// allocation writes nothing.
void ReserveExpBuffer(const ScoreView& in);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_SOFTMAX_ROWS_H_
