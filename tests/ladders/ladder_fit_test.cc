// SPDX-License-Identifier: MIT OR Apache-2.0
// BucketLadder::fit against a brute force over every ladder of small inputs
// (extents anywhere in [1, max], not only at observed lengths) and a plain
// O(K m^2) dynamic program on larger ones, for each cost model;
// BucketLadder::capped and least_max_padding against brute forces in exact
// rational arithmetic; every error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

std::vector<std::uint64_t> Extents(const BucketLadder& ladder) {
  std::vector<std::uint64_t> extents;
  for (const Bucket& b : ladder.buckets()) extents.push_back(b.upper());
  return extents;
}

// The ladder covers [1, last] without gaps: each bucket starts one past the
// previous extent.
void ExpectContiguousFromOne(const BucketLadder& ladder, std::uint64_t last) {
  std::uint64_t start = 1;
  for (const Bucket& b : ladder.buckets()) {
    EXPECT_EQ(b.start, start);
    start = b.end;
  }
  EXPECT_EQ(start, last + 1);
}

// sum over observations of cost(extent of the bucket holding the length),
// summed in the order of the histogram.
double PaddedCost(const std::vector<std::uint64_t>& extents,
                  const std::map<std::uint64_t, std::uint64_t>& histogram,
                  const LadderCost& cost) {
  double total = 0;
  for (const auto& [length, count] : histogram) {
    const auto e = std::lower_bound(extents.begin(), extents.end(), length);
    if (e == extents.end()) return std::numeric_limits<double>::infinity();
    total += static_cast<double>(count) * cost(*e);
  }
  return total;
}

struct CostModel {
  const char* name;
  LadderCost cost;
};

// Decode, prefill and a caller's cost with plateaus (a kernel that works
// in tiles of 4 keys, at least 8): plateaus make ties, which test the
// fewest-buckets rule.
std::vector<CostModel> CostModels() {
  return {
      {"decode", ladder_cost::decode},
      {"prefill", ladder_cost::prefill},
      {"tiles",
       [](std::uint64_t upper) {
         return 0.5 * static_cast<double>(
                          std::max<std::uint64_t>(8, (upper + 3) / 4 * 4));
       }},
  };
}

struct Best {
  double cost = std::numeric_limits<double>::infinity();
  std::size_t buckets = 0;  // fewest buckets among the least-cost ladders
};

// Every ladder of at most k buckets covering [1, max] without gaps: every
// set of extents in [1, max - 1] plus max.
Best BruteForce(const std::map<std::uint64_t, std::uint64_t>& histogram,
                std::size_t k, const LadderCost& cost) {
  const std::uint64_t max = histogram.rbegin()->first;
  Best best;
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << (max - 1)); ++mask) {
    std::vector<std::uint64_t> extents;
    for (std::uint64_t e = 1; e < max; ++e) {
      if (mask >> (e - 1) & 1) extents.push_back(e);
    }
    extents.push_back(max);
    if (extents.size() > k) continue;
    const double c = PaddedCost(extents, histogram, cost);
    if (c < best.cost - 1e-9 * c ||
        (c <= best.cost + 1e-9 * c && extents.size() < best.buckets)) {
      best = {std::min(c, best.cost), extents.size()};
    }
  }
  return best;
}

std::vector<LengthCount> ToCounts(
    const std::map<std::uint64_t, std::uint64_t>& histogram) {
  std::vector<LengthCount> counts;
  for (const auto& [length, count] : histogram) {
    counts.push_back({length, count});
  }
  return counts;
}

