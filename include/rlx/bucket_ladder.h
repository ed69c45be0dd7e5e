// SPDX-License-Identifier: MIT OR Apache-2.0
// Bucket ladders: the compile extents a CPU backend pads each sequence length
// up to. A key (length being run, >= 1) routes to the bucket whose half-open
// range [start, end) holds it; the graph for that bucket is compiled at its
// upper extent `end - 1`.
#ifndef RLX_BUCKET_LADDER_H_
#define RLX_BUCKET_LADDER_H_

#include <cstddef>
#include <cstdint>
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

// An ordered list of non-overlapping buckets. Gaps between buckets are
// allowed; a key in a gap (or outside every bucket) routes nowhere.
class BucketLadder {
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
