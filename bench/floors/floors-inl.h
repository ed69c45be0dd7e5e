// SPDX-License-Identifier: MIT OR Apache-2.0
// Per-target floor kernels (bench/floors/floors.h). Re-included once per target
// by foreach_target.h from floors.cc; everything here lives in
// rlx::bench::HWY_NAMESPACE.

// Per-target include guard: toggles with HWY_TARGET_TOGGLE.
#if defined(RLX_BENCH_FLOORS_FLOORS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_BENCH_FLOORS_FLOORS_INL_H_
#undef RLX_BENCH_FLOORS_FLOORS_INL_H_
#else
#define RLX_BENCH_FLOORS_FLOORS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "rlx/scores.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/util/row_convert-inl.h"

// A floor's loops at 64-byte boundaries, where GCC can: their placement
// alone moved a floor's time by up to 8% (below).
#ifndef RLX_BENCH_ALIGN_LOOPS
#if defined(__GNUC__) && !defined(__clang__)
#define RLX_BENCH_ALIGN_LOOPS __attribute__((optimize("align-loops=64")))
#else
#define RLX_BENCH_ALIGN_LOOPS
#endif
#endif

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
// [begin, end) loaded and stored back (kTouchKept; otherwise left alone),
// every other byte stored zero. With kTouchKept, these are the accesses a
// fused in-place kernel cannot avoid (read each kept key once, write every
// key once), with no arithmetic. Spans are sorted,
// disjoint and in bytes. Every stored byte is XORed with `zero`, which the
// caller passes as 0: a compiler that saw it would drop the stores of
// unchanged bytes, and the floor would time nothing. A zero run of at least
// a vector is stored as the kernels' fills store it (StoreRun,
// src/util/store_run-inl.h): one unaligned vector at its start, aligned vectors
// on, one unaligned vector ending at its end. A run of vectors from its
// start splits nearly every store across two cache lines: touch_floor/D1
// and D2w took 1.25x and 1.31x the time that way (AVX3, Zen 4).
template <bool kTouchKept>
HWY_INLINE void TouchOrFillRow(std::uint8_t* HWY_RESTRICT row,
                               std::size_t bytes,
                               const std::size_t* HWY_RESTRICT span_begin,
                               const std::size_t* HWY_RESTRICT span_end,
                               std::size_t spans, std::uint8_t zero) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t N = hn::Lanes(d);
  const auto zeros = hn::Set(d, zero);
  const auto store_zeros = [&](std::size_t from, std::size_t to) {
    if (to - from < N) {
      for (std::size_t i = from; i < to; ++i) row[i] = zero;
      return;
    }
    hn::StoreU(zeros, d, row + from);
    const std::size_t misalign =
        reinterpret_cast<std::uintptr_t>(row + from) % N;
    for (std::size_t i = from + N - misalign; i + N <= to; i += N) {
      hn::Store(zeros, d, row + i);
    }
    hn::StoreU(zeros, d, row + to - N);
  };
  std::size_t at = 0;
  for (std::size_t s = 0; s < spans; ++s) {
    store_zeros(at, span_begin[s]);
    if constexpr (kTouchKept) {
      std::size_t i = span_begin[s];
      for (; i + N <= span_end[s]; i += N) {
        hn::StoreU(hn::Xor(hn::LoadU(d, row + i), zeros), d, row + i);
      }
      for (; i < span_end[s]; ++i) row[i] ^= zero;
    }
    at = span_end[s];
  }
  store_zeros(at, bytes);
}

// TouchOrFillRow with the kept spans loaded and stored back.
HWY_NOINLINE void TouchRow(std::uint8_t* HWY_RESTRICT row, std::size_t bytes,
                           const std::size_t* HWY_RESTRICT span_begin,
                           const std::size_t* HWY_RESTRICT span_end,
                           std::size_t spans, std::uint8_t zero) {
  TouchOrFillRow<true>(row, bytes, span_begin, span_end, spans, zero);
}

