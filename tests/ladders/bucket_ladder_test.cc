// SPDX-License-Identifier: MIT OR Apache-2.0
// Ladders and the per-bucket cache: docs/SEMANTICS.md's examples, exact extents
// of large ladders with routing at every bucket edge, and every error.
#include "rlx/bucket_ladder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rlx/bucketed_cache.h"
#include "tests/common/error_of.h"

namespace rlx {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<std::uint64_t> Extents(const BucketLadder& ladder) {
  std::vector<std::uint64_t> extents;
  for (const Bucket& b : ladder.buckets()) extents.push_back(b.upper());
  return extents;
}

// Ladders built from extents cover [1, last] with no gap: each bucket starts
// one past the previous extent.
void ExpectContiguousFromOne(const BucketLadder& ladder) {
  std::uint64_t start = 1;
  for (const Bucket& b : ladder.buckets()) {
    EXPECT_EQ(b.start, start);
    start = b.end;
  }
}

// Routing at every bucket edge: start - 1, start, upper, end.
void ExpectRoutingAtEveryEdge(const BucketLadder& ladder) {
  const auto buckets = ladder.buckets();
  EXPECT_EQ(ladder.bucket_for(0), std::nullopt);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = buckets[i];
    EXPECT_EQ(ladder.bucket_for(b.start), i) << "start of bucket " << i;
    EXPECT_EQ(ladder.bucket_for(b.upper()), i) << "upper of bucket " << i;
    if (b.start + 1 < b.end) {
      EXPECT_EQ(ladder.bucket_for(b.start + (b.end - b.start) / 2), i);
    }
    const bool last = i + 1 == buckets.size();
    const std::optional<std::size_t> next =
        (!last && buckets[i + 1].start == b.end) ? std::optional(i + 1)
                                                 : std::nullopt;
    EXPECT_EQ(ladder.bucket_for(b.end), next) << "end of bucket " << i;
  }
  EXPECT_EQ(ladder.bucket_for(std::numeric_limits<std::uint64_t>::max()),
            std::nullopt);
}

TEST(BucketLadderTest, PowerOfTwoMatchesTheSeed) {
  EXPECT_THAT(BucketLadder::power_of_two(8, 256).buckets(),
              ElementsAre(Bucket{1, 9}, Bucket{9, 17}, Bucket{17, 33},
                          Bucket{33, 65}, Bucket{65, 129}, Bucket{129, 257}));
  EXPECT_THAT(BucketLadder::power_of_two(1, 1).buckets(),
              ElementsAre(Bucket{1, 2}));
  EXPECT_THAT(Extents(BucketLadder::power_of_two(10, 64)),
              ElementsAre(16, 32, 64));
  EXPECT_THAT(Extents(BucketLadder::power_of_two(8, 20)),
              ElementsAre(8, 16, 32));
  EXPECT_THAT(Extents(BucketLadder::power_of_two(1, 512)),
              ElementsAre(1, 2, 4, 8, 16, 32, 64, 128, 256, 512));
}

TEST(BucketLadderTest, GeometricMatchesTheSeed) {
  EXPECT_THAT(Extents(BucketLadder::geometric(512, 3)),
              ElementsAre(8, 64, 512));
  EXPECT_THAT(Extents(BucketLadder::geometric(512, 1)), ElementsAre(512));
  EXPECT_THAT(Extents(BucketLadder::geometric(4096, 5)),
              ElementsAre(6, 28, 148, 777, 4096));
  EXPECT_THAT(Extents(BucketLadder::geometric(1, 1)), ElementsAre(1));
  for (auto [max, count] : {std::pair<std::uint64_t, std::uint64_t>{512, 3},
                            {4096, 5},
                            {1000, 7}}) {
    ExpectContiguousFromOne(BucketLadder::geometric(max, count));
  }
}

