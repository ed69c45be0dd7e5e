// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows of one row type, dispatched to the
// active target; arguments are checked by the caller (score_kernels.cc).
//
// One translation unit per row type (src/softmax_rows_<type>.cc): a row
// type instantiates the softmax once per mask source (dense parts, rule
// intervals, keep bytes, each with and without ALiBi) and target, which in
// one unit took minutes to compile; split, the units build in parallel.
#ifndef RLX_SRC_SOFTMAX_ROWS_H_
#define RLX_SRC_SOFTMAX_ROWS_H_

#include "rlx/score_kernels.h"

namespace rlx::detail {

void SoftmaxRowsF32(const ScoreView& in, const ScoreView& out,
                    const MaskSpec& mask, const SoftmaxOptions& options,
                    RowRange rows);
void SoftmaxRowsBF16(const ScoreView& in, const ScoreView& out,
                     const MaskSpec& mask, const SoftmaxOptions& options,
                     RowRange rows);
void SoftmaxRowsF16(const ScoreView& in, const ScoreView& out,
                    const MaskSpec& mask, const SoftmaxOptions& options,
                    RowRange rows);

}  // namespace rlx::detail

// The body of src/softmax_rows_<type>.cc, after foreach_target.h: the
// per-target entry point SoftmaxRows<TYPE> (each target's copy of the
// template of src/score_kernels-inl.h) and, once, its dispatch table and
// the dispatching detail::SoftmaxRows<TYPE>.
#define RLX_SOFTMAX_ROWS_PER_TARGET(TYPE)                                  \
  HWY_BEFORE_NAMESPACE();                                                  \
  namespace rlx {                                                          \
  namespace HWY_NAMESPACE {                                                \
  void SoftmaxRows##TYPE(const ScoreView& in, const ScoreView& out,        \
                         const MaskSpec& mask, const SoftmaxOptions& opts, \
                         RowRange rows) {                                  \
    SoftmaxRows<ScoreType::k##TYPE>(in, out, mask, opts, rows);            \
  }                                                                        \
  }                                                                        \
  }                                                                        \
  HWY_AFTER_NAMESPACE()

#define RLX_SOFTMAX_ROWS_EXPORT(TYPE)                                         \
  namespace rlx {                                                             \
  HWY_EXPORT(SoftmaxRows##TYPE);                                              \
  void detail::SoftmaxRows##TYPE(const ScoreView& in, const ScoreView& out,   \
                                 const MaskSpec& mask,                        \
                                 const SoftmaxOptions& opts, RowRange rows) { \
    RLX_DYNAMIC_DISPATCH_NEAREST(SoftmaxRows##TYPE)                           \
    (in, out, mask, opts, rows);                                              \
  }                                                                           \
  }  // namespace rlx

#endif  // RLX_SRC_SOFTMAX_ROWS_H_
