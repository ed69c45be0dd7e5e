// SPDX-License-Identifier: MIT OR Apache-2.0
// Per-target decode-mask kernels. Re-included once per target by
// foreach_target.h from attn_mask.cc; everything here lives in
// rlx::HWY_NAMESPACE.

// Per-target include guard: toggles with HWY_TARGET_TOGGLE so that each
// re-inclusion for a new target compiles this file again.
#if defined(RLX_SRC_ATTN_MASK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_ATTN_MASK_INL_H_
#undef RLX_SRC_ATTN_MASK_INL_H_
#else
#define RLX_SRC_ATTN_MASK_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Writes the keep mask of the half-open key interval [lo, hi) over
// out[0, num): 1.0f inside, 0.0f outside. Any lo <= hi (an empty or
// out-of-range interval is fine). Writes exactly out[0, num); `out` may be
// unaligned.
//
// The mask is three constant runs, 0 | 1 | 0. A run of at least a vector is a
// pure store stream (StoreRun). A shorter run is covered by one vector that
// starts at the run (or ends at `num`) and computes each lane from its index
// with an iota compare: that vector overlaps its neighbours, but writes them
// their correct values, so order does not matter. Spans shorter than a vector
// go through a stack buffer: a full-vector store would spill past the span.
template <class D>
HWY_INLINE void FillIntervalMask(D d, float* HWY_RESTRICT out, std::size_t num,
                                 std::size_t lo, std::size_t hi) {
  const hn::RebindToSigned<D> di;
  const std::size_t N = hn::Lanes(d);
  lo = std::min(lo, num);
  hi = std::min(std::max(hi, lo), num);
  // The vector whose first lane is key `start`: lane j is kept iff
  // lo <= start + j < hi. Bounds are made relative to `start` and clamped to
  // [0, N], so int32 lanes suffice for any span length. Lt and AndNot
  // because integer Ge does not compile on every x86 target of Highway 1.0.3.
  const auto values_at = [&](std::size_t start) {
    const auto relative = [&](std::size_t bound) {
      const std::size_t r = bound > start ? bound - start : 0;
      return hn::Set(di, static_cast<std::int32_t>(r < N ? r : N));
    };
    const auto index = hn::Iota(di, 0);
    const auto keep =
        hn::AndNot(hn::Lt(index, relative(lo)), hn::Lt(index, relative(hi)));
    return hn::IfThenElseZero(hn::RebindMask(d, keep), hn::Set(d, 1.0f));
  };
  if (num < N) {
    HWY_ALIGN float buffer[hn::MaxLanes(d)];
    hn::Store(values_at(0), d, buffer);
    hn::SafeCopyN(num, d, buffer, out);
    return;
  }
  const std::size_t bounds[4] = {0, lo, hi, num};
  for (int run = 0; run < 3; ++run) {
    const std::size_t begin = bounds[run], end = bounds[run + 1];
    if (begin == end) continue;
    if (end - begin >= N) {
      StoreRun(d, hn::Set(d, run == 1 ? 1.0f : 0.0f), out, begin, end);
    } else {
      const std::size_t start = std::min(begin, num - N);
      hn::StoreU(values_at(start), d, out + start);
    }
  }
}

// The seed's windowed decode mask over out[0, upper]: keys [lo, past) and the
// new token at `upper`. Preconditions (checked by the caller):
// lo <= past <= upper.
HWY_NOINLINE void FillDecodeMask(float* HWY_RESTRICT out, std::size_t lo,
                                 std::size_t past, std::size_t upper) {
  const hn::ScalableTag<float> d;
  FillIntervalMask(d, out, upper, lo, past);
  out[upper] = 1.0f;  // the new token always attends to itself
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
