// SPDX-License-Identifier: MIT OR Apache-2.0
// Pass 3's bf16 stores (src/util/row_convert-inl.h), on every target (Highway's
// per-target test pattern): StoreProbabilityPair, and StoreBF16PairsNatively
// where the target and CPU have AVX512_BF16, each store exactly the bf16 of
// src/util/half_codec.h of every product work[k] * inv_sum, bit for bit, for
// numbers (ties to even, carries into the exponent, overflow to inf,
// negative, zero, products that flush to zero under FlushToZeroScope) and
// the quiet NaN of a NaN row, from unaligned pointers and with odd counts.
// On an AVX-512 target whose CPU lacks AVX512_BF16 the native store cannot
// run: the test says so, and fails under CI=true.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/softmax/bf16_pairs_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/test_util-inl.h"
#include "src/dispatch/cpu_features.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/util/half_codec.h"
#include "src/util/row_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Values that probe the rounding, then random probabilities.
std::vector<float> PairTestValues(std::size_t count) {
  std::vector<std::uint32_t> bits = {
      0x3F800000u,  // 1
      0x3F808000u,  // a tie, even: stays 0x3F80
      0x3F818000u,  // a tie, odd: up to 0x3F82
      0x3F807FFFu,  // just below a tie: down
      0x3F808001u,  // just above: up
      0x3F7FFFFFu,  // carries into the exponent: 0x3F80
      0x7F7FFFFFu,  // FLT_MAX: rounds to inf
      0x00800000u,  // FLT_MIN
      0x00C00000u,  // 1.5 FLT_MIN: times 0.5 subnormal, 0 under FTZ
      0x00000000u,  // +0
      0x80000000u,  // -0
      0xBF818000u,  // negative, a tie
      0x7FC00000u,  // the quiet NaN of a NaN row
  };
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::uint32_t> probability(0x00800000u,
                                                           0x3F800000u);
  std::uniform_int_distribution<std::uint32_t> low(0, 2);
  while (bits.size() < count) {
    std::uint32_t b = probability(rng);
    // A third ties, a third one off a tie.
    const std::uint32_t kind = low(rng);
    if (kind == 0) b = (b & 0xFFFF0000u) | 0x8000u;
    if (kind == 1) b = (b & 0xFFFF0000u) | 0x7FFFu;
    bits.push_back(b);
  }
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = rlx_f32_of_bits(bits[i]);
  return values;
}

// The first mismatch of out[0, n) against the codec's bf16 of work * inv,
// or "".
std::string PairMismatch(const float* work, const std::uint16_t* out,
                         std::size_t n, float inv_sum, const char* what) {
  for (std::size_t k = 0; k < n; ++k) {
    // Scalar f32 product: under FlushToZeroScope it flushes as the vectors'.
    const float product = work[k] * inv_sum;
    const std::uint16_t want = rlx_bf16_from_f32(product);
    if (out[k] != want) {
      char line[200];
      std::snprintf(line, sizeof(line),
                    "%s: key %zu of %zu: %08x * %g gave %04x, want %04x", what,
                    k, n, rlx_bits_of_f32(work[k]), double{inv_sum}, out[k],
                    want);
      return line;
    }
  }
  return "";
}

void TestBF16PairsMatchTheCodec() {
  const FlushToZeroScope flush_to_zero;  // as pass 3 holds it
  const hn::ScalableTag<float> df;
  const std::size_t N = hn::Lanes(df);
  const bool native_here = RLX_NATIVE_BF16_PAIRS != 0;
  if (native_here && !detail::HasAvx512Bf16()) {
    std::fprintf(stderr,
                 "%s: this CPU has no AVX512_BF16; the native bf16 pair "
                 "store is not used here, and not tested\n",
                 hwy::TargetName(HWY_TARGET));
    const char* ci = std::getenv("CI");
    HWY_ASSERT(!(ci != nullptr && std::string(ci) == "true"));
  }
  const bool native = native_here && detail::HasAvx512Bf16();
  const std::vector<float> values = PairTestValues(600);
  std::vector<std::uint16_t> out(values.size() + 2);
  for (const float inv_sum : {1.0f, 0.5f, 0.3715f, 3.0f}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, 2 * N - 1, 2 * N,
                          2 * N + 1, 4 * N, 6 * N + 3, std::size_t{597}}) {
      for (std::size_t misalign : {0, 1}) {
        const float* work = values.data() + misalign;
        std::uint16_t* row = out.data() + misalign;
        // The native store: whole pairs, on AVX-512 CPUs with AVX512_BF16.
        std::fill(out.begin(), out.end(), std::uint16_t{0xDEAD});
        const std::size_t stored =
            StoreBF16PairsNatively(df, work, row, n, inv_sum);
        HWY_ASSERT_EQ(native ? n - n % (2 * N) : 0, stored);
        std::string bad = PairMismatch(work, row, stored, inv_sum, "native");
        if (!bad.empty()) HWY_ABORT("%s", bad.c_str());
        // Nothing past what it stored.
        HWY_ASSERT_EQ(std::uint16_t{0xDEAD}, row[stored]);
        // The portable pair, over the same pairs.
        std::fill(out.begin(), out.end(), std::uint16_t{0xDEAD});
        const auto inv = hn::Set(df, inv_sum);
        std::size_t k = 0;
        for (; k + 2 * N <= n; k += 2 * N) {
          StoreProbabilityPair<ScoreType::kBF16>(
              df, hn::Mul(hn::LoadU(df, work + k), inv),
              hn::Mul(hn::LoadU(df, work + k + N), inv), row + k);
        }
        bad = PairMismatch(work, row, k, inv_sum, "StoreProbabilityPair");
        if (!bad.empty()) HWY_ABORT("%s", bad.c_str());
      }
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "tests/common/per_target.h"

namespace rlx {
namespace {

RLX_PER_TARGET_HWY_TEST(BF16PairsTest, MatchTheCodec,
                        TestBF16PairsMatchTheCodec);

}  // namespace
}  // namespace rlx
#endif
