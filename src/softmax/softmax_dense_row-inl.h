// SPDX-License-Identifier: MIT OR Apache-2.0
// The code of rows whose mask is a dense f32 or u8 keep mask alone (no rule,
// no ALiBi): its row read directly per element. A unit of its own
// (src/softmax/softmax_dense_rows.cc), so that no unit takes long to compile.
// Re-included per target.

#if defined(RLX_SRC_SOFTMAX_DENSE_ROW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_DENSE_ROW_INL_H_
#undef RLX_SRC_SOFTMAX_DENSE_ROW_INL_H_
#else
#define RLX_SRC_SOFTMAX_DENSE_ROW_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "src/softmax/softmax_row-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Only dense-only rows of a keep mask come here (SoftmaxRow).
void SoftmaxDenseKeepRow(const RowSegments& row, const RowCode& code,
                         detail::RowPrefetch& prefetch) {
  const hn::ScalableTag<float> df;
  const void* dense = code.mask->data;
  if (code.rules->dense == DenseKind::kKeepU8) {
    SoftmaxSegments(
        df, row, KeepU8Source{static_cast<const std::uint8_t*>(dense) + code.m},
        *code.options, code.sink, code.lse, code.part, prefetch);
  } else {
    SoftmaxSegments(df, row,
                    KeepF32Source{static_cast<const float*>(dense) + code.m},
                    *code.options, code.sink, code.lse, code.part, prefetch);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