// TouchRow's zero runs alone: the stores the default mode adds to the
// kept-only one, the kept spans not touched.
HWY_NOINLINE void ZeroFillRow(std::uint8_t* HWY_RESTRICT row, std::size_t bytes,
                              const std::size_t* HWY_RESTRICT span_begin,
                              const std::size_t* HWY_RESTRICT span_end,
                              std::size_t spans, std::uint8_t zero) {
  TouchOrFillRow<false>(row, bytes, span_begin, span_end, spans, zero);
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

// Calls f(k) for k = 0, N, 2N, ... while k < n, four calls a step (the
// last vector may reach past n).
template <class D, class F>
HWY_INLINE void FourAtATime(D d, std::size_t n, const F& f) {
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    f(i);
    f(i + N);
    f(i + 2 * N);
    f(i + 3 * N);
  }
  for (; i < n; i += N) f(i);
}

// The maximum of the n values load(0), load(N), ... (vectors of N; the last
// one's lanes past n ignored) and of init's lanes, with four accumulators.
template <class D, class Load>
HWY_INLINE float MaxOfRow(D d, std::size_t n, const Load& load,
                          hn::Vec<D> init) {
  const std::size_t N = hn::Lanes(d);
  const auto neg_inf = hn::Set(d, -HUGE_VALF);
  auto m0 = init, m1 = neg_inf, m2 = neg_inf, m3 = neg_inf;
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, load(i));
    m1 = hn::Max(m1, load(i + N));
    m2 = hn::Max(m2, load(i + 2 * N));
    m3 = hn::Max(m3, load(i + 3 * N));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, load(i));
  if (i < n) {
    m1 = hn::Max(m1, hn::IfThenElse(hn::FirstN(d, n - i), load(i), neg_inf));
  }
  return hn::GetLane(
      hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
}

