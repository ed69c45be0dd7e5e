// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the ladders chosen from traffic (rlx_ladder_fit,
// rlx_ladder_fit_counts, rlx_ladder_capped, rlx_ladder_least_max_padding in
// include/rlx/rlx_attn_mask_ladder_fit.h) over BucketLadder::fit, capped and
// least_max_padding. Like src/c_api/c_api.cc: C-only checks first (null
// pointers, enum values), then the C++ call inside Guard, so that no exception
// crosses into C.
//
// A fitted ladder becomes an rlx_ladder handle through the public
// rlx_ladder_custom; failures are recorded with src/c_api/c_api_error.h, in the
// one buffer that rlx_last_error() hands out for the whole API.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "rlx/rlx_attn_mask.h"
#include "src/c_api/c_api_error.h"

static_assert(RLX_MAX_CAPPED_BUCKETS == rlx::BucketLadder::kMaxCappedBuckets);

namespace {

using rlx::c_api::Guard;
using rlx::c_api::Record;

// The handle for `ladder`, made by the public constructor of custom ladders
// (which accepts every ladder BucketLadder accepted).
rlx_status ToHandle(const rlx::BucketLadder& ladder, rlx_ladder** out) {
  std::vector<std::uint64_t> starts, ends;
  starts.reserve(ladder.size());
  ends.reserve(ladder.size());
  for (const rlx::Bucket& b : ladder.buckets()) {
    starts.push_back(b.start);
    ends.push_back(b.end);
  }
  return rlx_ladder_custom(starts.data(), ends.data(), starts.size(), out);
}

// The model as the int a C caller stored: a value that names no enumerator
// is not a valid value of the enum type in C++, so it is read through its
// representation and checked as an int.
int ModelValue(const rlx_ladder_cost& cost) {
  static_assert(sizeof(cost.model) == sizeof(int));
  int value = 0;
  std::memcpy(&value, &cost.model, sizeof(value));
  return value;
}

// The C++ cost for `cost`, or a message naming what is wrong with it.
const char* CheckCost(const rlx_ladder_cost* cost) {
  if (cost == nullptr) return "cost is NULL";
  switch (ModelValue(*cost)) {
    case RLX_LADDER_COST_DECODE:
    case RLX_LADDER_COST_PREFILL:
      return nullptr;
    case RLX_LADDER_COST_CUSTOM:
      return cost->fn == nullptr ? "cost->fn is NULL for RLX_LADDER_COST_CUSTOM"
                                 : nullptr;
  }
  return "cost->model is not an rlx_ladder_cost_model";
}

rlx::LadderCost ToCost(const rlx_ladder_cost& cost) {
  switch (ModelValue(cost)) {
    case RLX_LADDER_COST_DECODE:
      return rlx::ladder_cost::decode;
    case RLX_LADDER_COST_PREFILL:
      return rlx::ladder_cost::prefill;
    case RLX_LADDER_COST_CUSTOM:
      return [fn = cost.fn, user_data = cost.user_data](std::uint64_t upper) {
        return fn(upper, user_data);
      };
  }
  throw std::logic_error("ToCost: unchecked cost model");
}

}  // namespace

rlx_status rlx_ladder_fit(const uint64_t* lengths, size_t n, size_t max_buckets,
                          const rlx_ladder_cost* cost, rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_fit";
  if (out == nullptr || (lengths == nullptr && n > 0)) {
    Record(kFn, "%s is NULL (n=%zu, max_buckets=%zu)",
           out == nullptr ? "out" : "lengths", n, max_buckets);
    return RLX_INVALID_ARGUMENT;
  }
  if (const char* error = CheckCost(cost)) {
    Record(kFn, "%s (n=%zu, max_buckets=%zu)", error, n, max_buckets);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const rlx::BucketLadder ladder = rlx::BucketLadder::fit(
        std::span<const std::uint64_t>(lengths, n), max_buckets, ToCost(*cost));
    return ToHandle(ladder, out);
  });
}

rlx_status rlx_ladder_fit_counts(const uint64_t* lengths,
                                 const uint64_t* counts, size_t n,
                                 size_t max_buckets,
                                 const rlx_ladder_cost* cost,
                                 rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_fit_counts";
  if (out == nullptr || (n > 0 && (lengths == nullptr || counts == nullptr))) {
    Record(kFn, "%s is NULL (n=%zu, max_buckets=%zu)",
           out == nullptr       ? "out"
           : lengths == nullptr ? "lengths"
                                : "counts",
           n, max_buckets);
    return RLX_INVALID_ARGUMENT;
  }
  if (const char* error = CheckCost(cost)) {
    Record(kFn, "%s (n=%zu, max_buckets=%zu)", error, n, max_buckets);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    std::vector<rlx::LengthCount> pairs(n);
    for (size_t i = 0; i < n; ++i) pairs[i] = {lengths[i], counts[i]};
    const rlx::BucketLadder ladder = rlx::BucketLadder::fit(
        std::span<const rlx::LengthCount>(pairs), max_buckets, ToCost(*cost));
    return ToHandle(ladder, out);
  });
}

rlx_status rlx_ladder_capped(uint64_t max_key, double max_padding,
                             rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_capped";
  if (out == nullptr) {
    Record(kFn, "out is NULL (max_key=%llu, max_padding=%g)",
           static_cast<unsigned long long>(max_key), max_padding);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    return ToHandle(rlx::BucketLadder::capped(max_key, max_padding), out);
  });
}

rlx_status rlx_ladder_least_max_padding(uint64_t max_key, size_t max_buckets,
                                        double* max_padding) {
  constexpr const char* kFn = "rlx_ladder_least_max_padding";
  if (max_padding == nullptr) {
    Record(kFn, "max_padding is NULL (max_key=%llu, max_buckets=%zu)",
           static_cast<unsigned long long>(max_key), max_buckets);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    *max_padding = rlx::BucketLadder::least_max_padding(max_key, max_buckets);
    return RLX_OK;
  });
}