// Each extent is the smallest e with e^count >= max^i, checked here with
// exact integer powers where they fit in 128 bits.
TEST(BucketLadderTest, GeometricExtentsAreExactCeilings) {
  const auto pow = [](unsigned __int128 b, std::uint64_t n) {
    unsigned __int128 r = 1;
    while (n--) r *= b;
    return r;
  };
  for (std::uint64_t max : {2u, 3u, 10u, 64u, 100u, 512u, 1000u, 4096u}) {
    for (std::uint64_t count = 1; count <= 5; ++count) {
      std::vector<std::uint64_t> want;
      for (std::uint64_t i = 1; i <= count; ++i) {
        std::uint64_t e = 1;
        while (pow(e, count) < pow(max, i)) ++e;
        if (want.empty() || e > want.back()) want.push_back(e);
      }
      EXPECT_THAT(Extents(BucketLadder::geometric(max, count)),
                  ElementsAreArray(want))
          << "max=" << max << " count=" << count;
    }
  }
}

// Dropping: with more steps than distinct integers, extents still strictly
// increase and end at max.
TEST(BucketLadderTest, GeometricDropsRepeatedExtents) {
  EXPECT_THAT(Extents(BucketLadder::geometric(4, 10)), ElementsAre(2, 3, 4));
  EXPECT_THAT(Extents(BucketLadder::geometric(2, 5)), ElementsAre(2));
}

TEST(BucketLadderTest, LargeLaddersHaveExactExtentsAndRouteAtEveryEdge) {
  // 10^6^(2/4) = 1000 exactly: a float pow may land on 1000.0000001 and
  // round up to 1001.
  const BucketLadder geometric = BucketLadder::geometric(1000000, 4);
  EXPECT_THAT(Extents(geometric), ElementsAre(32, 1000, 31623, 1000000));
  ExpectContiguousFromOne(geometric);
  ExpectRoutingAtEveryEdge(geometric);

  const BucketLadder pow2 =
      BucketLadder::power_of_two(1, std::uint64_t{1} << 40);
  std::vector<std::uint64_t> want;
  for (int s = 0; s <= 40; ++s) want.push_back(std::uint64_t{1} << s);
  EXPECT_THAT(Extents(pow2), ElementsAreArray(want));
  ExpectContiguousFromOne(pow2);
  ExpectRoutingAtEveryEdge(pow2);

  // Perfect powers near 2^64: 2^60 = (2^12)^5, so extents are powers of 2^12.
  EXPECT_THAT(Extents(BucketLadder::geometric(std::uint64_t{1} << 60, 5)),
              ElementsAre(std::uint64_t{1} << 12, std::uint64_t{1} << 24,
                          std::uint64_t{1} << 36, std::uint64_t{1} << 48,
                          std::uint64_t{1} << 60));
  // The top power of two: extent 2^63 itself is fine.
  EXPECT_EQ(
      Extents(BucketLadder::power_of_two(1, std::uint64_t{1} << 63)).back(),
      std::uint64_t{1} << 63);
}

TEST(BucketLadderTest, CustomLaddersKeepGapsUnrouted) {
  const BucketLadder ladder({{1, 5}, {8, 17}, {20, 33}});
  EXPECT_EQ(ladder.bucket_for(4), 0u);
  for (std::uint64_t gap : {5u, 6u, 7u, 17u, 19u, 33u, 1000u}) {
    EXPECT_EQ(ladder.bucket_for(gap), std::nullopt) << gap;
  }
  EXPECT_EQ(ladder.bucket_for(8), 1u);
  EXPECT_EQ(ladder.bucket_for(32), 2u);
  ExpectRoutingAtEveryEdge(ladder);
  // A ladder need not start at 1.
  EXPECT_EQ(BucketLadder({{10, 20}}).bucket_for(9), std::nullopt);
}

using testing::ErrorOf;

