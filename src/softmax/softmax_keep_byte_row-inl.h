// SPDX-License-Identifier: MIT OR Apache-2.0
// The code of rows of per-element rules without ALiBi: their keep bytes,
// alone (with the vector map of src/softmax/softmax_vector_map-inl.h) or under
// a bias. A unit of its own (src/softmax/softmax_keep_byte_rows.cc): with the
// row loop and the bias rows, the map's passes took one unit of the fuzz build
// (clang, ASan, coverage) past 850 MB. Re-included per target.

#if defined(RLX_SRC_SOFTMAX_KEEP_BYTE_ROW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_KEEP_BYTE_ROW_INL_H_
#undef RLX_SRC_SOFTMAX_KEEP_BYTE_ROW_INL_H_
#else
#define RLX_SRC_SOFTMAX_KEEP_BYTE_ROW_INL_H_
#endif

#include "hwy/highway.h"
#include "src/softmax/softmax_row-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Only rows that read keep bytes and take no ALiBi come here (SoftmaxRow).
void SoftmaxKeepByteRow(const RowSegments& row, const RowCode& code,
                        detail::RowPrefetch& prefetch) {
  const hn::ScalableTag<float> df;
  WithKeepByteSource(code, [&](const auto& source) {
    SoftmaxSegments(df, row, source, *code.options, code.sink, code.lse,
                    code.part, prefetch);
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
