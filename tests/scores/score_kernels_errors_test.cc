// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask, masked_softmax and kept_keys on bad input, once per supported
// target: each rejected call throws naming the values and writes nothing;
// views and masks whose element count or byte span exceeds PTRDIFF_MAX are
// rejected before a byte is touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/scores/score_kernels_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::testing::HasSubstr;

class ScoreKernelsTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(ScoreKernelsTest);

TEST_P(ScoreKernelsTest, BadInputThrowsNamingTheValuesAndWritesNothing) {
  std::vector<float> s(64, 3.0f);
  const std::vector<float> before = s;
  const Shape4 shape{1, 2, 2, 8};
  const ScoreView good = ScoreView::f32(s.data(), shape);
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  ScoreView null_data = good;
  null_data.data = nullptr;
  expect([&] { masked_softmax(null_data, MaskSpec::none()); },
         "masked_softmax: scores.data is null");
  expect([&] { apply_mask(null_data, MaskSpec::none()); },
         "apply_mask: scores.data is null");
  ScoreView zero_k = good;
  zero_k.shape.k_len = 0;
  expect([&] { apply_mask(zero_k, MaskSpec::causal()); }, "k_len is 0");
  ScoreView narrow = good;
  narrow.strides.row = 7;
  expect([&] { masked_softmax(narrow, MaskSpec::causal()); },
         "row stride 7 is below k_len 8");
  expect([&] { masked_softmax(good, MaskSpec::decode(8, 7)); },
         "decode mask past 8 exceeds upper 7");
  expect([&] { apply_mask(good, MaskSpec::decode(2, 9)); },
         "decode mask upper 9 needs k_len upper + 1, but k_len is 8");
  const std::vector<float> m(3 * 8, 1.0f);
  expect(
      [&] {
        apply_mask(good, MaskSpec::keep(m.data(), {1, 3, 1, 8}));
      },
      "mask shape [1, 3, 1, 8] does not broadcast to scores [1, 2, 2, 8]");
  expect(
      [&] {
        apply_mask(good, MaskSpec::keep(m.data(), {1, 1, 1, 7}));
      },
      "does not broadcast");
  expect(
      [&] {
        apply_mask(good,
                   MaskSpec::keep(static_cast<float*>(nullptr), {1, 1, 1, 8}));
      },
      "dense mask data is null");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {}, RowRange{2, 5});
      },
      "row range [2, 5) is not within the 4 rows");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {NAN, 0.0f});
      },
      "scale nan is not finite");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {1.0f, -1.0f});
      },
      "softcap -1.000000 must be finite and >= 0");
  std::vector<std::uint16_t> half(64);
  ScoreView bf = ScoreView::bf16s(reinterpret_cast<bf16*>(half.data()), shape);
  expect(
      [&] {
        masked_softmax(good, bf, MaskSpec::none(), {}, RowRange::all(shape));
      },
      "in and out differ in type");
  EXPECT_THAT(ErrorOf([] { kept_keys(MaskSpec::causal(), 0, 3, 3, 8); }),
              HasSubstr("kept_keys: query row 3 is not below q_len 3"));
}

