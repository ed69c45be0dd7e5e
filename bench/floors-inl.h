// SPDX-License-Identifier: MIT OR Apache-2.0
// Per-target floor kernels (bench/floors.h). Re-included once per target by
// foreach_target.h from floors.cc; everything here lives in
// rlx::bench::HWY_NAMESPACE.

// Per-target include guard: toggles with HWY_TARGET_TOGGLE.
#if defined(RLX_BENCH_FLOORS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_BENCH_FLOORS_INL_H_
#undef RLX_BENCH_FLOORS_INL_H_
#else
#define RLX_BENCH_FLOORS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A copy of `bytes` bytes: four independent vector load/store pairs per step
// so that the loop is bound by the load and store ports (or by memory), not
// by the loop itself. The tail (< 4 vectors) goes vector by vector, then
// through SafeCopyN, which never touches memory past the end.
HWY_NOINLINE void CopyBytes(const std::uint8_t* HWY_RESTRICT from,
                            std::uint8_t* HWY_RESTRICT to, std::size_t bytes) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + 4 * N <= bytes; i += 4 * N) {
    const auto v0 = hn::LoadU(d, from + i);
    const auto v1 = hn::LoadU(d, from + i + N);
    const auto v2 = hn::LoadU(d, from + i + 2 * N);
    const auto v3 = hn::LoadU(d, from + i + 3 * N);
    hn::StoreU(v0, d, to + i);
    hn::StoreU(v1, d, to + i + N);
    hn::StoreU(v2, d, to + i + 2 * N);
    hn::StoreU(v3, d, to + i + 3 * N);
  }
  for (; i + N <= bytes; i += N) hn::StoreU(hn::LoadU(d, from + i), d, to + i);
  if (i < bytes) hn::SafeCopyN(bytes - i, d, from + i, to + i);
}

// In place over one row of `bytes` bytes: the bytes of each kept span
// [begin, end) loaded and stored back, every other byte stored zero. These
// are the accesses a fused in-place kernel cannot avoid (read each kept
// key once, write every key once), with no arithmetic. Spans are sorted,
// disjoint and in bytes. Every stored byte is XORed with `zero`, which the
// caller passes as 0: a compiler that saw it would drop the stores of
// unchanged bytes, and the floor would time nothing.
HWY_NOINLINE void TouchRow(std::uint8_t* HWY_RESTRICT row, std::size_t bytes,
                           const std::size_t* HWY_RESTRICT span_begin,
                           const std::size_t* HWY_RESTRICT span_end,
                           std::size_t spans, std::uint8_t zero) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t N = hn::Lanes(d);
  const auto zeros = hn::Set(d, zero);
  const auto store_zeros = [&](std::size_t from, std::size_t to) {
    std::size_t i = from;
    for (; i + N <= to; i += N) hn::StoreU(zeros, d, row + i);
    for (; i < to; ++i) row[i] = zero;
  };
  std::size_t at = 0;
  for (std::size_t s = 0; s < spans; ++s) {
    store_zeros(at, span_begin[s]);
    std::size_t i = span_begin[s];
    for (; i + N <= span_end[s]; i += N) {
      hn::StoreU(hn::Xor(hn::LoadU(d, row + i), zeros), d, row + i);
    }
    for (; i < span_end[s]; ++i) row[i] ^= zero;
    at = span_end[s];
  }
  store_zeros(at, bytes);
}

// out[i] = Exp(in[i]): two independent vectors per step to overlap the
// polynomial's latency chains. Exp is Highway's contrib/math one (max error
// 1 ulp over its valid range; inputs here are in [-16, 0]). The tail runs one
// zero-padded vector through a stack buffer.
HWY_NOINLINE void ExpArray(const float* HWY_RESTRICT in,
                           float* HWY_RESTRICT out, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto x0 = hn::LoadU(d, in + i);
    const auto x1 = hn::LoadU(d, in + i + N);
    hn::StoreU(hn::Exp(d, x0), d, out + i);
    hn::StoreU(hn::Exp(d, x1), d, out + i + N);
  }
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Exp(d, hn::LoadU(d, in + i)), d, out + i);
  }
  if (i < n) {
    HWY_ALIGN float buffer[hn::MaxLanes(d)];
    hn::Store(hn::Zero(d), d, buffer);
    hn::SafeCopyN(n - i, d, in + i, buffer);
    hn::Store(hn::Exp(d, hn::Load(d, buffer)), d, buffer);
    hn::SafeCopyN(n - i, d, buffer, out + i);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace bench
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