// out[k] = exp(in[k] - max) for k < n (in may be out), four vectors per step
// and two f32 sums; returns the sum (plus init's lanes). The last vector is
// stored whole, its lanes past n zero.
template <class D>
HWY_INLINE float ExpStoreSum(D d, const float* in, float* out, std::size_t n,
                             float max, hn::Vec<D> init) {
  const std::size_t N = hn::Lanes(d);
  const auto log2e = hn::Set(d, 1.44269504088896341f);
  const auto bias = hn::Set(d, -max * 1.44269504088896341f);
  const auto exp = [&](std::size_t k) __attribute__((always_inline)) {
    return rlx::HWY_NAMESPACE::SoftmaxExp2(
        d, hn::MulAdd(hn::LoadU(d, in + k), log2e, bias));
  };
  auto s0 = init, s1 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto e0 = exp(i), e1 = exp(i + N), e2 = exp(i + 2 * N),
               e3 = exp(i + 3 * N);
    hn::StoreU(e0, d, out + i);
    hn::StoreU(e1, d, out + i + N);
    hn::StoreU(e2, d, out + i + 2 * N);
    hn::StoreU(e3, d, out + i + 3 * N);
    s0 = hn::Add(s0, hn::Add(e0, e2));
    s1 = hn::Add(s1, hn::Add(e1, e3));
  }
  for (; i + N <= n; i += N) {
    const auto e = exp(i);
    hn::StoreU(e, d, out + i);
    s0 = hn::Add(s0, e);
  }
  if (i < n) {
    const auto e = hn::IfThenElseZero(hn::FirstN(d, n - i), exp(i));
    hn::StoreU(e, d, out + i);  // the padding past n takes zeros
    s1 = hn::Add(s1, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
}

// The plain softmax of one contiguous f32 row in place, three passes, as
// the fastest public CPU softmax kernels run it (XNNPACK's rmax,
// raddstoreexpminusmax and vmulc): the maximum with four accumulators; the
// exp of (x - max), stored and summed, four vectors per step and two f32
// sums; a multiply by the sum's one reciprocal. The exp is the library's
// SoftmaxExp2 (base 2, the argument formed by one FMA), so that the floor
// and masked_softmax pay the same exp. Loads and stores may run up to one
// vector past `n` (KeptSoftmaxRows pads the rows): no tail code beyond a
// masked last vector.
template <class D>
HWY_INLINE void PlainSoftmaxRow(D d, float* HWY_RESTRICT row, std::size_t n) {
  const float max = MaxOfRow(
      d, n,
      [&](std::size_t k)
          __attribute__((always_inline)) { return hn::LoadU(d, row + k); },
      hn::Set(d, -HUGE_VALF));
  const auto inv =
      hn::Set(d, 1.0f / ExpStoreSum(d, row, row, n, max, hn::Zero(d)));
  FourAtATime(
      d, n, [&](std::size_t k) __attribute__((always_inline)) {
        hn::StoreU(hn::Mul(hn::LoadU(d, row + k), inv), d, row + k);
      });
}

// The keys of a row at `row` before its first 64-byte boundary, which the
// floor at the rows' own alignment takes as one partial vector so that its
// loops load and store whole lines, as the kernels' long rows do
// (KeysToAlign, src/util/row_convert-inl.h): on AVX-512 only, for rows of at
// least 64 vectors. Measured on Zen 4 (5 alternated runs, ÷ the same floor
// without the head): D2, D3 and D2full 0.92-0.96, but D2w (512 keys)
// 1.03-1.04 and D1 (300) 1.05, and on AVX2 D2 and D2full 1.03: a partial
// vector per pass costs a short row more than its split lines, and AVX2's
// split lines cost less.
// 0: no head.
template <class D>
HWY_INLINE std::size_t HeadKeys(D d, const float* row, std::size_t n) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const std::size_t N = hn::Lanes(d);
  const std::size_t misalign =
      (reinterpret_cast<std::uintptr_t>(row) / sizeof(float)) % N;
  if (n < 64 * N || misalign == 0) return 0;
  return N - misalign;
#else
  (void)d, (void)row, (void)n;
  return 0;
#endif
}

// PlainSoftmaxRow on a row at `row` whose HeadKeys are h > 0 (loads and
// stores may still run up to one vector past n): the head as one partial
// vector in each pass, folded into the passes' own accumulators, the rest
// from the 64-byte boundary.
template <class D>
HWY_INLINE void PlainSoftmaxRowUnaligned(D d, float* HWY_RESTRICT row,
                                         std::size_t n, std::size_t h) {
  const auto head = hn::FirstN(d, h);
  float* HWY_RESTRICT body = row + h;
  const std::size_t rest = n - h;
  const float max = MaxOfRow(
      d, rest,
      [&](std::size_t k)
          __attribute__((always_inline)) { return hn::Load(d, body + k); },
      hn::IfThenElse(head, hn::LoadU(d, row), hn::Set(d, -HUGE_VALF)));
  const auto head_exp = hn::IfThenElseZero(
      head,
      rlx::HWY_NAMESPACE::SoftmaxExp2(
          d, hn::MulAdd(hn::LoadU(d, row), hn::Set(d, 1.44269504088896341f),
                        hn::Set(d, -max * 1.44269504088896341f))));
  hn::BlendedStore(head_exp, head, d, row);
  const auto inv =
      hn::Set(d, 1.0f / ExpStoreSum(d, body, body, rest, max, head_exp));
  hn::BlendedStore(hn::Mul(hn::LoadU(d, row), inv), head, d, row);
  FourAtATime(
      d, rest, [&](std::size_t k) __attribute__((always_inline)) {
        hn::Store(hn::Mul(hn::Load(d, body + k), inv), d, body + k);
      });
}

