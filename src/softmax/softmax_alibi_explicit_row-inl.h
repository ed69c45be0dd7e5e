// SPDX-License-Identifier: MIT OR Apache-2.0
// The code of rows with ALiBi over explicit key positions (k_position): the
// keep bytes of their per-element rules, with or without a bias, wrapped by
// the ALiBi term whose distances are read per element. A unit of its own
// (src/softmax/softmax_alibi_explicit_rows.cc). Re-included per target.

#if defined(RLX_SRC_SOFTMAX_ALIBI_EXPLICIT_ROW_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_ALIBI_EXPLICIT_ROW_INL_H_
#undef RLX_SRC_SOFTMAX_ALIBI_EXPLICIT_ROW_INL_H_
#else
#define RLX_SRC_SOFTMAX_ALIBI_EXPLICIT_ROW_INL_H_
#endif

#include <cstdint>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/softmax_row-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Only rows that read keep bytes come here (SoftmaxAlibiRow).
void SoftmaxAlibiExplicitRow(const RowSegments& row, const RowCode& code,
                             detail::RowPrefetch& prefetch) {
  const hn::ScalableTag<float> df;
  const MaskSpec& mask = *code.mask;
  const float neg_slope = -code.options->alibi_slopes[code.i.h];
  const ExplicitKeyDistance distance{
      detail::QueryPosition(mask, code.i.b, code.i.q, code.q_len, code.n),
      mask.k_position + code.i.b * code.n,
      std::numeric_limits<std::size_t>::max()};
  WithRuleSource(code, [&](const auto& inner) {
    using Inner = std::decay_t<decltype(inner)>;
    if constexpr (kIsKeptBytes<Inner>) {
      SoftmaxSegments(
          df, row,
          AlibiSource<Inner, ExplicitKeyDistance>{neg_slope, distance, inner},
          *code.options, code.sink, code.lse, code.part, prefetch);
    }
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