TEST(BucketLadderTest, RejectsBadLaddersNamingTheBucket) {
  EXPECT_THAT(ErrorOf([] { BucketLadder({}); }), HasSubstr("empty"));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder({{1, 4}, {4, 4}});
              }),
              HasSubstr("bucket 1 [4, 4) is empty"));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder({{5, 3}});
              }),
              HasSubstr("bucket 0 [5, 3) is empty"));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder({{1, 9}, {8, 17}});
              }),
              HasSubstr("bucket 1 [8, 17) overlaps or is out of order with "
                        "bucket 0 [1, 9)"));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder({{20, 30}, {1, 9}});
              }),
              HasSubstr("bucket 1 [1, 9)"));
}

TEST(BucketLadderTest, RejectsBadGeneratorArguments) {
  EXPECT_THAT(ErrorOf([] { BucketLadder::power_of_two(0, 8); }),
              HasSubstr("power_of_two(min=0, max=8): min must be >= 1"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::power_of_two(9, 8); }),
              HasSubstr("power_of_two(min=9, max=8): max must be >= min"));
  const std::uint64_t top = std::uint64_t{1} << 63;
  EXPECT_THAT(ErrorOf([&] { BucketLadder::power_of_two(1, top + 1); }),
              HasSubstr("overflows"));
  EXPECT_THAT(ErrorOf([&] { BucketLadder::power_of_two(top + 1, top + 1); }),
              HasSubstr("does not fit in 64 bits"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::geometric(0, 3); }),
              HasSubstr("geometric(max=0, count=3): max must be >= 1"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::geometric(512, 0); }),
              HasSubstr("geometric(max=512, count=0): count must be >= 1"));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder::geometric(
                    std::numeric_limits<std::uint64_t>::max(), 2);
              }),
              HasSubstr("overflows"));
}

TEST(BucketedCacheTest, BuildsEachBucketOnceAtItsUpper) {
  std::vector<std::uint64_t> built;
  BucketedCache<std::string> cache(BucketLadder::power_of_two(8, 64),
                                   [&](std::uint64_t upper) {
                                     built.push_back(upper);
                                     return "plan@" + std::to_string(upper);
                                   });
  EXPECT_EQ(cache.built_count(), 0u);
  auto [upper, plan] = cache.get(5);
  EXPECT_EQ(upper, 8u);
  EXPECT_EQ(plan, "plan@8");
  EXPECT_EQ(cache.get(8).second, "plan@8");
  EXPECT_EQ(cache.get(9).first, 16u);
  EXPECT_EQ(cache.get(64).second, "plan@64");
  EXPECT_THAT(built, ElementsAre(8, 16, 64)) << "one build per bucket";
  EXPECT_EQ(cache.built_count(), 3u);

  const std::string* kept = &cache.get(12).second;
  cache.retain_only(1);  // the bucket of upper 16
  EXPECT_EQ(cache.built_count(), 1u);
  EXPECT_TRUE(cache.is_built(1));
  EXPECT_EQ(&cache.get(16).second, kept) << "the retained artifact survives";
  cache.get(1);
  EXPECT_THAT(built, ElementsAre(8, 16, 64, 8)) << "dropped ones rebuild";
  cache.clear();
  EXPECT_EQ(cache.built_count(), 0u);
}

TEST(BucketedCacheTest, RejectsKeysOutsideTheLadderWithoutBuilding) {
  int builds = 0;
  BucketedCache<int> cache(BucketLadder({{1, 5}, {8, 9}}),
                           [&](std::uint64_t upper) {
                             ++builds;
                             return static_cast<int>(upper);
                           });
  EXPECT_THAT(ErrorOf([&] { cache.get(6); }),
              HasSubstr("BucketedCache::get: key 6 routes to no bucket"));
  EXPECT_THROW(cache.get(0), std::invalid_argument);
  EXPECT_THAT(ErrorOf([&] { cache.retain_only(2); }),
              HasSubstr("retain_only: index 2"));
  EXPECT_EQ(builds, 0);
  EXPECT_EQ(cache.get(8).second, 8);
}

}  // namespace
}  // namespace rlx
