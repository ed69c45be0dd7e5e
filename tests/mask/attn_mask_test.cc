// SPDX-License-Identifier: MIT OR Apache-2.0
// The seed's tests (attn_mask.rs, `mod tests`), ported under names that say
// the same thing, plus the ladder seam over more ladders, property tests of
// the SIMD fill against the scalar reference, and the error cases. Every test
// here runs once per supported target.
#include "rlx/attn_mask.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "tests/common/per_target.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Where a mask lets attention land: the indices scored 1.0.
std::vector<std::size_t> Attended(const std::vector<float>& mask) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] == 1.0f) out.push_back(i);
  }
  return out;
}

std::uint32_t Bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

class DecodeMaskTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(DecodeMaskTest);

// Seed: the_decode_mask_covers_the_real_past_and_the_new_token.
TEST_P(DecodeMaskTest, CoversTheRealPastAndTheNewToken) {
  // The shape is [past keys .. upper, new token]; the slots between past_seq
  // and upper are padding holding whatever the last longer sequence left
  // there: attending to them is a wrong answer nobody sees.
  const std::vector<float> m = bucket_decode_mask(3, 7);
  ASSERT_EQ(m.size(), 8u) << "mask is upper + 1 wide";
  EXPECT_THAT(Attended(m), ElementsAre(0, 1, 2, 7))
      << "3 real past keys and the new token";
  EXPECT_THAT(std::vector<float>(m.begin() + 3, m.begin() + 7),
              ElementsAre(0.0f, 0.0f, 0.0f, 0.0f))
      << "padding is masked out";
}

// Seed: a_full_bucket_leaves_no_padding_to_mask.
TEST_P(DecodeMaskTest, AFullBucketLeavesNoPaddingToMask) {
  const std::vector<float> m = bucket_decode_mask(4, 4);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_THAT(Attended(m), ElementsAre(0, 1, 2, 3, 4));
}

// Seed: the_first_token_attends_only_to_itself.
TEST_P(DecodeMaskTest, TheFirstTokenAttendsOnlyToItself) {
  EXPECT_THAT(Attended(bucket_decode_mask(0, 3)), ElementsAre(3))
      << "nothing cached yet";
}

// Seed: windowed_mask_reduces_to_causal_when_wide.
TEST_P(DecodeMaskTest, WindowedMaskReducesToCausalWhenWide) {
  EXPECT_EQ(bucket_decode_mask_windowed(5, 8, 100), bucket_decode_mask(5, 8));
}

// Seed: a_window_of_zero_means_no_window_at_all.
TEST_P(DecodeMaskTest, AWindowOfZeroMeansNoWindowAtAll) {
  const std::pair<std::size_t, std::size_t> cases[] = {
      {0, 3}, {1, 3}, {4, 4}, {5, 8}, {8, 8}};
  for (const auto& [past, upper] : cases) {
    EXPECT_EQ(bucket_decode_mask_windowed(past, upper, 0),
              bucket_decode_mask(past, upper))
        << "window 0 should be causal: past=" << past << " upper=" << upper;
    EXPECT_EQ(bucket_decode_mask_windowed(past, upper, past + 1),
              bucket_decode_mask(past, upper))
        << "a window wider than the past should be causal: past=" << past
        << " upper=" << upper;
  }
}

// Seed: a_window_never_attends_to_padding_either.
TEST_P(DecodeMaskTest, AWindowNeverAttendsToPaddingEither) {
  for (std::size_t upper : {1u, 4u, 7u, 16u}) {
    for (std::size_t past = 0; past <= upper; ++past) {
      for (std::size_t window : {std::size_t{0}, std::size_t{1}, std::size_t{2},
                                 std::size_t{3}, upper, upper + 5}) {
        const std::vector<float> m =
            bucket_decode_mask_windowed(past, upper, window);
        ASSERT_EQ(m.size(), upper + 1)
            << "past=" << past << " upper=" << upper << " window=" << window;
        for (std::size_t i = past; i < upper; ++i) {
          ASSERT_EQ(m[i], 0.0f)
              << "padding at " << i << " attended: past=" << past
              << " upper=" << upper << " window=" << window;
        }
        ASSERT_EQ(m[upper], 1.0f) << "the new token must always be attended";
      }
    }
  }
}

// Seed: windowed_mask_drops_old_keys.
TEST_P(DecodeMaskTest, WindowedMaskDropsOldKeys) {
  // past_seq=5, window=2: keys [3, 4] and the new token at upper.
  EXPECT_THAT(bucket_decode_mask_windowed(5, 6, 2),
              ElementsAre(0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 1.0f));
  //                       0     1     2     3     4    pad  new(=upper)
}

struct NamedLadder {
  std::string name;
  BucketLadder ladder;
};