// Views whose element count or byte span exceeds PTRDIFF_MAX cannot exist;
// offsets into them would wrap to small, wrong addresses. Each is rejected
// by name and value before a byte of the 64-float buffer is touched.
TEST(ImpossibleViewsTest, ScoreViewsBeyondPtrdiffMaxAreRejected) {
  constexpr std::size_t kMax = PTRDIFF_MAX;
  constexpr std::size_t k2p61 = std::size_t{1} << 61;
  constexpr std::size_t k2p62 = std::size_t{1} << 62;
  constexpr std::size_t k2p63 = std::size_t{1} << 63;
  const std::string max = "PTRDIFF_MAX (9223372036854775807)";
  std::vector<float> s(64, 3.0f);
  const std::vector<float> before = s;
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  // The byte offset of batch 1, 2^61 floats in, is 2^63.
  const ScoreView far_batch =
      ScoreView::f32(s.data(), {2, 1, 1, 8}, {k2p61, 8, 8});
  const std::string far_batch_error =
      "scores shape [2, 1, 1, 8] at strides [2305843009213693952, 8, 8] "
      "spans more than " +
      max + " bytes of 4-byte elements";
  expect([&] { masked_softmax(far_batch, MaskSpec::none()); },
         "masked_softmax: " + far_batch_error);
  expect([&] { apply_mask(far_batch, MaskSpec::causal()); },
         "apply_mask: " + far_batch_error);
  // One row of 2^63 keys.
  const ScoreView huge_row =
      ScoreView::f32(s.data(), {1, 1, 1, k2p63}, {0, 0, k2p63});
  expect([&] { masked_softmax(huge_row, MaskSpec::none()); },
         "masked_softmax: scores shape [1, 1, 1, 9223372036854775808] has "
         "more than " +
             max + " elements");
  // batch * heads wraps to 0 rows (and to 4 rows with 2^62 + 1 batches).
  expect(
      [&] {
        masked_softmax(ScoreView::f32(s.data(), {k2p62, 8, 1, 8}),
                       MaskSpec::none());
      },
      "masked_softmax: scores shape [4611686018427387904, 8, 1, 8] has "
      "more than " +
          max + " elements");
  expect(
      [&] {
        apply_mask(ScoreView::f32(s.data(), {k2p62 + 1, 4, 1, 8}),
                   MaskSpec::none());
      },
      "apply_mask: scores shape [4611686018427387905, 4, 1, 8] has more "
      "than " +
          max + " elements");
  // A head stride times its extent past the limit, and a bf16 row of 2^62
  // keys (2^63 bytes; as f32 elements it would still be countable).
  expect(
      [&] {
        masked_softmax(ScoreView::f32(s.data(), {1, 3, 1, 8}, {0, kMax / 2, 8}),
                       MaskSpec::none());
      },
      "at strides [0, 4611686018427387903, 8] spans more than");
  std::vector<std::uint16_t> half(64);
  const ScoreView bf_row{
      half.data(), ScoreType::kBF16, {1, 1, 1, k2p62}, {0, 0, k2p62}};
  EXPECT_THAT(ErrorOf([&] { apply_mask(bf_row, MaskSpec::none()); }),
              HasSubstr("bytes of 2-byte elements"));
  // Out of place: the view that cannot exist is named.
  const ScoreView good = ScoreView::f32(s.data(), {2, 1, 1, 8});
  expect(
      [&] {
        masked_softmax(good, far_batch, MaskSpec::none(), {}, RowRange{0, 2});
      },
      "masked_softmax: out shape [2, 1, 1, 8] at strides");
  // The limit itself: the largest f32 row that fits is accepted (an empty
  // row range touches nothing), one key more is not.
  const ScoreView largest =
      ScoreView::f32(s.data(), {1, 1, 1, kMax / 4}, {0, 0, kMax / 4});
  EXPECT_EQ(ErrorOf([&] {
              apply_mask(largest, MaskSpec::none(), {0, 0});
            }),
            "(no error)");
  ScoreView too_large = largest;
  too_large.shape.k_len = kMax / 4 + 1;
  expect(
      [&] {
        apply_mask(too_large, MaskSpec::none(), {0, 0});
      },
      "spans more than");
}