TEST(LadderFitTest, EqualsBruteForceOverEveryLadder) {
  std::mt19937_64 rng(12345);
  for (const CostModel& model : CostModels()) {
    for (int trial = 0; trial < 150; ++trial) {
      // Up to 8 observations of lengths in [1, 14]: at most 2^13 ladders.
      const std::uint64_t max = 1 + rng() % 14;
      std::vector<std::uint64_t> lengths;
      std::map<std::uint64_t, std::uint64_t> histogram;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) {
        const std::uint64_t len = 1 + rng() % max;
        const std::uint64_t times = 1 + rng() % 3;
        for (std::uint64_t t = 0; t < times; ++t) lengths.push_back(len);
        histogram[len] += times;
      }
      const std::uint64_t observed_max = histogram.rbegin()->first;
      for (std::size_t k = 1; k <= 5; ++k) {
        SCOPED_TRACE(std::string(model.name) + " trial " +
                     std::to_string(trial) + " k " + std::to_string(k));
        const BucketLadder fitted = BucketLadder::fit(lengths, k, model.cost);
        const Best best = BruteForce(histogram, k, model.cost);
        ExpectContiguousFromOne(fitted, observed_max);
        const std::vector<std::uint64_t> extents = Extents(fitted);
        EXPECT_LE(extents.size(), k);
        EXPECT_NEAR(PaddedCost(extents, histogram, model.cost), best.cost,
                    1e-9 * best.cost);
        EXPECT_EQ(extents.size(), best.buckets);
        for (std::uint64_t e : extents) EXPECT_EQ(histogram.count(e), 1u) << e;
        // The (length, count) form gives the same ladder.
        EXPECT_EQ(
            Extents(BucketLadder::fit(ToCounts(histogram), k, model.cost)),
            extents);
      }
    }
  }
}

// The textbook O(K m^2) program over the distinct lengths, no structure
// used: an oracle for inputs too large for the brute force.
double PlainProgram(const std::map<std::uint64_t, std::uint64_t>& histogram,
                    std::size_t k, const LadderCost& cost) {
  std::vector<double> g{0}, prefix{0};
  for (const auto& [length, count] : histogram) {
    g.push_back(cost(length));
    prefix.push_back(prefix.back() + static_cast<double>(count));
  }
  const std::size_t m = g.size() - 1;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prev(m + 1, inf);
  prev[0] = 0;
  for (std::size_t layer = 1; layer <= k; ++layer) {
    std::vector<double> cur(m + 1, inf);
    cur[0] = 0;
    for (std::size_t j = 1; j <= m; ++j) {
      for (std::size_t i = 1; i <= j; ++i) {
        cur[j] =
            std::min(cur[j], prev[i - 1] + g[j] * (prefix[j] - prefix[i - 1]));
      }
    }
    prev = cur;
  }
  return prev[m];
}

TEST(LadderFitTest, EqualsPlainProgramOnLargerInputs) {
  std::mt19937_64 rng(777);
  // Scalar code: the scaled legs run fewer trials of what release runs all of.
  const int trials = testing::ScaledIterations(4);
  for (const CostModel& model : CostModels()) {
    for (int trial = 0; trial < trials; ++trial) {
      // Log-normal-ish lengths: many short, a long tail.
      std::lognormal_distribution<double> dist(4.0 + trial, 1.0);
      std::map<std::uint64_t, std::uint64_t> histogram;
      std::vector<std::uint64_t> lengths;
      for (int i = 0; i < 3000; ++i) {
        const auto len =
            static_cast<std::uint64_t>(std::clamp(dist(rng), 1.0, 20000.0));
        lengths.push_back(len);
        ++histogram[len];
      }
      for (std::size_t k : {1, 2, 3, 7, 16, 40}) {
        SCOPED_TRACE(std::string(model.name) + " trial " +
                     std::to_string(trial) + " k " + std::to_string(k));
        const BucketLadder fitted = BucketLadder::fit(lengths, k, model.cost);
        const double expect = PlainProgram(histogram, k, model.cost);
        EXPECT_LE(fitted.size(), k);
        ExpectContiguousFromOne(fitted, histogram.rbegin()->first);
        EXPECT_NEAR(PaddedCost(Extents(fitted), histogram, model.cost), expect,
                    1e-12 * expect);
      }
    }
  }
}

