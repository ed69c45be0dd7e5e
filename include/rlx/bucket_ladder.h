// SPDX-License-Identifier: MIT OR Apache-2.0
// Bucket ladders: the compile extents a CPU backend pads each sequence length
// up to. A key (length being run, >= 1) routes to the bucket whose half-open
// range [start, end) holds it; the graph for that bucket is compiled at its
// upper extent `end - 1`.
#ifndef RLX_BUCKET_LADDER_H_
#define RLX_BUCKET_LADDER_H_

#include <rlx/export.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace rlx {

// A half-open range of keys [start, end). Invariant inside a ladder:
// start < end, so upper() = end - 1 >= start.
struct Bucket {
  std::uint64_t start;
  std::uint64_t end;
  // The compile extent: the largest key of the bucket.
  std::uint64_t upper() const { return end - 1; }
  friend bool operator==(const Bucket&, const Bucket&) = default;
};

// One observed length (a key, >= 1) and how many times it was seen (>= 1):
// the histogram form of the observations BucketLadder::fit takes.
struct LengthCount {
  std::uint64_t length;
  std::uint64_t count;
  friend bool operator==(const LengthCount&, const LengthCount&) = default;
};

// What running one key on the graph compiled at extent `upper` costs, for
// BucketLadder::fit. It must be finite, >= 0 and non-decreasing in `upper`
// (fit checks this at every distinct observed length). It is called once per
// distinct observed length, never concurrently.
using LadderCost = std::function<double(std::uint64_t upper)>;

// The built-in cost models.
namespace ladder_cost {
// A decode step attends one query row over the bucket's keys: time grows
// with the extent, cost(upper) = upper.
inline double decode(std::uint64_t upper) { return static_cast<double>(upper); }
// A prefill at extent `upper` computes upper x upper scores:
// cost(upper) = upper^2.
inline double prefill(std::uint64_t upper) {
  return static_cast<double>(upper) * static_cast<double>(upper);
}
}  // namespace ladder_cost

// An ordered list of non-overlapping buckets. Gaps between buckets are
// allowed; a key in a gap (or outside every bucket) routes nowhere.
class RLX_ATTN_MASK_API BucketLadder {
 public:
  // Throws std::invalid_argument (naming the offending bucket) for an empty
  // list, an empty bucket (start >= end), or unsorted or overlapping buckets
  // (b[i].end > b[i+1].start).
  explicit BucketLadder(std::vector<Bucket> buckets);

  // The seed's power_of_two_ladder: extents start at next_pow2(min) and double
  // until >= max; the first bucket starts at 1, each next one at the previous
  // extent + 1. (8, 256) gives [1,9) [9,17) [17,33) [33,65) [65,129)
  // [129,257). Requires 1 <= min <= max; throws std::invalid_argument
  // otherwise, and when an extent would not fit in 64 bits.
  static BucketLadder power_of_two(std::uint64_t min, std::uint64_t max);

  // `count` geometric steps from 1 to `max`: extent i (1..count) is the
  // smallest integer e with e^count >= max^i, decided exactly (integer
  // arithmetic, no float round-off); an extent not larger than the previous
  // one is dropped, so extents strictly increase and the last is `max`.
  // Buckets cover [1, max] without gaps. (512, 3) gives extents 8, 64, 512;
  // (4096, 5) gives 6, 28, 148, 777, 4096. Requires max >= 1 and count >= 1;
  // throws std::invalid_argument otherwise.
  static BucketLadder geometric(std::uint64_t max, std::uint64_t count);

