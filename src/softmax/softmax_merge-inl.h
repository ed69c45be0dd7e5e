// SPDX-License-Identifier: MIT OR Apache-2.0
// merge_softmax_parts' per-element work: one part's row scaled in place by
// its factor exp(lse_part - lse_total), in the row type. Re-included per
// target.
//
// The factor is rounded to f32 once and every element is multiplied by it in
// f32 (exact loads, one rounding), then stored rounding to nearest even
// (src/util/row_convert-inl.h): the "one more f32 rounding per probability, and
// once more to a 16-bit type" of rlx/softmax_merge.h.

#if defined(RLX_SRC_SOFTMAX_MERGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_MERGE_INL_H_
#undef RLX_SRC_SOFTMAX_MERGE_INL_H_
#else
#define RLX_SRC_SOFTMAX_MERGE_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "rlx/scores.h"
#include "src/util/row_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <ScoreType kType>
HWY_INLINE void ScaleRowOf(Elem<kType>* HWY_RESTRICT p, std::size_t n,
                           float factor) {
  const hn::ScalableTag<float> df;
  const std::size_t N = hn::Lanes(df);
  const auto f = hn::Set(df, factor);
  std::size_t k = 0;
  for (; k + N <= n; k += N) {
    StoreRow<kType>(df, hn::Mul(LoadRow<kType>(df, p + k), f), p + k);
  }
  if (k < n) {
    StoreRowTail<kType>(df, hn::Mul(LoadRowTail<kType>(df, p + k, n - k), f),
                        p + k, n - k);
  }
}

// n elements of the row type `type` at `row`.
inline void ScaleRow(ScoreType type, void* row, std::size_t n, float factor) {
  switch (type) {
    case ScoreType::kF32:
      return ScaleRowOf<ScoreType::kF32>(static_cast<float*>(row), n, factor);
    case ScoreType::kBF16:
      return ScaleRowOf<ScoreType::kBF16>(static_cast<std::uint16_t*>(row), n,
                                          factor);
    case ScoreType::kF16:
      return ScaleRowOf<ScoreType::kF16>(static_cast<std::uint16_t*>(row), n,
                                         factor);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