TEST(LadderFitTest, SparseLongLengths) {
  // Lengths up to 10^12, far more than the observations: histogrammed by
  // sorting rather than by a table of every length.
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<std::uint64_t> lengths;
    std::map<std::uint64_t, std::uint64_t> histogram;
    for (int i = 0; i < 300; ++i) {
      const std::uint64_t len = 1 + rng() % (i % 3 == 0 ? 1000 : 1000000000000);
      lengths.push_back(len);
      ++histogram[len];
      if (i % 7 == 0) {  // repeats
        lengths.push_back(len);
        ++histogram[len];
      }
    }
    for (const CostModel& model : CostModels()) {
      for (std::size_t k : {1, 5, 30}) {
        const BucketLadder fitted = BucketLadder::fit(lengths, k, model.cost);
        EXPECT_EQ(Extents(fitted), Extents(BucketLadder::fit(
                                       ToCounts(histogram), k, model.cost)));
        const double expect = PlainProgram(histogram, k, model.cost);
        EXPECT_NEAR(PaddedCost(Extents(fitted), histogram, model.cost), expect,
                    1e-12 * expect);
      }
    }
  }
}

TEST(LadderFitTest, NeverWorseThanPowerOfTwoOrGeometric) {
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> dist(6.0, 1.2);
  std::vector<std::uint64_t> lengths;
  std::map<std::uint64_t, std::uint64_t> histogram;
  for (int i = 0; i < 100000; ++i) {
    const auto len =
        static_cast<std::uint64_t>(std::clamp(dist(rng), 1.0, 131072.0));
    lengths.push_back(len);
    ++histogram[len];
  }
  const std::uint64_t max = histogram.rbegin()->first;
  const BucketLadder pow2 = BucketLadder::power_of_two(1, max);
  const BucketLadder geo = BucketLadder::geometric(max, pow2.size());
  for (const CostModel& model : CostModels()) {
    SCOPED_TRACE(model.name);
    const BucketLadder fitted =
        BucketLadder::fit(lengths, pow2.size(), model.cost);
    const double fitted_cost =
        PaddedCost(Extents(fitted), histogram, model.cost);
    EXPECT_LE(fitted_cost, PaddedCost(Extents(pow2), histogram, model.cost));
    EXPECT_LE(fitted_cost, PaddedCost(Extents(geo), histogram, model.cost));
  }
}

TEST(LadderFitTest, OneLengthIsOneBucket) {
  const std::vector<std::uint64_t> lengths{37, 37, 37};
  for (const CostModel& model : CostModels()) {
    for (std::size_t k : {1, 2, 100}) {
      const BucketLadder fitted = BucketLadder::fit(lengths, k, model.cost);
      EXPECT_THAT(fitted.buckets(), ElementsAre(Bucket{1, 38})) << model.name;
    }
  }
}

TEST(LadderFitTest, EnoughBucketsPadNothing) {
  // Every distinct length becomes an extent under a strictly increasing
  // cost, whether max_buckets is the distinct count or more.
  const std::vector<std::uint64_t> lengths{5, 900, 3, 3, 77, 5, 1, 900, 12};
  for (const auto& cost :
       {LadderCost(ladder_cost::decode), LadderCost(ladder_cost::prefill)}) {
    for (std::size_t k : {6, 7, 1000}) {
      EXPECT_THAT(Extents(BucketLadder::fit(lengths, k, cost)),
                  ElementsAre(1, 3, 5, 12, 77, 900));
    }
  }
  // A constant cost makes padding free: one bucket is the fewest.
  EXPECT_THAT(
      Extents(BucketLadder::fit(lengths, 6, [](std::uint64_t) { return 1.0; })),
      ElementsAre(900));
}

TEST(LadderFitTest, CountsInAnyOrderWithRepeats) {
  const std::vector<LengthCount> counts{{100, 1}, {3, 50},  {40, 2},
                                        {3, 25},  {100, 4}, {12, 9}};
  const std::vector<LengthCount> merged{{3, 75}, {12, 9}, {40, 2}, {100, 5}};
  for (std::size_t k = 1; k <= 4; ++k) {
    EXPECT_EQ(Extents(BucketLadder::fit(counts, k, ladder_cost::prefill)),
              Extents(BucketLadder::fit(merged, k, ladder_cost::prefill)));
  }
  // Two buckets, decode: 3 and 12 at 12 (84 keys), 40 and 100 at 100 cost
  // 84 * 12 + 7 * 100 = 1708; 3 alone costs 75 * 3 + 16 * 100 = 1825, and
  // 100 alone 86 * 40 + 5 * 100 = 3940.
  EXPECT_THAT(Extents(BucketLadder::fit(counts, 2, ladder_cost::decode)),
              ElementsAre(12, 100));
}

