// SPDX-License-Identifier: MIT OR Apache-2.0
// Constant stores over a run of a row: the building block of every mask fill
// (a structured mask is a few constant runs). Re-included per target.

#if defined(RLX_SRC_STORE_RUN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_STORE_RUN_INL_H_
#undef RLX_SRC_STORE_RUN_INL_H_
#else
#define RLX_SRC_STORE_RUN_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "rlx/scores.h"
#include "src/util/row_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Writes `v`'s lanes (all equal) to out[begin, end), and nothing else.
// Runs of at least one vector use overlapping stores, which are harmless for
// a constant: one unaligned store at the head, aligned stores for the body
// (an unaligned 64-byte store splits across two cache lines and halves store
// throughput on AVX3), one unaligned store ending at `end`. Shorter runs are
// written lane by lane: a full vector would spill past the run.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void StoreRun(D d, V v, hn::TFromD<D>* HWY_RESTRICT out,
                         std::size_t begin, std::size_t end) {
  using T = hn::TFromD<D>;
  const std::size_t N = hn::Lanes(d);
  if (end - begin < N) {
    const T value = hn::GetLane(v);
    for (std::size_t i = begin; i < end; ++i) out[i] = value;
    return;
  }
  T* HWY_RESTRICT run = out + begin;
  const std::size_t count = end - begin;
  hn::StoreU(v, d, run);
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(run);
  std::size_t i = N;
  if (address % sizeof(T) == 0) {
    const std::size_t misalign = (address / sizeof(T)) % N;
    i = N - misalign;  // first vector-aligned lane (N when already aligned)
    for (; i + N <= count; i += N) hn::Store(v, d, run + i);
  } else {  // not even element-aligned: unaligned stores throughout
    for (; i + N <= count; i += N) hn::StoreU(v, d, run + i);
  }
  if (i < count) hn::StoreU(v, d, run + count - N);
}

// Zero runs of at least this many bytes are written by memset: the C
// library's (glibc's `rep stosb` on x86 from 2 KiB, `dc zva` on Arm) wrote
// a softmax row's masked keys, where they are not in L1, faster than vector
// stores (docs/PERFORMANCE.md, "Measurements behind the code"). Shorter
// runs, and every other value, take StoreRun.
constexpr std::size_t kMemsetZeroBytes = 2048;

// Writes `value` over s[begin, end) in the row type's bits.
template <ScoreType kType>
HWY_INLINE void FillRun(Elem<kType>* HWY_RESTRICT s, std::size_t begin,
                        std::size_t end, Elem<kType> value) {
  using Bits = std::conditional_t<sizeof(Elem<kType>) == sizeof(std::uint32_t),
                                  std::uint32_t, std::uint16_t>;
  static_assert(sizeof(Bits) == sizeof(Elem<kType>));
  Bits bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (bits == 0 && (end - begin) * sizeof(Bits) >= kMemsetZeroBytes) {
    std::memset(s + begin, 0, (end - begin) * sizeof(Bits));
    return;
  }
  const hn::ScalableTag<Elem<kType>> d;
  StoreRun(d, hn::Set(d, value), s, begin, end);
}

// The keys of `outer` outside `inner` become `value` (both sorted,
// disjoint; every interval of inner lies within one of outer).
template <ScoreType kType>
HWY_INLINE void FillMasked(Elem<kType>* HWY_RESTRICT s, const KeptKeys& outer,
                           const KeptKeys& inner, Elem<kType> value) {
  std::size_t j = 0;
  for (std::size_t o = 0; o < outer.count; ++o) {
    std::size_t next = outer.intervals[o].begin;
    const std::size_t end = outer.intervals[o].end;
    for (; j < inner.count && inner.intervals[j].begin < end; ++j) {
      FillRun<kType>(s, next, inner.intervals[j].begin, value);
      next = inner.intervals[j].end;
    }
    FillRun<kType>(s, next, end, value);
  }
}

// The whole row [0, n) as intervals.
inline KeptKeys WholeRow(std::size_t n) { return {{KeyInterval{0, n}}, 1}; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