TEST(ImpossibleViewsTest, DenseMasksBeyondPtrdiffMaxAreRejected) {
  constexpr std::size_t kMax = PTRDIFF_MAX;
  constexpr std::size_t k2p61 = std::size_t{1} << 61;
  std::vector<float> s(16, 3.0f);
  const std::vector<float> before = s;
  const ScoreView scores = ScoreView::f32(s.data(), {2, 1, 1, 8});
  const std::vector<float> m(16, 1.0f);
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  const std::string far =
      "mask shape [2, 1, 1, 8] at strides [2305843009213693952, 8, 8] spans "
      "more than PTRDIFF_MAX (9223372036854775807) bytes of 4-byte elements";
  for (const MaskSpec& mask :
       {MaskSpec::keep(m.data(), {2, 1, 1, 8}).with_strides({k2p61, 8, 8}),
        MaskSpec::bias(m.data(), {2, 1, 1, 8}).with_strides({k2p61, 8, 8})}) {
    expect([&] { apply_mask(scores, mask); }, "apply_mask: " + far);
    expect([&] { masked_softmax(scores, mask); }, "masked_softmax: " + far);
    expect([&] { kept_keys(mask, 1, 0, 1, 8); }, "kept_keys: " + far);
  }
  // u8 masks count single bytes: a batch stride of 2^63 - 8 plus 8 keys is
  // 2^63 bytes, one too many; 2^63 - 9 fits.
  const std::vector<std::uint8_t> u8(16, 1);
  const MaskSpec u8_far =
      MaskSpec::keep(u8.data(), {2, 1, 1, 8}).with_strides({kMax - 7, 8, 8});
  expect([&] { apply_mask(scores, u8_far); },
         "apply_mask: mask shape [2, 1, 1, 8] at strides "
         "[9223372036854775800, 8, 8] spans more than PTRDIFF_MAX "
         "(9223372036854775807) bytes of 1-byte elements");
  const MaskSpec u8_fits =
      MaskSpec::keep(u8.data(), {2, 1, 1, 8}).with_strides({kMax - 8, 8, 8});
  EXPECT_EQ(ErrorOf([&] {
              apply_mask(scores, u8_fits, RowRange{0, 0});
            }),
            "(no error)");
  // Mask extents whose product wraps.
  const Shape4 wraps{std::size_t{1} << 62, 8, 1, 8};
  const ScoreView wide{s.data(), ScoreType::kF32, wraps, {0, 0, 8}};
  expect([&] { apply_mask(wide, MaskSpec::keep(m.data(), wraps)); },
         "scores shape [4611686018427387904, 8, 1, 8] has more than");
  expect([&] { kept_keys(MaskSpec::keep(m.data(), wraps), 0, 0, 1, 8); },
         "kept_keys: mask shape [4611686018427387904, 8, 1, 8] has more "
         "than PTRDIFF_MAX (9223372036854775807) elements");
}

TEST(ImpossibleViewsTest, KeptKeysRejectsRowsOfImpossibleTensors) {
  constexpr std::size_t kMaxIndex = std::numeric_limits<std::size_t>::max();
  EXPECT_THAT(ErrorOf([] {
                kept_keys(MaskSpec::causal(), 0, 0, 1, std::size_t{1} << 63);
              }),
              HasSubstr("kept_keys: batch_index 0, q_len 1 and k_len "
                        "9223372036854775808 describe a tensor of more than "
                        "PTRDIFF_MAX (9223372036854775807) elements"));
  EXPECT_THAT(
      ErrorOf([] { kept_keys(MaskSpec::causal(), kMaxIndex, 0, 1, 8); }),
      HasSubstr("kept_keys: batch_index 18446744073709551615"));
  EXPECT_THAT(ErrorOf([] {
                kept_keys(MaskSpec::causal(), std::size_t{1} << 60, 0, 4, 8);
              }),
              HasSubstr("describe a tensor of more than"));
  // Query offsets at the ends of int64 place the row after every key or
  // before key 0, without overflow.
  const std::int64_t last = std::numeric_limits<std::int64_t>::max();
  const std::int64_t first = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(kept_keys(MaskSpec::causal().with_query_offsets(&last), 0, 7, 8, 8),
            (KeptKeys{{KeyInterval{0, 8}, KeyInterval{}}, 1}));
  EXPECT_EQ(kept_keys(MaskSpec::sliding_window(3).with_query_offsets(&last), 0,
                      7, 8, 8)
                .count,
            0u)
      << "a window far past the last key keeps none of them";
  EXPECT_EQ(kept_keys(MaskSpec::causal().with_query_offsets(&first), 0, 7, 8, 8)
                .count,
            0u);
}

}  // namespace
}  // namespace rlx
