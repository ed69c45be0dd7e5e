// SPDX-License-Identifier: MIT OR Apache-2.0
// Buckets from compile extents, shared by the ladder constructors
// (bucket_ladder.cc) and the fitted ladders (ladder_fit.cc).
#ifndef RLX_SRC_LADDERS_LADDER_EXTENTS_H_
#define RLX_SRC_LADDERS_LADDER_EXTENTS_H_

#include <cstdint>
#include <vector>

#include "rlx/bucket_ladder.h"

namespace rlx::detail {

// Buckets [1, e0+1) [e0+1, e1+1) ... for strictly increasing extents, each
// below UINT64_MAX (the callers check both).
inline std::vector<Bucket> BucketsFromExtents(
    const std::vector<std::uint64_t>& extents) {
  std::vector<Bucket> buckets;
  buckets.reserve(extents.size());
  std::uint64_t start = 1;
  for (std::uint64_t e : extents) {
    buckets.push_back({start, e + 1});
    start = e + 1;
  }
  return buckets;
}

}  // namespace rlx::detail

#endif  // RLX_SRC_LADDERS_LADDER_EXTENTS_H_
