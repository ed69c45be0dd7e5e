// SPDX-License-Identifier: MIT OR Apache-2.0
// Loading and storing score rows of each type as f32 vectors. Re-included per
// target.
//
// Rows are f32, bf16 or f16 in memory and f32 in registers: a vector of N f32
// lanes pairs with N 16-bit lanes (a half vector). Stores round to nearest
// even, on every target:
// - bf16 is rounded on the bits (Highway 1.0.3's DemoteTo truncates on some
//   targets);
// - f16 uses the hardware conversion where there is one (F16C on AVX2 and
//   up, NEON, SVE). Highway 1.0.3's emulation for SSE4, EMU128 and SCALAR
//   truncates and turns inf and NaN into finite values, so those targets use
//   the exact integer conversions below.

#if defined(RLX_SRC_ROW_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_ROW_CONVERT_INL_H_
#undef RLX_SRC_ROW_CONVERT_INL_H_
#else
#define RLX_SRC_ROW_CONVERT_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "rlx/scores.h"
#include "src/dispatch/cpu_features.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Memory element of each row type: f32, or the 16 bits of a bf16 / f16.
template <ScoreType kType>
using Elem = std::conditional_t<kType == ScoreType::kF32, float, std::uint16_t>;

// Whether this target converts f16 in hardware (exactly, round to nearest
// even, inf and NaN preserved).
constexpr bool kNativeF16 =
    !((HWY_ARCH_X86 && HWY_TARGET >= HWY_SSE4) || HWY_TARGET == HWY_EMU128 ||
      HWY_TARGET == HWY_SCALAR);

// Exact f16 bits (in i32 lanes) -> f32.
template <class DF, class VI = hn::Vec<hn::RebindToSigned<DF>>>
HWY_INLINE hn::Vec<DF> F32FromF16Bits(DF df, VI h) {
  const hn::RebindToSigned<DF> di;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000)));
  const auto exp = hn::And(hn::ShiftRight<10>(h), hn::Set(di, 0x1F));
  const auto mant = hn::And(h, hn::Set(di, 0x3FF));
  const auto normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(di, 112))),
                             hn::ShiftLeft<13>(mant));
  const auto special = hn::Or(hn::Set(di, 0x7F800000), hn::ShiftLeft<13>(mant));
  const auto subnormal = hn::BitCast(
      di, hn::Mul(hn::ConvertTo(df, mant), hn::Set(df, 1.0f / (1 << 24))));
  auto bits = hn::IfThenElse(hn::Eq(exp, hn::Set(di, 31)), special, normal);
  bits = hn::IfThenElse(hn::Eq(exp, hn::Zero(di)), subnormal, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

// f32 -> exact f16 bits (in i32 lanes), round to nearest even.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> F16BitsFromF32(DF df,
                                                          hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(di, v);
  const auto abs = hn::And(bits, hn::Set(di, 0x7FFFFFFF));  // >= 0 as i32
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0x8000));
  // Normal f16 (|v| >= 2^-14): rebias the exponent, round off 13 bits.
  const auto rebiased = hn::Sub(abs, hn::Set(di, 0x38000000));
  const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(di, 1));
  const auto normal =
      hn::ShiftRight<13>(hn::Add(rebiased, hn::Add(odd, hn::Set(di, 0xFFF))));
  // Subnormal f16: adding 0.5 puts the f16 subnormal step 2^-24 at the last
  // mantissa bit, and the f32 add rounds to nearest even.
  const auto subnormal =
      hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))),
              hn::Set(di, 0x3F000000));
  auto h =
      hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x38800000)), subnormal, normal);
  // |v| >= 65520 rounds to infinity; NaN stays NaN, made quiet, with the
  // top of its payload (as src/util/half_codec.h and the hardware conversions).
  h = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x477FEFFF)), hn::Set(di, 0x7C00),
                     h);
  h = hn::IfThenElse(
      hn::Gt(abs, hn::Set(di, 0x7F800000)),
      hn::Or(hn::Set(di, 0x7E00),
             hn::And(hn::ShiftRight<13>(abs), hn::Set(di, 0x3FF))),
      h);
  return hn::Or(h, sign);
}

