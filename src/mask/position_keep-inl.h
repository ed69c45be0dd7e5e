// SPDX-License-Identifier: MIT OR Apache-2.0
// detail::PositionKeepBytes (src/mask/mask_rows.h) with the target's vectors:
// the keep byte of each slot from its explicit int64 position. Re-included once
// per target (through src/scores/apply_mask-inl.h and
// src/softmax/general_loop-inl.h). Why: the header's loop is compiled for
// the baseline ISA, where the compiler does not vectorise int64 compares; on
// a paged-cache decode that scalar loop takes a large share of the kernel's
// time.
#if defined(RLX_SRC_POSITION_KEEP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_POSITION_KEEP_INL_H_
#undef RLX_SRC_POSITION_KEEP_INL_H_
#else
#define RLX_SRC_POSITION_KEEP_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "src/mask/mask_rows.h"
#include "src/mask/row_keep_bytes.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The same bytes as detail::PositionKeepBytes, which also takes the tail of
// fewer than one vector: 1 where base_begin <= p <= base_last or
// 0 <= p <= sink_last.
inline void PositionKeepBytes(const std::int64_t* positions, std::size_t n,
                              std::int64_t base_begin, std::int64_t base_last,
                              std::int64_t sink_last, std::uint8_t* bytes) {
  const hn::ScalableTag<std::int64_t> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<std::uint8_t, decltype(d)> d8;
  const std::size_t N = hn::Lanes(d);
  // p >= x as p > x - 1 and p <= y as !(p > y) (Highway has no int64 Ge or
  // Le on every target); begin >= 0, so begin - 1 does not overflow, and
  // last may be INT64_MAX.
  const auto above_begin = hn::Set(d, base_begin - 1);
  const auto last = hn::Set(d, base_last);
  const auto above_zero = hn::Set(d, -1), sink = hn::Set(d, sink_last);
  const auto one = hn::Set(du, 1);
  std::size_t k = 0;
  for (; k + N <= n; k += N) {
    const auto p = hn::LoadU(d, positions + k);
    const auto kept =
        hn::Or(hn::AndNot(hn::Gt(p, last), hn::Gt(p, above_begin)),
               hn::AndNot(hn::Gt(p, sink), hn::Gt(p, above_zero)));
    hn::StoreU(
        hn::TruncateTo(d8, hn::IfThenElseZero(hn::RebindMask(du, kept), one)),
        d8, bytes + k);
  }
  detail::PositionKeepBytes(positions + k, n - k, base_begin, base_last,
                            sink_last, bytes + k);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