TEST(LadderFitTest, Errors) {
  const std::vector<std::uint64_t> good{4, 8};
  const std::vector<std::uint64_t> none;
  EXPECT_THAT(ErrorOf([&] { BucketLadder::fit(good, 0, ladder_cost::decode); }),
              AllOf(HasSubstr("BucketLadder::fit("), HasSubstr("max_buckets=0"),
                    HasSubstr(">= 1")));
  EXPECT_THAT(ErrorOf([&] { BucketLadder::fit(none, 4, ladder_cost::decode); }),
              AllOf(HasSubstr("BucketLadder::fit(lengths of 0"),
                    HasSubstr("no lengths")));
  EXPECT_THAT(ErrorOf([&] {
                BucketLadder::fit(std::vector<LengthCount>{}, 4,
                                  ladder_cost::decode);
              }),
              AllOf(HasSubstr("BucketLadder::fit(counts of 0"),
                    HasSubstr("no lengths")));
  const std::vector<std::uint64_t> zero{4, 0, 8};
  EXPECT_THAT(ErrorOf([&] { BucketLadder::fit(zero, 2, ladder_cost::decode); }),
              AllOf(HasSubstr("BucketLadder::fit"),
                    HasSubstr("lengths[1] is 0"), HasSubstr(">= 1")));
  const std::vector<std::uint64_t> huge{kMaxU64};
  EXPECT_THAT(ErrorOf([&] { BucketLadder::fit(huge, 2, ladder_cost::decode); }),
              AllOf(HasSubstr("lengths[0] is 18446744073709551615"),
                    HasSubstr("overflow")));
  const std::vector<LengthCount> zero_length{{3, 1}, {0, 2}};
  EXPECT_THAT(
      ErrorOf([&] { BucketLadder::fit(zero_length, 2, ladder_cost::decode); }),
      HasSubstr("counts[1] is 0"));
  const std::vector<LengthCount> zero_count{{3, 1}, {9, 0}};
  EXPECT_THAT(
      ErrorOf([&] { BucketLadder::fit(zero_count, 2, ladder_cost::decode); }),
      AllOf(HasSubstr("counts[1] (length 9) has count 0")));
  const std::vector<LengthCount> overflowing{{3, kMaxU64}, {3, 1}};
  EXPECT_THAT(
      ErrorOf([&] { BucketLadder::fit(overflowing, 2, ladder_cost::decode); }),
      HasSubstr("past 2^64"));
  EXPECT_THAT(ErrorOf([&] {
                BucketLadder::fit(good, 2, [](std::uint64_t u) {
                  return u == 8 ? 1.0 : 2.0;
                });
              }),
              AllOf(HasSubstr("cost(8) = 1 < cost(4) = 2"),
                    HasSubstr("non-decreasing")));
  EXPECT_THAT(ErrorOf([&] {
                BucketLadder::fit(good, 2, [](std::uint64_t) {
                  return std::numeric_limits<double>::quiet_NaN();
                });
              }),
              AllOf(HasSubstr("cost(4) is nan"), HasSubstr("finite")));
  EXPECT_THAT(ErrorOf([&] {
                BucketLadder::fit(good, 2, [](std::uint64_t) { return -1.0; });
              }),
              HasSubstr("cost(4) is -1"));
  EXPECT_THAT(ErrorOf([&] { BucketLadder::fit(good, 2, LadderCost{}); }),
              HasSubstr("cost is empty"));
}

// ---------------------------------------------------------------------------
// capped

// A padding ratio as the test knows it: the double passed and the exact
// fraction it stands for.
struct Padding {
  double value;
  std::uint64_t num, den;  // den == 0: +inf
};