std::vector<NamedLadder> EveryLadder() {
  std::vector<NamedLadder> ladders;
  // The seed's five.
  ladders.push_back({"pow2 1..512", BucketLadder::power_of_two(1, 512)});
  ladders.push_back({"pow2 1..1", BucketLadder::power_of_two(1, 1)});
  ladders.push_back({"geometric 512/3", BucketLadder::geometric(512, 3)});
  ladders.push_back({"geometric 512/1", BucketLadder::geometric(512, 1)});
  ladders.push_back({"geometric 4096/5", BucketLadder::geometric(4096, 5)});
  // And docs/SEMANTICS.md's examples, plus a custom ladder with gaps.
  ladders.push_back({"pow2 8..256", BucketLadder::power_of_two(8, 256)});
  ladders.push_back({"pow2 10..64", BucketLadder::power_of_two(10, 64)});
  ladders.push_back(
      {"custom with gaps",
       BucketLadder({{1, 5}, {8, 17}, {20, 33}, {40, 41}, {64, 100}})});
  return ladders;
}

// Seed: every_bucket_of_every_ladder_masks_its_padding, over more ladders
// and with the windowed masks too. The seam between two modules: the ladder
// decides the bucket extents and the mask what the graph may attend to at
// that extent. For any `past` the ladder routes to a bucket, the mask at that
// bucket's extent must attend to exactly the real keys the window admits
// plus the new token, and nothing else; the SIMD fill must equal the scalar
// reference bit for bit.
TEST_P(DecodeMaskTest, EveryBucketOfEveryLadderMasksItsPadding) {
  for (const NamedLadder& named : EveryLadder()) {
    const auto buckets = named.ladder.buckets();
    const std::uint64_t max = buckets.back().upper();
    std::vector<float> got, want;
    std::size_t routed = 0;
    for (std::uint64_t past = 0; past <= max; ++past) {
      // 0 past keys still routes somewhere: the key is the length being
      // run, which is at least 1.
      const std::uint64_t key = past < 1 ? 1 : past;
      const std::optional<std::size_t> index = named.ladder.bucket_for(key);
      bool in_a_bucket = false;
      for (const Bucket& b : buckets)
        in_a_bucket |= b.start <= key && key < b.end;
      ASSERT_EQ(index.has_value(), in_a_bucket)
          << named.name << ": past=" << past;
      if (!index) continue;  // a gap of a custom ladder
      ++routed;
      const std::size_t upper = buckets[*index].upper();
      ASSERT_LE(past, upper) << named.name << ": past=" << past
                             << " routed to a bucket ending at " << upper;
      for (std::size_t window : {std::size_t{0}, std::size_t{1}, std::size_t{2},
                                 std::size_t{3}, upper, upper + 5}) {
        got.assign(upper + 1, std::numeric_limits<float>::quiet_NaN());
        fill_bucket_decode_mask(got, past, upper, window);
        want.assign(upper + 1, -1.0f);
        reference::decode_mask(want.data(), past, upper, window);
        const std::size_t lo =
            window == 0 || window >= past ? 0 : past - window;
        for (std::size_t i = 0; i <= upper; ++i) {
          const bool keep = (i >= lo && i < past) || i == upper;
          ASSERT_EQ(got[i], keep ? 1.0f : 0.0f)
              << named.name << ": past=" << past << " upper=" << upper
              << " window=" << window << " at " << i;
        }
        ASSERT_EQ(
            0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << named.name << ": SIMD and reference differ, past=" << past
            << " upper=" << upper << " window=" << window;
      }
      // The seed checks the allocating causal form itself.
      want.assign(upper + 1, -1.0f);
      reference::decode_mask(want.data(), past, upper, 0);
      ASSERT_EQ(bucket_decode_mask(past, upper), want)
          << named.name << ": past=" << past << " upper=" << upper;
    }
    EXPECT_GT(routed, 0u) << named.name;
  }
}

// Random shapes up to 2^18 wide, written at unaligned offsets inside a
// NaN-filled buffer: the fill equals the reference bit for bit and writes
// nothing outside its span.
TEST_P(DecodeMaskTest, FillMatchesReferenceOnRandomShapesAndOffsets) {
  std::mt19937_64 rng(0x5eed + GetParam().size());
  constexpr std::size_t kGuard = 64;
  const float kCanary = std::numeric_limits<float>::quiet_NaN();
  const int iterations = testing::ScaledIterations(300);
  std::vector<float> buffer, want;
  for (int it = 0; it < iterations; ++it) {
    // Log-uniform widths, so that short tails and long runs both appear.
    const int log_width = static_cast<int>(rng() % 19);  // 0..18
    const std::size_t upper =
        (std::size_t{1} << log_width) - 1 + rng() % 3;  // up to 2^18 + 1
    const std::size_t past = rng() % (upper + 1);
    const std::size_t window_choices[] = {0, 1, rng() % (upper + 2), upper + 7};
    const std::size_t window = window_choices[rng() % 4];
    const std::size_t offset = rng() % 17;  // floats: misaligned by 4 bytes
    buffer.assign(kGuard + offset + upper + 1 + kGuard, kCanary);
    float* out = buffer.data() + kGuard + offset;
    fill_bucket_decode_mask({out, upper + 1}, past, upper, window);
    want.assign(upper + 1, -1.0f);
    reference::decode_mask(want.data(), past, upper, window);
    ASSERT_EQ(0, std::memcmp(out, want.data(), want.size() * sizeof(float)))
        << "past=" << past << " upper=" << upper << " window=" << window
        << " offset=" << offset;
    for (std::size_t i = 0; i < kGuard + offset; ++i) {
      ASSERT_EQ(Bits(buffer[i]), Bits(kCanary)) << "wrote before the span";
    }
    for (std::size_t i = kGuard + offset + upper + 1; i < buffer.size(); ++i) {
      ASSERT_EQ(Bits(buffer[i]), Bits(kCanary)) << "wrote past the span";
    }
  }
}

// Every width 1..3N+1 of the widest vector (16 f32 lanes on AVX3, 64 on
// 2048-bit SVE), every past and a few windows, at misalignments
// {0, N/4, 3N/5}: all whole-vector / tail splits.
TEST_P(DecodeMaskTest, FillMatchesReferenceAtEveryTailLength) {
  constexpr std::size_t kMaxLanes = 64;
  constexpr std::size_t kGuard = 8;
  const float kCanary = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> buffer, want;
  for (std::size_t misalign :
       {std::size_t{0}, kMaxLanes / 4, 3 * kMaxLanes / 5}) {
    for (std::size_t width = 1; width <= 3 * kMaxLanes + 1; ++width) {
      const std::size_t upper = width - 1;
      for (std::size_t past = 0; past <= upper; ++past) {
        for (std::size_t window : {std::size_t{0}, std::size_t{1},
                                   std::size_t{5}, std::size_t{17}}) {
          buffer.assign(kGuard + misalign + width + kGuard, kCanary);
          float* out = buffer.data() + kGuard + misalign;
          fill_bucket_decode_mask({out, width}, past, upper, window);
          want.assign(width, -1.0f);
          reference::decode_mask(want.data(), past, upper, window);
          ASSERT_EQ(0, std::memcmp(out, want.data(), width * sizeof(float)))
              << "past=" << past << " upper=" << upper << " window=" << window
              << " misalign=" << misalign;
          ASSERT_EQ(Bits(out[-1]), Bits(kCanary));
          ASSERT_EQ(Bits(out[width]), Bits(kCanary));
        }
      }
    }
  }
}

// Bad input throws std::invalid_argument naming the function and the values,
// and writes nothing.
TEST_P(DecodeMaskTest, RejectsPastBeyondUpperAndWritesNothing) {
  std::vector<float> out(5, 42.0f);
  try {
    fill_bucket_decode_mask(out, 5, 4);
    FAIL() << "past > upper was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("fill_bucket_decode_mask"));
    EXPECT_THAT(e.what(), HasSubstr("past_seq 5"));
    EXPECT_THAT(e.what(), HasSubstr("upper 4"));
  }
  EXPECT_THAT(out, ::testing::Each(42.0f)) << "a rejected call wrote";
  EXPECT_THROW(bucket_decode_mask(4, 3), std::invalid_argument);
  EXPECT_THROW(bucket_decode_mask_windowed(9, 8, 2), std::invalid_argument);
}

TEST_P(DecodeMaskTest, RejectsAWrongOutputSizeAndWritesNothing) {
  for (std::size_t size : {0u, 4u, 6u, 100u}) {
    std::vector<float> out(size, 42.0f);
    try {
      fill_bucket_decode_mask(out, 2, 4, 1);
      FAIL() << "out.size() " << size << " was accepted for upper 4";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("fill_bucket_decode_mask"));
      EXPECT_THAT(e.what(), HasSubstr("out.size() " + std::to_string(size)));
      EXPECT_THAT(e.what(), HasSubstr("upper + 1 = 5"));
    }
    EXPECT_THAT(out, ::testing::Each(42.0f)) << "a rejected call wrote";
  }
  // upper + 1 would wrap to 0 and match an empty span.
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(fill_bucket_decode_mask({}, 0, kMax), std::invalid_argument);
  EXPECT_THROW(bucket_decode_mask(0, kMax), std::invalid_argument);
}

}  // namespace
}  // namespace rlx