// The N 16-bit lanes that pair with N f32 lanes.
template <class DF>
using RowBits16 = hn::Rebind<std::uint16_t, DF>;

// 16-bit row bits -> f32 (exact).
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<DF> F32FromRowBits(DF df, hn::Vec<RowBits16<DF>> bits) {
  if constexpr (kType == ScoreType::kBF16) {
    const hn::RebindToUnsigned<DF> du32;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, bits)));
  } else if constexpr (kNativeF16) {
    const hn::Rebind<hwy::float16_t, DF> df16;
    return hn::PromoteTo(df, hn::BitCast(df16, bits));
  } else {
    const hn::RebindToSigned<DF> di32;
    return F32FromF16Bits(df, hn::PromoteTo(di32, bits));
  }
}

// f32 -> u32 lanes whose upper 16 bits are the bf16 rounded to nearest even
// (the lower 16 are garbage), for lanes that are numbers: a NaN whose low
// payload bits are set would carry into its exponent (0x7F808000 -> inf)
// or past its sign (0x7FFFFFFF -> -0). RoundedBF16High takes every lane.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundedNumberBF16High(
    DF /*df*/, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  const auto bits = hn::BitCast(du32, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
  return hn::Add(bits, hn::Add(odd, hn::Set(du32, 0x7FFFu)));
}

// RoundedNumberBF16High for every lane: a NaN stays NaN, made quiet, with
// its sign and the top of its payload, as src/util/half_codec.h converts it.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundedBF16High(DF df,
                                                             hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  return hn::IfThenElse(
      hn::RebindMask(du32, hn::IsNaN(v)),
      hn::Or(hn::BitCast(du32, v), hn::Set(du32, 0x00400000u)),
      RoundedNumberBF16High(df, v));
}

// f32 -> 16-bit row bits, rounded to nearest even.
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<RowBits16<DF>> RowBitsFromF32(DF df, hn::Vec<DF> v) {
  const RowBits16<DF> du16;
  const hn::RebindToSigned<DF> di32;
  if constexpr (kType == ScoreType::kBF16) {
    const auto rounded = RoundedBF16High(df, v);
    return hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(rounded)));
  } else if constexpr (kNativeF16) {
    const hn::Rebind<hwy::float16_t, DF> df16;
    return hn::BitCast(du16, hn::DemoteTo(df16, v));
  } else {
    return hn::DemoteTo(du16, F16BitsFromF32(df, v));
  }
}

// Loads N elements as f32 (exact for every type).
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<DF> LoadRow(DF df, const Elem<kType>* HWY_RESTRICT p) {
  if constexpr (kType == ScoreType::kF32) {
    return hn::LoadU(df, p);
  } else {
    return F32FromRowBits<kType>(df, hn::LoadU(RowBits16<DF>(), p));
  }
}

// Stores N f32 lanes as the row type, rounding to nearest even.
template <ScoreType kType, class DF>
HWY_INLINE void StoreRow(DF df, hn::Vec<DF> v, Elem<kType>* HWY_RESTRICT p) {
  if constexpr (kType == ScoreType::kF32) {
    hn::StoreU(v, df, p);
  } else {
    hn::StoreU(RowBitsFromF32<kType>(df, v), RowBits16<DF>(), p);
  }
}

