// SPDX-License-Identifier: MIT OR Apache-2.0
// The general row paths compiled in units of their own (gemma.cpp's
// per-type units: one shared body, a macro per unit): each unit defines
// RLX_GENERAL_ROW_UNIT and includes this file, which then defines that
// unit's function of the seam in src/softmax/general_row-inl.h:
//
//   RLX_UNIT_DENSE_KEEP      general_row_dense_keep.cc      SoftmaxDenseKeepRow
//   RLX_UNIT_KEEP_BYTES      general_row_keep_bytes.cc      SoftmaxKeepByteRow
//   RLX_UNIT_ALIBI           general_row_alibi.cc           SoftmaxAlibiRow
//   RLX_UNIT_ALIBI_EXPLICIT  general_row_alibi_explicit.cc
//   SoftmaxAlibiExplicitRow
//
// Why units: with the rest, one unit took the longest to compile and its
// compiler the most memory (the keep-byte sources with the vector map in
// the fuzz build); apart, they compile in parallel. docs/PERFORMANCE.md,
// "Build cost", has the figures. Re-included per target.

#if defined(RLX_SRC_SOFTMAX_GENERAL_ROW_UNITS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_GENERAL_ROW_UNITS_INL_H_
#undef RLX_SRC_SOFTMAX_GENERAL_ROW_UNITS_INL_H_
#else
#define RLX_SRC_SOFTMAX_GENERAL_ROW_UNITS_INL_H_
#endif

#include <cstdint>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/general_row-inl.h"

#define RLX_UNIT_DENSE_KEEP 1
#define RLX_UNIT_KEEP_BYTES 2
#define RLX_UNIT_ALIBI 3
#define RLX_UNIT_ALIBI_EXPLICIT 4
#ifndef RLX_GENERAL_ROW_UNIT
#error "define RLX_GENERAL_ROW_UNIT to one of the RLX_UNIT_* before including"
#endif

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls f(source) with the keep bytes of a row of per-element rules, under
// the row's bias when it has one.
template <class F>
HWY_INLINE void WithKeepByteSource(const RowCode& code, const F& f) {
  if (code.rules->dense == DenseKind::kBias) {
    f(KeptBytesSource<BiasSource>{
        code.keep_bytes, code.origin, {RowBias(code)}});
  } else {
    f(KeptBytesSource<NoSource>{code.keep_bytes, code.origin, {}});
  }
}

// Calls f(source) with the row's mask source under ALiBi: the keep bytes
// of per-element rules, a bias, both, or nothing.
template <class F>
HWY_INLINE void WithRuleSource(const RowCode& code, const F& f) {
  if (code.read_bytes) {
    WithKeepByteSource(code, f);
  } else if (code.rules->dense == DenseKind::kBias) {
    f(BiasSource{RowBias(code)});
  } else {
    f(NoSource{});
  }
}

#if RLX_GENERAL_ROW_UNIT == RLX_UNIT_DENSE_KEEP
// kDenseOnlyF32 and kDenseKeep rows of a keep mask: its row read directly
// per element.
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
#endif

#if RLX_GENERAL_ROW_UNIT == RLX_UNIT_KEEP_BYTES
// kKeepBytes, kKeepByteTiles and kVectorMap rows: their keep bytes, alone
// (with the vector map of src/softmax/softmax_vector_map-inl.h when the
// loop set one) or under a bias.
void SoftmaxKeepByteRow(const RowSegments& row, const RowCode& code,
                        detail::RowPrefetch& prefetch) {
  const hn::ScalableTag<float> df;
  WithKeepByteSource(code, [&](const auto& source) {
    SoftmaxSegments(df, row, source, *code.options, code.sink, code.lse,
                    code.part, prefetch);
  });
}
#endif

#if RLX_GENERAL_ROW_UNIT == RLX_UNIT_ALIBI
// kAlibiImplicit rows: ALiBi wraps the row's source, its term after the
// transform and before the bias or keep decision of the rule source.
void SoftmaxAlibiRow(const RowSegments& row, const RowCode& code,
                     detail::RowPrefetch& prefetch) {
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
#endif

#if RLX_GENERAL_ROW_UNIT == RLX_UNIT_ALIBI_EXPLICIT
// kAlibiExplicit rows: the keep bytes of their per-element rules, with or
// without a bias, wrapped by the ALiBi term whose distances are read per
// element from k_position.
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
#endif

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