// PlainSoftmaxRow over `count` rows, row r at data + begin[r], len[r] keys.
HWY_NOINLINE void KeptSoftmaxRows(float* HWY_RESTRICT data,
                                  const std::size_t* HWY_RESTRICT begin,
                                  const std::size_t* HWY_RESTRICT len,
                                  std::size_t count) {
  const hn::ScalableTag<float> d;
  const rlx::HWY_NAMESPACE::FlushToZeroScope flush_to_zero;  // SoftmaxExp2
  for (std::size_t r = 0; r < count; ++r) {
    PlainSoftmaxRow(d, data + begin[r], len[r]);
  }
}

// Whether any of the rows has a HeadKeys head on this target.
HWY_NOINLINE bool AnyHeadKeys(const float* data, const std::size_t* begin,
                              const std::size_t* len, std::size_t count) {
  const hn::ScalableTag<float> d;
  for (std::size_t r = 0; r < count; ++r) {
    if (HeadKeys(d, data + begin[r], len[r]) != 0) return true;
  }
  return false;
}

// KeptSoftmaxRows on rows at any address: those with a HeadKeys head take
// PlainSoftmaxRowUnaligned. Called only when some row has one (floors.cc):
// otherwise the rows run KeptSoftmaxRows, so that the floor on short rows
// is the same machine code wherever they are (the same code at another
// offset from a 64-byte boundary took D1head301 1.045x the time).
// Its loops start on 64-byte boundaries (GCC): where the build happened to
// place them, D2full and D2 took 1.08x and 1.05x the time on Zen 5 (AVX3,
// 5 alternated runs; D1, D2w, D3 and the kernels unchanged by the same
// alignment), and masked_softmax/D2full read 1.01-1.03x this floor instead
// of 1.09x.
RLX_BENCH_ALIGN_LOOPS HWY_NOINLINE void KeptSoftmaxRowsUnaligned(
    float* HWY_RESTRICT data, const std::size_t* HWY_RESTRICT begin,
    const std::size_t* HWY_RESTRICT len, std::size_t count) {
  const hn::ScalableTag<float> d;
  const rlx::HWY_NAMESPACE::FlushToZeroScope flush_to_zero;  // SoftmaxExp2
  for (std::size_t r = 0; r < count; ++r) {
    float* row = data + begin[r];
    const std::size_t h = HeadKeys(d, row, len[r]);
    if (h == 0) {
      PlainSoftmaxRow(d, row, len[r]);
    } else {
      PlainSoftmaxRowUnaligned(d, row, len[r], h);
    }
  }
}