// Stores 2N probabilities of pass 3, v0's lanes then v1's, as the row
// type. Their lanes are numbers, or the quiet NaN of a NaN row
// (std::numeric_limits<float>::quiet_NaN(), whose low payload bits are
// clear), so bf16 rounds them as numbers: the NaN check of StoreRow cost
// long bf16 rows measurably here. bf16 takes the upper halves of both rounded
// vectors with one ConcatOdd (AVX-512: one two-table permute; NEON, SVE: one
// uzp2) where two StoreRow would shift and narrow each vector (faster on long
// bf16 rows). Aligning the paired stores to whole lines gained nothing.
template <ScoreType kType, class DF>
HWY_INLINE void StoreProbabilityPair(DF df, hn::Vec<DF> v0, hn::Vec<DF> v1,
                                     Elem<kType>* HWY_RESTRICT p) {
#if HWY_TARGET != HWY_SCALAR  // one-lane vectors have no ConcatOdd
  if constexpr (kType == ScoreType::kBF16) {
    const hn::Repartition<std::uint16_t, DF> du16x2;  // 2N lanes
    hn::StoreU(hn::ConcatOdd(
                   du16x2, hn::BitCast(du16x2, RoundedNumberBF16High(df, v1)),
                   hn::BitCast(du16x2, RoundedNumberBF16High(df, v0))),
               du16x2, p);
    return;
  }
#endif
  StoreRow<kType>(df, v0, p);
  StoreRow<kType>(df, v1, p + hn::Lanes(df));
}

// Whether this target stores bf16 pairs with AVX512_BF16 where the CPU has
// it (StoreBF16PairsNatively): AVX-512 targets, compilers that know the
// instruction (GCC 10, Clang 9).
#undef RLX_NATIVE_BF16_PAIRS
#if (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    (HWY_COMPILER_CLANG >= 900 ||                            \
     (HWY_COMPILER_GCC >= 1000 && !HWY_COMPILER_CLANG))
#define RLX_NATIVE_BF16_PAIRS 1
#else
#define RLX_NATIVE_BF16_PAIRS 0
#endif

#if RLX_NATIVE_BF16_PAIRS
// StoreBF16PairsNatively on CPUs with AVX512_BF16: one VCVTNE2PS2BF16 per
// pair, where the portable pair takes a shift, an and and two adds per
// vector and a permute. Compiled for AVX512_BF16 on top of the target, so
// out of line: only this function may contain the instruction, and only
// callers that checked HasAvx512Bf16 reach it.
inline HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16")))
std::size_t
StoreBF16PairsAvx512(const float* HWY_RESTRICT work,
                     std::uint16_t* HWY_RESTRICT out, std::size_t n,
                     float inv_sum) {
  const hn::Full512<float> df;
  const auto inv = hn::Set(df, inv_sum);
  std::size_t k = 0;
  // One pair a step (two measured the same). No lambda: it would not take
  // this function's target.
  for (; k + 32 <= n; k += 32) {
    const __m512bh bf16 =
        _mm512_cvtne2ps_pbh(hn::Mul(hn::LoadU(df, work + k + 16), inv).raw,
                            hn::Mul(hn::LoadU(df, work + k), inv).raw);
    _mm512_storeu_si512(out + k, reinterpret_cast<__m512i>(bf16));
  }
  return k;
}
#endif

// Pass 3 of a bf16 row with the CPU's own conversion, where this target has
// one and the CPU has it (AVX-512 with AVX512_BF16): out[k] = bf16(work[k] *
// inv_sum) for the keys of whole pairs of vectors from 0, returning how many
// (a multiple of 2N; 0 where there is none, and StoreProbabilityPair stores
// them). Bit for bit StoreProbabilityPair's result for products that are
// numbers or the quiet NaN and not subnormal: the instruction reads a
// subnormal as 0, and pass 3 holds FlushToZeroScope, under which no product
// is subnormal. Faster than the portable pairs on decode rows.
template <class DF>
HWY_INLINE std::size_t StoreBF16PairsNatively(DF df,
                                              const float* HWY_RESTRICT work,
                                              std::uint16_t* HWY_RESTRICT out,
                                              std::size_t n, float inv_sum) {
#if RLX_NATIVE_BF16_PAIRS
  // No call for a segment without a whole pair (a Decode row's token).
  if (n >= 2 * hn::Lanes(df) && detail::HasAvx512Bf16()) {
    return StoreBF16PairsAvx512(work, out, n, inv_sum);
  }
#else
  (void)df;
  (void)work;
  (void)out;
  (void)n;
  (void)inv_sum;
#endif
  return 0;
}

