// SPDX-License-Identifier: MIT OR Apache-2.0
#include "rlx/bucket_ladder.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "src/ladders/ladder_extents.h"

namespace rlx {
namespace {

std::string Describe(std::size_t i, const Bucket& b) {
  return "bucket " + std::to_string(i) + " [" + std::to_string(b.start) + ", " +
         std::to_string(b.end) + ")";
}

// Unsigned big integer, little-endian 32-bit limbs: just enough to decide
// e^a >= m^b exactly when floating point cannot.
class BigUint {
 public:
  explicit BigUint(std::uint64_t v) {
    limbs_ = {static_cast<std::uint32_t>(v),
              static_cast<std::uint32_t>(v >> 32)};
    Trim();
  }

  BigUint Times(const BigUint& o) const {
    BigUint r(0);
    r.limbs_.assign(limbs_.size() + o.limbs_.size(), 0);
    for (std::size_t i = 0; i < limbs_.size(); ++i) {
      std::uint64_t carry = 0;
      for (std::size_t j = 0; j < o.limbs_.size(); ++j) {
        const std::uint64_t t =
            std::uint64_t{limbs_[i]} * o.limbs_[j] + r.limbs_[i + j] + carry;
        r.limbs_[i + j] = static_cast<std::uint32_t>(t);
        carry = t >> 32;
      }
      r.limbs_[i + o.limbs_.size()] = static_cast<std::uint32_t>(carry);
    }
    r.Trim();
    return r;
  }

  BigUint Pow(std::uint64_t exponent) const {
    BigUint result(1), base = *this;
    for (; exponent != 0; exponent >>= 1) {
      if (exponent & 1) result = result.Times(base);
      if (exponent > 1) base = base.Times(base);
    }
    return result;
  }

  friend bool operator>=(const BigUint& a, const BigUint& b) {
    if (a.limbs_.size() != b.limbs_.size()) {
      return a.limbs_.size() > b.limbs_.size();
    }
    for (std::size_t i = a.limbs_.size(); i-- > 0;) {
      if (a.limbs_[i] != b.limbs_[i]) return a.limbs_[i] > b.limbs_[i];
    }
    return true;
  }

 private:
  void Trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<std::uint32_t> limbs_;
};

// Exactly: e^count >= max^i, for 1 <= e, 1 <= i <= count. Logarithms decide
// whenever the two sides differ by more than their rounding error; only
// near-ties (e.g. 512^(1/3) == 8) take the exact big-integer path, on the
// exponents reduced by gcd(i, count).
bool PowerAtLeast(std::uint64_t e, std::uint64_t count, std::uint64_t max,
                  std::uint64_t i) {
  const long double lhs = static_cast<long double>(count) * std::log2l(e);
  const long double rhs = static_cast<long double>(i) * std::log2l(max);
  const long double slack = 1e-12L * (1 + std::max(lhs, rhs));
  if (lhs > rhs + slack) return true;
  if (lhs < rhs - slack) return false;
  const std::uint64_t g = std::gcd(i, count);
  return BigUint(e).Pow(count / g) >= BigUint(max).Pow(i / g);
}

}  // namespace

BucketLadder::BucketLadder(std::vector<Bucket> buckets)
    : buckets_(std::move(buckets)) {
  if (buckets_.empty()) {
    throw std::invalid_argument("BucketLadder: the bucket list is empty");
  }
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i].start >= buckets_[i].end) {
      throw std::invalid_argument("BucketLadder: " + Describe(i, buckets_[i]) +
                                  " is empty (start >= end)");
    }
    if (i > 0 && buckets_[i - 1].end > buckets_[i].start) {
      throw std::invalid_argument("BucketLadder: " + Describe(i, buckets_[i]) +
                                  " overlaps or is out of order with " +
                                  Describe(i - 1, buckets_[i - 1]));
    }
  }
}

BucketLadder BucketLadder::power_of_two(std::uint64_t min, std::uint64_t max) {
  const auto where = [&] {
    return "BucketLadder::power_of_two(min=" + std::to_string(min) +
           ", max=" + std::to_string(max) + "): ";
  };
  if (min < 1) throw std::invalid_argument(where() + "min must be >= 1");
  if (max < min) throw std::invalid_argument(where() + "max must be >= min");
  constexpr std::uint64_t kTopBit = std::uint64_t{1} << 63;
  if (min > kTopBit) {
    throw std::invalid_argument(where() +
                                "next_pow2(min) does not fit in 64 bits");
  }
  std::vector<std::uint64_t> extents{std::bit_ceil(min)};
  while (extents.back() < max) {
    if (extents.back() == kTopBit) {
      throw std::invalid_argument(
          where() + "doubling the extent past 2^63 overflows 64 bits");
    }
    extents.push_back(extents.back() * 2);
  }
  return BucketLadder(detail::BucketsFromExtents(extents));
}

BucketLadder BucketLadder::geometric(std::uint64_t max, std::uint64_t count) {
  const auto where = [&] {
    return "BucketLadder::geometric(max=" + std::to_string(max) +
           ", count=" + std::to_string(count) + "): ";
  };
  if (max < 1) throw std::invalid_argument(where() + "max must be >= 1");
  if (count < 1) throw std::invalid_argument(where() + "count must be >= 1");
  if (max == std::numeric_limits<std::uint64_t>::max()) {
    throw std::invalid_argument(where() +
                                "the last bucket's end max + 1 overflows");
  }
  std::vector<std::uint64_t> extents;
  for (std::uint64_t i = 1; i <= count; ++i) {
    // Start from the float estimate of ceil(max^(i/count)), then step to
    // the exact smallest e with e^count >= max^i.
    const long double estimate = std::ceil(
        std::exp2l(static_cast<long double>(i) * std::log2l(max) / count));
    std::uint64_t e =
        estimate >= static_cast<long double>(max)
            ? max
            : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(estimate));
    while (e > 1 && PowerAtLeast(e - 1, count, max, i)) --e;
    while (!PowerAtLeast(e, count, max, i)) ++e;
    if (extents.empty() || e > extents.back()) extents.push_back(e);
  }
  return BucketLadder(detail::BucketsFromExtents(extents));
}

std::optional<std::size_t> BucketLadder::bucket_for(std::uint64_t key) const {
  // The first bucket starting after `key`; the one before it is the only
  // candidate.
  const auto after = std::upper_bound(
      buckets_.begin(), buckets_.end(), key,
      [](std::uint64_t k, const Bucket& b) { return k < b.start; });
  if (after == buckets_.begin()) return std::nullopt;
  const auto candidate = std::prev(after);
  if (key >= candidate->end) return std::nullopt;
  return static_cast<std::size_t>(candidate - buckets_.begin());
}

}  // namespace rlx