  // The ladder of at most `max_buckets` buckets, covering [1, max(lengths)]
  // without gaps, that minimises the total padded cost of the observations,
  //   sum over observed keys of cost(upper of the bucket holding the key).
  // Every extent is an observed length (moving an extent down to the
  // largest observed length below it never costs more, for a non-decreasing
  // cost) and the last one is max(lengths). Among the ladders of minimal
  // cost it returns one with the fewest buckets; with max_buckets >= the
  // number of distinct lengths no key is padded at all.
  //
  // Exact: a dynamic program over the m distinct lengths, optimal up to the
  // rounding of its double sums (sums of integers below 2^53, as the decode
  // and prefill costs of up to 2^53 / max^2 observations give, are exact).
  // O(n + m * min(max_buckets, m) * log m) time (n observations; sorting
  // them, when they are not counted, adds O(n log n) unless max(lengths) is
  // O(n)) and O(m * min(max_buckets, m)) memory. 10^6 lengths drawn
  // uniformly from [1, 131072] (131k distinct) into 32 buckets take about
  // 0.12 s of CPU time on one core (bench/suites/ladder_fit_bench.cc;
  // docs/LADDERS.md has the run). Made for the tens to hundreds of buckets
  // of a compile cache: 10^4 buckets over 10^5 distinct lengths would take
  // 4 GB and minutes.
  //
  // Throws std::invalid_argument, naming the function and the values, for
  // max_buckets == 0, no observations, a length of 0 or 2^64 - 1 (the
  // bucket's end would overflow), a count of 0, counts summing past 2^64,
  // and a cost that is negative, not finite or decreasing at an observed
  // length.
  static BucketLadder fit(std::span<const std::uint64_t> lengths,
                          std::size_t max_buckets, const LadderCost& cost);
  // The same from (length, count) pairs in any order; a length may appear
  // more than once (its counts add up).
  static BucketLadder fit(std::span<const LengthCount> counts,
                          std::size_t max_buckets, const LadderCost& cost);

  // The ladder with the fewest buckets covering [1, max_key] without gaps in
  // which no key is padded by more than `max_padding` of itself: every key k
  // of a bucket with extent u has
  //   (u - k) / k <= max_padding,  i.e.  u - k <= floor(k * max_padding).
  // `max_padding` is read as the decimal number it prints as (the shortest
  // decimal that round-trips, std::to_chars), so 0.1 means exactly 1/10 and
  // 0.3 exactly 3/10, not the doubles nearest to them; extents are then
  // computed with integer arithmetic, exactly. A bucket's first key is its
  // worst, so each bucket starting at s ends at min(s + floor(s *
  // max_padding), max_key): greedy, and the fewest buckets (any ladder's
  // i-th extent is at most the greedy one's, by induction, since the
  // largest allowed extent grows with the start). max_padding = 0 gives one
  // bucket per key; +inf one bucket. (0.25, 16) gives extents 1 2 3 4 6 8
  // 11 14 16: (14 - 12) / 12 <= 0.25 but 15 - 12 > 3.
  //
  // Throws std::invalid_argument, naming the function and the values, for
  // max_key 0 or 2^64 - 1, a NaN or negative max_padding, and when more than
  // kMaxCappedBuckets buckets would be needed.
  static BucketLadder capped(std::uint64_t max_key, double max_padding);
  static constexpr std::size_t kMaxCappedBuckets = std::size_t{1} << 20;

  // The least max_padding (a double, read as capped() reads it) for which
  // capped(max_key, max_padding) has at most max_buckets buckets: the capped
  // ladder that a compile cache of max_buckets graphs can afford. Found by
  // bisection over the doubles, so exact up to the doubles' spacing (the
  // next smaller double needs more buckets). Throws std::invalid_argument
  // for max_key 0 or 2^64 - 1 and max_buckets 0.
  static double least_max_padding(std::uint64_t max_key,
                                  std::size_t max_buckets);

  // Index of the bucket holding `key`, or std::nullopt when no bucket does.
  // O(log n) in the number of buckets.
  std::optional<std::size_t> bucket_for(std::uint64_t key) const;

  std::span<const Bucket> buckets() const { return buckets_; }
  std::size_t size() const { return buckets_.size(); }
  const Bucket& operator[](std::size_t i) const { return buckets_[i]; }

 private:
  std::vector<Bucket> buckets_;
};

}  // namespace rlx

#endif  // RLX_BUCKET_LADDER_H_