#if HWY_TARGET != HWY_SCALAR
// The 2N bf16 at p as N f32 each (exact): the even-indexed keys into
// `even`, the odd-indexed into `odd`. One full-width load and one bit
// operation per vector, with no widening shuffle: for passes that need
// every key but not their order (a maximum).
template <class DF>
HWY_INLINE void LoadBF16EvenOdd(DF df, const std::uint16_t* HWY_RESTRICT p,
                                hn::Vec<DF>& even, hn::Vec<DF>& odd) {
  const hn::Repartition<std::uint16_t, DF> du16x2;
  const hn::RebindToUnsigned<DF> du32;
  const auto bits = hn::BitCast(du32, hn::LoadU(du16x2, p));
  even = hn::BitCast(df, hn::ShiftLeft<16>(bits));
  odd = hn::BitCast(df, hn::And(bits, hn::Set(du32, 0xFFFF0000u)));
}
#endif

// The element at p as f32, in every lane (exact for every type).
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<DF> LoadRowBroadcast(DF df,
                                        const Elem<kType>* HWY_RESTRICT p) {
  if constexpr (kType == ScoreType::kF32) {
    return hn::Set(df, p[0]);
  } else {
    return F32FromRowBits<kType>(df, hn::Set(RowBits16<DF>(), p[0]));
  }
}

// Whether this target's masked loads and stores of the row type's lanes
// never touch memory of a masked-off lane (no fault, no write): AVX-512
// (every lane size), AVX2 (32-bit lanes: vmaskmov), SVE (predicated).
// Elsewhere (SSE4, NEON, the fallbacks; AVX2 16-bit) Highway 1.0.3 emulates
// them with full-vector accesses, so tails go through a stack buffer.
template <ScoreType kType>
constexpr bool kMaskedTails = HWY_TARGET == HWY_AVX3 ||
                              HWY_TARGET == HWY_AVX3_DL ||
                              (HWY_TARGET == HWY_AVX2 &&
                               kType == ScoreType::kF32) ||
                              HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2
                              || HWY_TARGET == HWY_SVE_256
                              || HWY_TARGET == HWY_SVE2_128;

// Keys from `p` to its first whole-vector boundary (N lanes of T), at most
// `n`; 0 when p is aligned, or not even element-aligned, or on targets
// other than AVX-512. Why: an unaligned 64-byte access always spans two
// cache lines, which costs the load and store ports a second access, and in
// a decode batch of 4097-key rows most rows start unaligned. A pass that
// takes these keys first as one partial (masked) vector makes every later
// full vector aligned. AVX2's 32-byte vectors split on every other unaligned
// access only, and its masked store is slow: there the head did not pay.
// Nor does it below 4 vectors: a short run (a 16-key row) then takes a head
// and a tail partial instead of one split access per vector (a larger
// bound gained nothing beyond noise).
template <ScoreType kType, class D, typename T>
HWY_INLINE std::size_t KeysToAlign(D d, const T* p, std::size_t n) {
  if constexpr (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) {
    static_assert(kMaskedTails<kType>, "the head is a partial vector");
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(p);
    const std::size_t N = hn::Lanes(d);
    const std::size_t misalign = (address / sizeof(T)) % N;
    if (n < 4 * N || address % sizeof(T) != 0 || misalign == 0) return 0;
    return std::min(n, N - misalign);
  } else {
    (void)d, (void)p, (void)n;
    return 0;
  }
}

