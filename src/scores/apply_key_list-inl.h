// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask over the rows of a mask with a key list: every key a row does
// not list becomes the fill value; its listed keys go through the rest of
// the mask (the rules' intervals, then the per-element parts and the bias
// per key: src/mask/key_list.h). Re-included per target by
// score_kernels.cc; arguments, the key list's slots included, are validated
// there.

#if defined(RLX_SRC_SCORES_APPLY_KEY_LIST_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SCORES_APPLY_KEY_LIST_INL_H_
#undef RLX_SRC_SCORES_APPLY_KEY_LIST_INL_H_
#else
#define RLX_SRC_SCORES_APPLY_KEY_LIST_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/key_list.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/key_list_softmax.h"
#include "src/util/row_convert-inl.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <ScoreType kType>
void ApplyKeyListRowsOf(const ScoreView& scores, const MaskSpec& mask,
                        RowRange rows, float fill_value,
                        const detail::KeyListScratch& sc) {
  const hn::CappedTag<float, 1> d1;
  const Shape4& shape = scores.shape;
  const std::size_t n = shape.k_len;
  const Shape4& ls = mask.key_indices_shape;
  const Elem<kType> fill = ElemFromF32<kType>(fill_value);
  auto* base = static_cast<Elem<kType>*>(scores.data);
  // The listed keys' values, read before the row is filled (in place).
  Elem<kType>* values;
  if constexpr (kType == ScoreType::kF32) {
    values = sc.vals;
  } else {
    values = sc.packed;
  }
  const detail::Rules rules = detail::RulesOf(mask);
  // A bias is added, never a fill: a -inf bias gives -inf, as in the
  // other rows.
  const bool per_key = rules.per_element;
  const bool bias = rules.dense == DenseKind::kBias;
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    Elem<kType>* HWY_RESTRICT s =
        base + detail::RowOffset(shape, scores.strides, i);
    const std::int32_t* slots =
        mask.key_indices + detail::KeyListRowOffset(ls, i);
    const KeptKeys cover =
        detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n);
    const detail::ListedKeyRules key_rules(mask, rules, i, shape.q_len, n);
    // Each listed key's result (a key listed twice gets it twice).
    std::size_t c = 0;
    for (std::size_t j = 0; j < ls.k_len; ++j) {
      if (slots[j] < 0) continue;
      const auto k = static_cast<std::size_t>(slots[j]);
      Elem<kType> v = s[k];
      if (!detail::InKeptKeys(cover, k) ||
          (per_key && !key_rules.KeepByRules(k))) {
        v = fill;
      } else if (bias) {
        // As apply_mask's bias rows: x + bias in f32, -inf for a -inf bias
        // whatever x.
        const float x = hn::GetLane(LoadRowTail<kType>(d1, &v, 1));
        const float b = key_rules.Bias(k);
        StoreRowTail<kType>(
            d1,
            hn::Set(d1,
                    b == -std::numeric_limits<float>::infinity() ? b : x + b),
            &v, 1);
      }
      sc.keys[c] = slots[j];
      values[c++] = v;
    }
    FillRun<kType>(s, 0, n, fill);
    for (std::size_t j = 0; j < c; ++j) s[sc.keys[j]] = values[j];
  }
}

void ApplyKeyList(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                  float fill, const detail::KeyListScratch& scratch) {
  switch (scores.type) {
    case ScoreType::kF32:
      return ApplyKeyListRowsOf<ScoreType::kF32>(scores, mask, rows, fill,
                                                 scratch);
    case ScoreType::kBF16:
      return ApplyKeyListRowsOf<ScoreType::kBF16>(scores, mask, rows, fill,
                                                  scratch);
    case ScoreType::kF16:
      return ApplyKeyListRowsOf<ScoreType::kF16>(scores, mask, rows, fill,
                                                 scratch);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