const Padding kPaddings[] = {
    {0.0, 0, 1},
    {0.1, 1, 10},
    {0.2, 1, 5},
    {0.25, 1, 4},
    {0.3, 3, 10},
    {1.0 / 3, 3333333333333333, 10000000000000000},
    {0.5, 1, 2},
    {0.7, 7, 10},
    {1.0, 1, 1},
    {1.5, 3, 2},
    {2.0, 2, 1},
    {10.0, 10, 1},
    {std::numeric_limits<double>::infinity(), 1, 0},
};

// Exactly: may key k be padded to u under p? (u - k) / k <= num / den.
bool Allowed(std::uint64_t k, std::uint64_t u, const Padding& p) {
  if (p.den == 0) return true;
  return static_cast<unsigned __int128>(u - k) * p.den <=
         static_cast<unsigned __int128>(k) * p.num;
}

// Fewest buckets covering [1, max_key] without gaps under p, over every
// ladder: best[u] = fewest buckets covering [1, u] with u an extent.
std::size_t FewestBuckets(std::uint64_t max_key, const Padding& p) {
  std::vector<std::size_t> best(max_key + 1, SIZE_MAX);
  best[0] = 0;
  for (std::uint64_t u = 1; u <= max_key; ++u) {
    for (std::uint64_t s = 1; s <= u; ++s) {
      if (best[s - 1] == SIZE_MAX) continue;
      bool ok = true;
      for (std::uint64_t k = s; k <= u && ok; ++k) ok = Allowed(k, u, p);
      if (ok) best[u] = std::min(best[u], best[s - 1] + 1);
    }
  }
  return best[max_key];
}

TEST(LadderCappedTest, FewestBucketsExhaustively) {
  for (const Padding& p : kPaddings) {
    for (std::uint64_t max_key = 1; max_key <= 48; ++max_key) {
      SCOPED_TRACE("max_padding " + std::to_string(p.value) + " max_key " +
                   std::to_string(max_key));
      const BucketLadder ladder = BucketLadder::capped(max_key, p.value);
      ExpectContiguousFromOne(ladder, max_key);
      for (const Bucket& b : ladder.buckets()) {
        for (std::uint64_t k = b.start; k < b.end; ++k) {
          EXPECT_TRUE(Allowed(k, b.upper(), p)) << k << " -> " << b.upper();
        }
      }
      EXPECT_EQ(ladder.size(), FewestBuckets(max_key, p));
    }
  }
}

TEST(LadderCappedTest, Examples) {
  EXPECT_THAT(Extents(BucketLadder::capped(16, 0.25)),
              ElementsAre(1, 2, 3, 5, 7, 10, 13, 16));
  EXPECT_THAT(Extents(BucketLadder::capped(5, 0.0)),
              ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(Extents(BucketLadder::capped(1000, 1e300)), ElementsAre(1000));
  EXPECT_THAT(Extents(BucketLadder::capped(
                  1000, std::numeric_limits<double>::infinity())),
              ElementsAre(1000));
  // 0.3 is 3/10 exactly: the bucket starting at 20 may reach 20 + 6 = 26.
  // (The double nearest 0.3 is below it, so 20 * 0.3 in floating point
  // rounds down to 25.)
  const std::vector<std::uint64_t> tenths =
      Extents(BucketLadder::capped(40, 0.3));
  EXPECT_THAT(std::vector<std::uint64_t>(tenths.begin(), tenths.begin() + 9),
              ElementsAre(1, 2, 3, 5, 7, 10, 14, 19, 26));
}

TEST(LadderCappedTest, LargeKeysExactAndMaximal) {
  // Each bucket allows its first key's padding exactly, and one key more
  // would not be allowed (unless the bucket ends at max_key).
  const std::uint64_t max_key = std::uint64_t{1} << 40;
  const BucketLadder ladder = BucketLadder::capped(max_key, 0.01);
  ExpectContiguousFromOne(ladder, max_key);
  for (const Bucket& b : ladder.buckets()) {
    EXPECT_LE((b.upper() - b.start) * 100, b.start);
    if (b.upper() != max_key) {
      EXPECT_GT((b.end - b.start) * 100, b.start);
    }
  }
}

// The worst ratio of a ladder as an exact fraction (num, den).
std::pair<std::uint64_t, std::uint64_t> WorstRatio(const BucketLadder& l) {
  std::pair<std::uint64_t, std::uint64_t> worst{0, 1};
  for (const Bucket& b : l.buckets()) {
    const std::uint64_t num = b.upper() - b.start, den = b.start;
    if (num * worst.second > worst.first * den) worst = {num, den};
  }
  return worst;
}

// Over every ladder of at most n buckets covering [1, max_key]: the least
// worst ratio, as (num, den).
std::pair<std::uint64_t, std::uint64_t> LeastWorstRatio(std::uint64_t max_key,
                                                        std::size_t n) {
  std::pair<std::uint64_t, std::uint64_t> least{max_key, 1};
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << (max_key - 1));
       ++mask) {
    if (static_cast<std::size_t>(__builtin_popcountll(mask)) + 1 > n) continue;
    std::vector<Bucket> buckets;
    std::uint64_t start = 1;
    for (std::uint64_t e = 1; e <= max_key; ++e) {
      if (e == max_key || (mask >> (e - 1) & 1)) {
        buckets.push_back({start, e + 1});
        start = e + 1;
      }
    }
    const auto w = WorstRatio(BucketLadder(buckets));
    if (w.first * least.second < least.first * w.second) least = w;
  }
  return least;
}