// The floor's three passes over every kept interval of one row in place
// (`kept`'s intervals, relative to `row`), under the contract masked_softmax
// keeps and PlainSoftmaxRow does not (docs/KERNELS.md):
// - no key outside the kept intervals is read or written: an interval's
//   partial last vector is a masked access, one key a scalar (the library's
//   LoadRowTail and StoreRowTail, as the kernel's tails), and so is its
//   HeadKeys head, taken as the kernel's long segments take theirs;
// - the sum is the kernel's: four f32 lane sums, each adding at most four
//   values before they are widened into f64 (AddWide), one f64 total and a
//   double reciprocal, so that the stated error bound holds at any length.
// A 16-bit row's kept keys are converted by pass 1 into `scratch` (key k at
// scratch[k]: as 64-byte aligned as the kernel's work buffer, where each
// interval starts at its key's offset in a line), passes 2 and 3 read them
// there, and pass 3 is the kernel's own (SegmentNormalize: a head to the
// row's alignment, pairs converted at once, a masked tail). f32 rows run
// in place and take no scratch. Otherwise the recipe is PlainSoftmaxRow's
// (four max accumulators, the same exp), one row at a time: what the
// arithmetic and the accesses of the contract cost without any of the
// kernel's row loop, batches or checks.
template <ScoreType kType, class D>
HWY_INLINE void ContractSoftmaxRow(
    D d, rlx::HWY_NAMESPACE::Elem<kType>* HWY_RESTRICT row,
    const KeptKeys& kept, float* HWY_RESTRICT scratch) {
  namespace lib = rlx::HWY_NAMESPACE;
  constexpr ScoreType kF32 = ScoreType::kF32;
  using V = hn::Vec<D>;
  // The kept keys as f32: the row itself, or the 16-bit row's converted.
  float* HWY_RESTRICT work;
  if constexpr (kType == kF32) {
    (void)scratch;
    work = row;
  } else {
    work = scratch;
  }
  const std::size_t N = hn::Lanes(d);
  const V neg_inf = hn::Set(d, -HUGE_VALF);
  V m0 = neg_inf, m1 = neg_inf, m2 = neg_inf, m3 = neg_inf;
  // Each interval's HeadKeys and its tail: partial vectors, masked accesses.
  const auto head_keys = [&](std::size_t j) __attribute__((always_inline)) {
    const std::size_t begin = kept.intervals[j].begin;
    return HeadKeys(d, work + begin, kept.intervals[j].end - begin);
  };
  // Pass 1's loads: 16-bit keys converted and stored into work.
  const auto load = [&](std::size_t i) __attribute__((always_inline)) {
    if constexpr (kType == kF32) {
      return hn::LoadU(d, work + i);
    } else {
      const V v = lib::LoadRow<kType>(d, row + i);
      hn::StoreU(v, d, work + i);
      return v;
    }
  };
  const auto max_of_partial = [&](V & m, std::size_t i, std::size_t count)
      __attribute__((always_inline)) {
    V v;
    if constexpr (kType == kF32) {
      v = lib::LoadRowTail<kF32>(d, work + i, count);
    } else {
      v = lib::LoadRowTail<kType>(d, row + i, count);
      lib::StoreRowTail<kF32>(d, v, work + i, count);
    }
    m = hn::Max(m, hn::IfThenElse(hn::FirstN(d, count), v, neg_inf));
  };
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t i = kept.intervals[j].begin;
    if (const std::size_t h = head_keys(j)) {
      max_of_partial(m2, i, h);
      i += h;
    }
    for (; i + 4 * N <= end; i += 4 * N) {
      m0 = hn::Max(m0, load(i));
      m1 = hn::Max(m1, load(i + N));
      m2 = hn::Max(m2, load(i + 2 * N));
      m3 = hn::Max(m3, load(i + 3 * N));
    }
    for (; i + N <= end; i += N) m0 = hn::Max(m0, load(i));
    if (i < end) max_of_partial(m1, i, end - i);
  }
  const float max =
      hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  const V log2e = hn::Set(d, 1.44269504088896341f);
  const V bias = hn::Set(d, -max * 1.44269504088896341f);
  const auto exp_of = [&](V x) __attribute__((always_inline)) {
    return lib::SoftmaxExp2(d, hn::MulAdd(x, log2e, bias));
  };
  const auto exp_store = [&](std::size_t k) __attribute__((always_inline)) {
    const V e = exp_of(hn::LoadU(d, work + k));
    hn::StoreU(e, d, work + k);
    return e;
  };
  const auto exp_partial = [&](std::size_t i, std::size_t count)
      __attribute__((always_inline)) {
    const V e =
        hn::IfThenElseZero(hn::FirstN(d, count),
                           exp_of(lib::LoadRowTail<kF32>(d, work + i, count)));
    lib::StoreRowTail<kF32>(d, e, work + i, count);
    return e;
  };
  const lib::WideTag<D> dd;
  auto lo = hn::Zero(dd), hi = lo;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t i = kept.intervals[j].begin;
    V rest = hn::Zero(d);
    if (const std::size_t h = head_keys(j)) {
      rest = exp_partial(i, h);
      i += h;
    }
    while (i + 4 * N <= end) {
      V s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
      for (std::size_t step = 0; step < 4 && i + 4 * N <= end;
           ++step, i += 4 * N) {
        // Four exps before any store, as PlainSoftmaxRow's: an in-place
        // store could alias the next load, so the other order serialises
        // the exps (the floor took 1.02-1.045x the time on AVX2 and up to
        // 1.01x on AVX3 that way, Zen 4).
        lib::ExpsThenStores(
            d,
            [&](std::size_t k) __attribute__((always_inline)) {
              return exp_of(hn::LoadU(d, work + k));
            },
            work, i, s0, s1, s2, s3);
      }
      lib::AddWide(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), lo, hi);
    }
    for (; i + N <= end; i += N) rest = hn::Add(rest, exp_store(i));
    if (i < end) rest = hn::Add(rest, exp_partial(i, end - i));
    lib::AddWide(d, rest, lo, hi);
  }
  const float inv_sum = static_cast<float>(1.0 / lib::WideTotal(dd, lo, hi));
  if constexpr (kType != kF32) {
    for (std::size_t j = 0; j < kept.count; ++j) {
      const std::size_t begin = kept.intervals[j].begin;
      lib::SegmentNormalize<kType>(d, work + begin, row + begin,
                                   kept.intervals[j].end - begin, inv_sum);
    }
    return;
  }
  const V inv = hn::Set(d, inv_sum);
  const auto normalize = [&](std::size_t k) __attribute__((always_inline)) {
    hn::StoreU(hn::Mul(hn::LoadU(d, work + k), inv), d, work + k);
  };
  const auto normalize_partial = [&](std::size_t i, std::size_t count)
      __attribute__((always_inline)) {
    lib::StoreRowTail<kF32>(
        d, hn::Mul(lib::LoadRowTail<kF32>(d, work + i, count), inv), work + i,
        count);
  };
  for (std::size_t j = 0; j < kept.count; ++j) {
    const std::size_t end = kept.intervals[j].end;
    std::size_t i = kept.intervals[j].begin;
    if (const std::size_t h = head_keys(j)) {
      normalize_partial(i, h);
      i += h;
    }
    for (; i + 4 * N <= end; i += 4 * N) {
      normalize(i);
      normalize(i + N);
      normalize(i + 2 * N);
      normalize(i + 3 * N);
    }
    for (; i + N <= end; i += N) normalize(i);
    if (i < end) normalize_partial(i, end - i);
  }
}