// A tail of `count` < N elements: nothing past p[count) is touched (a full
// vector could fault, or touch a neighbour's bytes: another row, or a stride
// gap that must stay untouched). Lanes past `count` load as zero bits.
//
// AVX2's vmaskmov load never touches a masked-off lane on hardware, but qemu
// 7.2 (which runs the AVX2 tests of the test command on an AVX-512 host)
// reads the whole 32 bytes, and faults where they cross into an unmapped
// page. So on AVX2 a tail whose whole vector would cross a 4 KiB boundary
// (any page is a multiple of 4 KiB) takes the buffer instead: one compare
// per tail, and the rare crossing pays a copy. Masked-off bytes read within
// the same page are never used.
//
// A one-element tail (a Decode token's key: an interval of its own) is a
// broadcast and a register mask instead: a masked load or store for one key
// cost a Decode row several ns in its three passes, and the buffer is a
// vector load of a scalar store, which stalls store forwarding.
template <ScoreType kType, class DF>
HWY_INLINE hn::Vec<DF> LoadRowTail(DF df, const Elem<kType>* HWY_RESTRICT p,
                                   std::size_t count) {
  if (count == 1) {
    return hn::IfThenElseZero(hn::FirstN(df, 1),
                              LoadRowBroadcast<kType>(df, p));
  }
  // One-lane vectors (HWY_SCALAR) have no other tail than an empty one.
  if constexpr (hn::MaxLanes(df) == 1) return hn::Zero(df);
  if constexpr (kMaskedTails<kType>) {
    constexpr std::size_t kPage = 4096;
    const std::size_t in_page = reinterpret_cast<std::uintptr_t>(p) % kPage;
    if (HWY_TARGET != HWY_AVX2 ||
        in_page + hn::Lanes(df) * sizeof(Elem<kType>) <= kPage) {
      if constexpr (kType == ScoreType::kF32) {
        return hn::MaskedLoad(hn::FirstN(df, count), df, p);
      } else {
        const RowBits16<DF> du16;
        return F32FromRowBits<kType>(
            df, hn::MaskedLoad(hn::FirstN(du16, count), du16, p));
      }
    }
  }
  HWY_ALIGN Elem<kType> buffer[hn::MaxLanes(df)] = {};
  std::memcpy(buffer, p, count * sizeof(Elem<kType>));
  return LoadRow<kType>(df, buffer);
}

template <ScoreType kType, class DF>
HWY_INLINE void StoreRowTail(DF df, hn::Vec<DF> v, Elem<kType>* HWY_RESTRICT p,
                             std::size_t count) {
  if (count == 1) {  // as LoadRowTail: lane 0 alone
    if constexpr (kType == ScoreType::kF32) {
      p[0] = hn::GetLane(v);
    } else {
      p[0] = hn::GetLane(RowBitsFromF32<kType>(df, v));
    }
    return;
  }
  if constexpr (hn::MaxLanes(df) == 1) return;  // as in LoadRowTail
  if constexpr (kMaskedTails<kType>) {
    if constexpr (kType == ScoreType::kF32) {
      hn::BlendedStore(v, hn::FirstN(df, count), df, p);
    } else {
      const RowBits16<DF> du16;
      hn::BlendedStore(RowBitsFromF32<kType>(df, v), hn::FirstN(du16, count),
                       du16, p);
    }
  } else {
    HWY_ALIGN Elem<kType> buffer[hn::MaxLanes(df)];
    StoreRow<kType>(df, v, buffer);
    std::memcpy(p, buffer, count * sizeof(Elem<kType>));
  }
}

// The bits of `value` as the row type (apply_mask's fill).
template <ScoreType kType>
Elem<kType> ElemFromF32(float value) {
  if constexpr (kType == ScoreType::kF32) {
    return value;
  } else {
    const hn::CappedTag<float, 1> d1;
    Elem<kType> out;
    StoreRowTail<kType>(d1, hn::Set(d1, value), &out, 1);
    return out;
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
