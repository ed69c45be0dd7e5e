// SPDX-License-Identifier: MIT OR Apache-2.0
// The code of rows with ALiBi over implicit key positions: the rule sources
// of src/softmax/softmax_row-inl.h (WithRuleSource) wrapped by the ALiBi term.
// A unit of its own (src/softmax/softmax_alibi_rows.cc): with the rest, one
// unit took over a minute to compile. Re-included per target.

#if defined(RLX_SRC_SOFTMAX_ALIBI_ROW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_ALIBI_ROW_INL_H_
#undef RLX_SRC_SOFTMAX_ALIBI_ROW_INL_H_
#else
#define RLX_SRC_SOFTMAX_ALIBI_ROW_INL_H_
#endif

#include <type_traits>

#include "hwy/highway.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/softmax_row-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ALiBi wraps the row's source: its term comes after the transform and
// before the bias or keep decision of the rule source. Rows with explicit
// key positions take their distances per element, in a unit of their own
// (src/softmax/softmax_alibi_explicit_row-inl.h).
void SoftmaxAlibiRow(const RowSegments& row, const RowCode& code,
                     detail::RowPrefetch& prefetch) {
  if (code.read_bytes && code.rules->explicit_keys) {
    return SoftmaxAlibiExplicitRow(row, code, prefetch);
  }
  const hn::ScalableTag<float> df;
  const float neg_slope = -code.options->alibi_slopes[code.i.h];
  const double p = static_cast<double>(detail::QueryPosition(
      *code.mask, code.i.b, code.i.q, code.q_len, code.n));
  WithRuleSource(code, [&](const auto& inner) {
    using Inner = std::decay_t<decltype(inner)>;
    SoftmaxSegments(
        df, row,
        AlibiSource<Inner, ImplicitKeyDistance>{neg_slope, {p, p}, inner},
        *code.options, code.sink, code.lse, code.part, prefetch);
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
