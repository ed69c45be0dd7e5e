/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The scalar half-precision codec of the tests, the oracle
 * (tests/reference/reference.cc) and the benchmarks: bfloat16 and IEEE binary16
 * to and from f32, and f64 to binary16 in one rounding. C99 and C++, static
 * inline, no Highway; never installed. The kernels convert with their own SIMD
 * code (src/util/row_convert-inl.h); tests/util/half_codec_test.cc checks that
 * it agrees with this codec and checks this codec against all 65,536 bit
 * patterns.
 *
 * Encoding rounds to nearest, ties to even; a value at or beyond the largest
 * finite value plus half a step becomes infinity; subnormals are produced
 * and decoded exactly; NaN stays NaN with its sign, quiet, keeping the top of
 * its payload; infinities and signed zeros stay as they are. Decoding is
 * exact. */
#ifndef RLX_SRC_UTIL_HALF_CODEC_H_
#define RLX_SRC_UTIL_HALF_CODEC_H_

#include <stdint.h>
#include <string.h>

static inline uint32_t rlx_bits_of_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float rlx_f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

/* bfloat16 -> f32: the 16 bits are the top half of the f32. */
static inline float rlx_f32_from_bf16(uint16_t h) {
  return rlx_f32_of_bits((uint32_t)h << 16);
}

/* f32 -> bfloat16, nearest even. Adding 0x7FFF plus the kept half's lowest
 * bit rounds the dropped 16 bits; a carry moves into the exponent (up to
 * infinity from the largest finite values), which is right. NaN is handled
 * first: the same add could carry its payload into the sign. */
static inline uint16_t rlx_bf16_from_f32(float f) {
  uint32_t u = rlx_bits_of_f32(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
  }
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* binary16 -> f32 (exact: every binary16 value is an f32). */
static inline float rlx_f32_from_f16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t biased = 113; /* f32 exponent of binary16's smallest normal */
  if (exp == 0x1F) {     /* infinity or NaN, payload kept */
    return rlx_f32_of_bits(sign | 0x7F800000u | (mant << 13));
  }
  if (exp != 0) {
    return rlx_f32_of_bits(sign | ((exp + 112) << 23) | (mant << 13));
  }
  if (mant == 0) return rlx_f32_of_bits(sign);
  /* Subnormal mant * 2^-24: shift the leading one up to the implicit bit. */
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --biased;
  }
  return rlx_f32_of_bits(sign | (biased << 23) | ((mant & 0x3FFu) << 13));
}

/* The binary16 magnitude nearest sig * 2^exp (sig < 2^62), ties to even:
 * the shared rounding step of the encoders below. The result is a multiple
 * of the quantum 2^q, q = max(floor(log2 value) - 10, -24) (11 significant
 * bits, or binary16's subnormal step). */
static inline uint16_t rlx_f16_round(uint64_t sig, int exp) {
  int top = 63, q, shift;
  uint64_t n;
  if (sig == 0) return 0;
  while ((sig >> top) == 0) --top;
  q = top + exp - 10;
  if (q < -24) q = -24;
  shift = q - exp;
  if (shift <= 0) {
    n = sig << -shift; /* exact: fewer than 11 significant bits */
  } else if (shift > 62) {
    n = 0; /* below a quarter of the quantum */
  } else {
    const uint64_t rest = sig & ((UINT64_C(1) << shift) - 1);
    const uint64_t half = UINT64_C(1) << (shift - 1);
    n = sig >> shift;
    if (rest > half || (rest == half && (n & 1) != 0)) ++n;
  }
  if (n < 0x400) return (uint16_t)n; /* subnormal or zero (q == -24) */
  if (n == 0x800) {                  /* rounding carried into the next binade */
    n = 0x400;
    ++q;
  }
  if (q + 25 >= 31) return 0x7C00; /* infinity */
  return (uint16_t)(((unsigned)(q + 25) << 10) | (unsigned)(n - 0x400));
}

/* f32 -> binary16, nearest even. */
static inline uint16_t rlx_f16_from_f32(float f) {
  const uint32_t u = rlx_bits_of_f32(f);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t exp = (u >> 23) & 0xFFu, mant = u & 0x7FFFFFu;
  if (exp == 0xFF) { /* infinity, or NaN made quiet with its top payload */
    return (uint16_t)(sign | 0x7C00u |
                      (mant != 0 ? 0x200u | (mant >> 13) : 0u));
  }
  if (exp == 0) return (uint16_t)(sign | rlx_f16_round(mant, -149));
  return (uint16_t)(sign | rlx_f16_round(mant | 0x800000u, (int)exp - 150));
}

/* f64 -> binary16 in a single rounding (no intermediate f32), for the
 * oracle, which computes in double and rounds once to the row type. */
static inline uint16_t rlx_f16_from_f64(double x) {
  uint64_t u;
  uint16_t sign;
  uint64_t exp, mant;
  memcpy(&u, &x, sizeof(u));
  sign = (uint16_t)((u >> 48) & 0x8000u);
  exp = (u >> 52) & 0x7FFu;
  mant = u & ((UINT64_C(1) << 52) - 1);
  if (exp == 0x7FF) {
    return (uint16_t)(sign | 0x7C00u |
                      (mant != 0 ? 0x200u | (unsigned)(mant >> 42) : 0u));
  }
  if (exp == 0) return (uint16_t)(sign | rlx_f16_round(mant, -1074));
  return (uint16_t)(sign |
                    rlx_f16_round(mant | (UINT64_C(1) << 52), (int)exp - 1075));
}

#endif /* RLX_SRC_UTIL_HALF_CODEC_H_ */