// ContractSoftmaxRow over `count` rows of type kType, row r at
// data + begin[r] with the kept intervals kept[r]. One loop per row type,
// its loops at 64-byte boundaries: when 16-bit rows joined the f32 rows'
// function, the f32 rows' code kept its instructions but moved, and took
// 0.92-0.95x its old time on D1 and 1.066x on D2full (Zen 5, alternated);
// aligned, 0.975-1.013x on every workload.
template <ScoreType kType>
RLX_BENCH_ALIGN_LOOPS HWY_NOINLINE void ContractSoftmaxRowsOf(
    rlx::HWY_NAMESPACE::Elem<kType>* HWY_RESTRICT data,
    const std::size_t* HWY_RESTRICT begin, const KeptKeys* HWY_RESTRICT kept,
    std::size_t count, float* HWY_RESTRICT scratch) {
  const hn::ScalableTag<float> d;
  const rlx::HWY_NAMESPACE::FlushToZeroScope flush_to_zero;  // SoftmaxExp2
  for (std::size_t r = 0; r < count; ++r) {
    ContractSoftmaxRow<kType>(d, data + begin[r], kept[r], scratch);
  }
}

// ContractSoftmaxRowsOf for rows of type `type`; `scratch`: the 16-bit
// rows' f32 work, k_len floats (null for f32 rows).
HWY_NOINLINE void ContractSoftmaxRows(void* data, ScoreType type,
                                      const std::size_t* begin,
                                      const KeptKeys* kept, std::size_t count,
                                      float* scratch) {
  switch (type) {
    case ScoreType::kF32:
      return ContractSoftmaxRowsOf<ScoreType::kF32>(
          static_cast<float*>(data), begin, kept, count, scratch);
    case ScoreType::kBF16:
      return ContractSoftmaxRowsOf<ScoreType::kBF16>(
          static_cast<std::uint16_t*>(data), begin, kept, count, scratch);
    case ScoreType::kF16:
      return ContractSoftmaxRowsOf<ScoreType::kF16>(
          static_cast<std::uint16_t*>(data), begin, kept, count, scratch);
  }
}

