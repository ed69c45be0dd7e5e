// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API (include/rlx/rlx_attn_mask.h) over the C++ API. Each entry point
// checks what C can get wrong and C++ cannot (null pointers, enum values
// outside their range, struct sizes), then calls the C++ function inside
// Guard() (src/c_api/c_api_error.h), which turns every exception into a status
// and a thread-local message, so that no exception crosses into C or another
// language's frames.
//
// This unit: errors, ladders and the seed's decode masks; the targets
// (c_api_targets.cc), the score kernels (c_api_scores.cc), block masks and
// split rows (c_api_planning.cc), and the C structs as C++ ones
// (c_api_convert.cc) have units of their own.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/attn_mask.h"
#include "rlx/bucket_ladder.h"
#include "rlx/rlx_attn_mask.h"
#include "src/c_api/c_api_error.h"

// The opaque handle: a ladder is immutable once built.
struct rlx_ladder {
  rlx::BucketLadder ladder;
};

namespace {

using rlx::c_api::Guard;
using rlx::c_api::InvalidArgument;
using rlx::c_api::Record;

}  // namespace

extern "C" {

const char* rlx_last_error(void) { return rlx::c_api::LastErrorBuffer(); }

// ---------------------------------------------------------------------------
// Ladders

rlx_status rlx_ladder_power_of_two(uint64_t min, uint64_t max,
                                   rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_power_of_two";
  if (out == nullptr) {
    Record(kFn, "out is NULL (min=%llu, max=%llu)",
           static_cast<unsigned long long>(min),
           static_cast<unsigned long long>(max));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    *out = new rlx_ladder{rlx::BucketLadder::power_of_two(min, max)};
  });
}

rlx_status rlx_ladder_geometric(uint64_t max, uint64_t count,
                                rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_geometric";
  if (out == nullptr) {
    Record(kFn, "out is NULL (max=%llu, count=%llu)",
           static_cast<unsigned long long>(max),
           static_cast<unsigned long long>(count));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    *out = new rlx_ladder{rlx::BucketLadder::geometric(max, count)};
  });
}

rlx_status rlx_ladder_custom(const uint64_t* starts, const uint64_t* ends,
                             size_t n, rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_custom";
  if (out == nullptr) {
    Record(kFn, "out is NULL (n=%zu)", n);
    return RLX_INVALID_ARGUMENT;
  }
  if (n == 0) {
    return InvalidArgument(kFn, "n is 0: a ladder needs at least one bucket");
  }
  if (starts == nullptr || ends == nullptr) {
    Record(kFn, "%s is NULL (n=%zu)", starts == nullptr ? "starts" : "ends", n);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    std::vector<rlx::Bucket> buckets(n);
    for (size_t i = 0; i < n; ++i) buckets[i] = {starts[i], ends[i]};
    *out = new rlx_ladder{rlx::BucketLadder(std::move(buckets))};
  });
}

void rlx_ladder_free(rlx_ladder* ladder) { delete ladder; }

rlx_status rlx_ladder_size(const rlx_ladder* ladder, size_t* size) {
  constexpr const char* kFn = "rlx_ladder_size";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (size == nullptr) return InvalidArgument(kFn, "size is NULL");
  *size = ladder->ladder.size();
  return RLX_OK;
}

rlx_status rlx_ladder_bucket(const rlx_ladder* ladder, size_t i,
                             uint64_t* start, uint64_t* end) {
  constexpr const char* kFn = "rlx_ladder_bucket";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (start == nullptr || end == nullptr) {
    Record(kFn, "%s is NULL (bucket %zu)", start == nullptr ? "start" : "end",
           i);
    return RLX_INVALID_ARGUMENT;
  }
  if (i >= ladder->ladder.size()) {
    Record(kFn, "index %zu is not below the bucket count %zu", i,
           ladder->ladder.size());
    return RLX_INVALID_ARGUMENT;
  }
  *start = ladder->ladder[i].start;
  *end = ladder->ladder[i].end;
  return RLX_OK;
}

rlx_status rlx_ladder_bucket_for(const rlx_ladder* ladder, uint64_t key,
                                 bool* found, size_t* index) {
  constexpr const char* kFn = "rlx_ladder_bucket_for";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (found == nullptr || index == nullptr) {
    Record(kFn, "%s is NULL (key %llu)", found == nullptr ? "found" : "index",
           static_cast<unsigned long long>(key));
    return RLX_INVALID_ARGUMENT;
  }
  // bucket_for does not allocate or throw.
  const std::optional<std::size_t> bucket = ladder->ladder.bucket_for(key);
  *found = bucket.has_value();
  if (bucket) *index = *bucket;
  return RLX_OK;
}

// ---------------------------------------------------------------------------
// Decode masks

rlx_status rlx_fill_bucket_decode_mask(float* out, size_t out_len,
                                       size_t past_seq, size_t upper,
                                       size_t window) {
  constexpr const char* kFn = "rlx_fill_bucket_decode_mask";
  if (out == nullptr) {
    Record(kFn, "out is NULL (out_len %zu, past_seq %zu, upper %zu)", out_len,
           past_seq, upper);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    rlx::fill_bucket_decode_mask(std::span<float>(out, out_len), past_seq,
                                 upper, window);
  });
}

}  // extern "C"