TEST(LadderCappedTest, LeastMaxPaddingIsTheMinMaxLadder) {
  for (std::uint64_t max_key = 1; max_key <= 16; ++max_key) {
    for (std::size_t n = 1; n <= 6; ++n) {
      SCOPED_TRACE("max_key " + std::to_string(max_key) + " n " +
                   std::to_string(n));
      const double p = BucketLadder::least_max_padding(max_key, n);
      const BucketLadder ladder = BucketLadder::capped(max_key, p);
      EXPECT_LE(ladder.size(), n);
      if (p > 0) {
        EXPECT_GT(BucketLadder::capped(max_key, std::nextafter(p, 0.0)).size(),
                  n);
      }
      const auto got = WorstRatio(ladder);
      const auto want = LeastWorstRatio(max_key, n);
      EXPECT_EQ(got.first * want.second, want.first * got.second)
          << got.first << "/" << got.second << " vs " << want.first << "/"
          << want.second;
    }
  }
  // Large: 32 buckets up to 2^17 keys.
  const double p = BucketLadder::least_max_padding(131072, 32);
  EXPECT_LE(BucketLadder::capped(131072, p).size(), 32u);
  EXPECT_GT(BucketLadder::capped(131072, std::nextafter(p, 0.0)).size(), 32u);
}

TEST(LadderCappedTest, Errors) {
  EXPECT_THAT(ErrorOf([] { BucketLadder::capped(0, 0.5); }),
              AllOf(HasSubstr("BucketLadder::capped(max_key=0, "
                              "max_padding=0.5)"),
                    HasSubstr("max_key must be >= 1")));
  EXPECT_THAT(ErrorOf([] { BucketLadder::capped(kMaxU64, 0.5); }),
              HasSubstr("overflows"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::capped(10, -0.25); }),
              AllOf(HasSubstr("max_padding=-0.25"), HasSubstr(">= 0")));
  EXPECT_THAT(ErrorOf([] {
                BucketLadder::capped(10,
                                     std::numeric_limits<double>::quiet_NaN());
              }),
              HasSubstr("max_padding=nan"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::capped(std::uint64_t{1} << 21, 0); }),
              HasSubstr("needs more than 1048576 buckets"));
  EXPECT_THAT(ErrorOf([] { BucketLadder::least_max_padding(10, 0); }),
              AllOf(HasSubstr("BucketLadder::least_max_padding(max_key=10, "
                              "max_buckets=0)"),
                    HasSubstr(">= 1")));
  EXPECT_THAT(ErrorOf([] { BucketLadder::least_max_padding(0, 3); }),
              HasSubstr("max_key must be >= 1"));
}

}  // namespace
}  // namespace rlx