// PlainSoftmaxRow on a row of 16-bit keys in place: pass 1 converts the
// keys to f32 into `work` (L1, reused by every row) as it takes their
// maximum, pass 2 runs on `work` as PlainSoftmaxRow on its row, and pass 3
// converts its results back as it stores them into the row. The
// conversions are the library's (src/util/row_convert-inl.h), as masked_softmax
// converts such rows. (Converting in passes 1 and 2 as they load, with
// `work` holding only the exps, took 1.02-1.16x the time on AVX3 and AVX2.)
// Loads and stores may run up to one vector past `n`, as PlainSoftmaxRow's
// (the keys past n become 0).
template <ScoreType kType, class D>
HWY_INLINE void PlainSoftmaxRow16(
    D d, rlx::HWY_NAMESPACE::Elem<kType>* HWY_RESTRICT row,
    float* HWY_RESTRICT work, std::size_t n) {
  using rlx::HWY_NAMESPACE::LoadRow;
  using rlx::HWY_NAMESPACE::StoreProbabilityPair;
  using rlx::HWY_NAMESPACE::StoreRow;
  const float max = MaxOfRow(
      d, n,
      [&](std::size_t k) __attribute__((always_inline)) {
        const auto v = LoadRow<kType>(d, row + k);
        hn::StoreU(v, d, work + k);
        return v;
      },
      hn::Set(d, -HUGE_VALF));
  const float inv_sum = 1.0f / ExpStoreSum(d, work, work, n, max, hn::Zero(d));
  const auto inv = hn::Set(d, inv_sum);
  // Pass 3 stores two vectors at once, as the kernel's (StoreProbabilityPair;
  // bf16 with the CPU's own conversion where it has one).
  const std::size_t N = hn::Lanes(d);
  std::size_t k = 0;
  if constexpr (kType == ScoreType::kBF16) {
    k = rlx::HWY_NAMESPACE::StoreBF16PairsNatively(d, work, row, n, inv_sum);
  }
  for (; k + 2 * N <= n; k += 2 * N) {
    StoreProbabilityPair<kType>(d, hn::Mul(hn::LoadU(d, work + k), inv),
                                hn::Mul(hn::LoadU(d, work + k + N), inv),
                                row + k);
  }
  for (; k < n; k += N) {
    StoreRow<kType>(d, hn::Mul(hn::LoadU(d, work + k), inv), row + k);
  }
}

// PlainSoftmaxRow16 over `count` rows of type `type` (bf16 or f16), row r at
// data + begin[r], len[r] keys; `work` holds the longest row plus a vector.
HWY_NOINLINE void KeptSoftmaxRows16(std::uint16_t* HWY_RESTRICT data,
                                    ScoreType type,
                                    const std::size_t* HWY_RESTRICT begin,
                                    const std::size_t* HWY_RESTRICT len,
                                    std::size_t count,
                                    float* HWY_RESTRICT work) {
  const hn::ScalableTag<float> d;
  const rlx::HWY_NAMESPACE::FlushToZeroScope flush_to_zero;  // SoftmaxExp2
  for (std::size_t r = 0; r < count; ++r) {
    if (type == ScoreType::kBF16) {
      PlainSoftmaxRow16<ScoreType::kBF16>(d, data + begin[r], work, len[r]);
    } else {
      PlainSoftmaxRow16<ScoreType::kF16>(d, data + begin[r], work, len[r]);
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace bench
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
