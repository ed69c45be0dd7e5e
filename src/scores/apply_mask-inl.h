// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask over a range of rows: masked keys become the fill value, biases
// are added, kept bits are left untouched. Re-included per target by
// score_kernels.cc; arguments are validated there.

#if defined(RLX_SRC_APPLY_MASK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_APPLY_MASK_INL_H_
#undef RLX_SRC_APPLY_MASK_INL_H_
#else
#define RLX_SRC_APPLY_MASK_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_rows.h"
#include "src/mask/mask_sources-inl.h"
#include "src/mask/position_keep-inl.h"
#include "src/mask/row_keep_bytes.h"
#include "src/util/row_convert-inl.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Kept bits untouched, masked -> fill. 16-bit rows select in the integer
// domain (i32 lanes), so kept values, NaN payloads included, round-trip
// exactly.
template <ScoreType kType, class DF, class Source>
HWY_INLINE void ApplyKeepVector(DF df, const Source& src, std::size_t k,
                                Elem<kType>* HWY_RESTRICT s, Elem<kType> fill) {
  if constexpr (kType == ScoreType::kF32) {
    hn::StoreU(
        hn::IfThenElse(src.Keep(df, k), hn::LoadU(df, s), hn::Set(df, fill)),
        df, s);
  } else {
    const hn::Rebind<std::uint16_t, DF> du16;
    const hn::RebindToSigned<DF> di32;
    const auto bits = hn::PromoteTo(di32, hn::LoadU(du16, s));
    const auto kept = hn::IfThenElse(hn::RebindMask(di32, src.Keep(df, k)),
                                     bits, hn::Set(di32, fill));
    hn::StoreU(hn::DemoteTo(du16, kept), du16, s);
  }
}

template <ScoreType kType, class DF, class Source>
HWY_INLINE void ApplyKeepRow(DF df, const Source& src,
                             Elem<kType>* HWY_RESTRICT s, std::size_t n,
                             Elem<kType> fill) {
  const std::size_t N = hn::Lanes(df);
  std::size_t k = 0;
  for (; k + N <= n; k += N) ApplyKeepVector<kType>(df, src, k, s + k, fill);
  if (k < n) {
    HWY_ALIGN float mask_buffer[kTailVectors * hn::MaxLanes(df)];
    HWY_ALIGN Elem<kType> row_buffer[hn::MaxLanes(df)] = {};
    const std::size_t count = n - k;
    std::memcpy(row_buffer, s + k, count * sizeof(Elem<kType>));
    ApplyKeepVector<kType>(df, src.Tail(df, k, count, mask_buffer), 0,
                           row_buffer, fill);
    std::memcpy(s + k, row_buffer, count * sizeof(Elem<kType>));
  }
}

template <ScoreType kType, class DF>
HWY_INLINE void ApplyBiasRow(DF df, const BiasSource& src,
                             Elem<kType>* HWY_RESTRICT s, std::size_t n) {
  const std::size_t N = hn::Lanes(df);
  std::size_t k = 0;
  for (; k + N <= n; k += N) {
    StoreRow<kType>(df, src.Adjust(df, k, LoadRow<kType>(df, s + k)), s + k);
  }
  if (k < n) {
    HWY_ALIGN float bias_buffer[kTailVectors * hn::MaxLanes(df)];
    const std::size_t count = n - k;
    const auto v = LoadRowTail<kType>(df, s + k, count);
    StoreRowTail<kType>(
        df, src.Tail(df, k, count, bias_buffer).Adjust(df, 0, v), s + k, count);
  }
}

template <ScoreType kType>
void ApplyMaskRows(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                   float fill_value) {
  const hn::ScalableTag<float> df;
  const Shape4& shape = scores.shape;
  const std::size_t n = shape.k_len;
  const Elem<kType> fill = ElemFromF32<kType>(fill_value);
  auto* base = static_cast<Elem<kType>*>(scores.data);
  const detail::Rules rules = detail::RulesOf(mask);
  // The keep bytes of per-element rules, one tile of keys at a time (on the
  // stack: no allocation per call).
  alignas(64) std::uint8_t keep_bytes[kKeepTileKeys];
  detail::RowKeepCache keep_cache;
  const auto* bias = static_cast<const float*>(mask.data);
  detail::RowIndex i = detail::RowIndexOf(shape, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(shape, i)) {
    Elem<kType>* HWY_RESTRICT s =
        base + detail::RowOffset(shape, scores.strides, i);
    const std::size_t m = detail::RowOffset(mask.shape, mask.strides, i);
    if (rules.dense_only) {
      // No rule but a dense f32, u8 or bias part: the whole row, per
      // element.
      switch (rules.dense) {
        case DenseKind::kKeepF32:
          ApplyKeepRow<kType>(
              df, KeepF32Source{static_cast<const float*>(mask.data) + m}, s, n,
              fill);
          continue;
        case DenseKind::kKeepU8:
          ApplyKeepRow<kType>(
              df, KeepU8Source{static_cast<const std::uint8_t*>(mask.data) + m},
              s, n, fill);
          continue;
        case DenseKind::kBias:
          ApplyBiasRow<kType>(df, BiasSource{bias + m}, s, n);
          continue;
        case DenseKind::kKeepBits:  // per element, below
        case DenseKind::kNone:      // not dense_only
          break;
      }
    }
    const KeptKeys kept =
        detail::KeptKeysOf(mask, rules, i.b, i.q, shape.q_len, n);
    FillMasked<kType>(s, WholeRow(n), kept, fill);
    // Rows whose kept keys span one tile take their bytes in one piece
    // (shared by the heads whose bytes coincide); longer ones per tile.
    const bool one_tile = kept.count > 0 && kept.intervals[kept.count - 1].end -
                                                    kept.intervals[0].begin <=
                                                kKeepTileKeys;
    if (rules.per_element && one_tile) {
      detail::RowKeepBytes(mask, rules, i, shape.q_len, n, kept, keep_bytes,
                           kept.intervals[0].begin, &keep_cache,
                           &PositionKeepBytes);
    } else {
      keep_cache.valid = false;
    }
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeyInterval& iv = kept.intervals[j];
      // The bias first: a key it lands on and the rules mask is filled next.
      if (rules.dense == DenseKind::kBias) {
        ApplyBiasRow<kType>(df, BiasSource{bias + m + iv.begin}, s + iv.begin,
                            iv.size());
      }
      if (!rules.per_element) continue;
      for (std::size_t t = iv.begin; t < iv.end; t += kKeepTileKeys) {
        const std::size_t len = std::min(kKeepTileKeys, iv.end - t);
        std::size_t at = t - kept.intervals[0].begin;
        if (!one_tile) {
          detail::RowKeepBytes(mask, rules, i, shape.q_len, n,
                               KeptKeys{{KeyInterval{t, t + len}}, 1},
                               keep_bytes, t, /*cache=*/nullptr,
                               &PositionKeepBytes);
          at = 0;
        }
        ApplyKeepRow<kType>(df, KeepU8Source{keep_bytes + at}, s + t, len,
                            fill);
      }
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
