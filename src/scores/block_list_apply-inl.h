// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask over rows of a mask with a block list (src/mask/block_list.h):
// keys of no listed block become the fill value (and are not read); a full
// block's keys keep their score plus the bias, if any (the fill where they
// are not valid or in another segment); a partial block's keys go through
// the whole formula. Re-included per target by score_kernels.cc; arguments
// are validated there.

#if defined(RLX_SRC_BLOCK_LIST_APPLY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_BLOCK_LIST_APPLY_INL_H_
#undef RLX_SRC_BLOCK_LIST_APPLY_INL_H_
#else
#define RLX_SRC_BLOCK_LIST_APPLY_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/block_list.h"
#include "src/mask/mask_rows.h"
#include "src/mask/mask_sources-inl.h"
#include "src/scores/apply_mask-inl.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <ScoreType kType>
void ApplyBlockListRows(const ScoreView& scores, const MaskSpec& mask,
                        RowRange rows, float fill_value) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = scores.shape;
  const std::size_t n = shape.k_len;
  const Elem<kType> fill = ElemFromF32<kType>(fill_value);
  auto* base = static_cast<Elem<kType>*>(scores.data);
  const detail::Rules rules = detail::RulesOf(mask);
  const BlockList& list = mask.block_list;
  const bool full_bytes = detail::FullBlocksPerElement(rules);
  const bool bias = rules.dense == DenseKind::kBias;
  // One tile of a block's keep bytes at a time (on the stack).
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    Elem<kType>* HWY_RESTRICT s =
        base + detail::RowOffset(shape, scores.strides, i);
    const float* row_bias =
        bias ? static_cast<const float*>(mask.data) +
                   detail::RowOffset(mask.shape, mask.strides, i)
             : nullptr;
    const detail::BlockListRow row =
        detail::BlockListRowOf(list, i.b, i.h, i.q);
    detail::ForEachUnlistedRun(list, row, n,
                               [&](std::size_t begin, std::size_t end) {
                                 FillRun<kType>(s, begin, end, fill);
                               });
    const KeptKeys rule_kept =
        row.partial_count > 0
            ? detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n)
            : KeptKeys{};
    // The bias first (a key it lands on and the mask masks is filled next),
    // then the keep bytes where the block's keys need them.
    const auto apply = [&](const std::int32_t* idx, std::size_t count,
                           bool full) {
      for (std::size_t e = 0; e < count; ++e) {
        const KeyInterval keys = detail::KeyBlockOf(list, idx[e], n);
        if (bias) {
          ApplyBiasRow<kType>(df, BiasSource{row_bias + keys.begin},
                              s + keys.begin, keys.size());
        }
        if (full && !full_bytes) continue;
        for (std::size_t t = keys.begin; t < keys.end; t += kKeepTileKeys) {
          const std::size_t end = std::min(keys.end, t + kKeepTileKeys);
          if (full) {
            detail::FullBlockKeepBytes(mask, rules, i, shape.q_len, n, t, end,
                                       keep_bytes);
          } else {
            detail::PartialBlockKeepBytes(mask, rules, i, shape.q_len, n,
                                          rule_kept, t, end, keep_bytes);
          }
          ApplyKeepRow<kType>(df, KeepU8Source{keep_bytes}, s + t, end - t,
                              fill);
        }
      }
    };
    apply(row.full, row.full_count, /*full=*/true);
    apply(row.partial, row.partial_count, /*full=*/false);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
