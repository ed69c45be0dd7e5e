// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the ladders chosen from traffic (rlx_ladder_fit,
// rlx_ladder_fit_counts, rlx_ladder_capped, rlx_ladder_least_max_padding in
// include/rlx/rlx_attn_mask.h) over BucketLadder::fit, capped and
// least_max_padding. Like src/c_api.cc: C-only checks first (null pointers,
// enum values), then the C++ call inside Guard, so that no exception
// crosses into C.
//
// Two things are shared with src/c_api.cc through the public C API rather
// than through its internals: a fitted ladder becomes an rlx_ladder handle
// through rlx_ladder_custom, and a failure is recorded in the buffer that
// rlx_last_error() hands out (this thread's message, at least 1024 bytes:
// the header promises messages of up to 1023), so that one rlx_last_error
// serves the whole API.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <span>
#include <stdexcept>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "rlx/rlx_attn_mask.h"

namespace {

constexpr std::size_t kMessageCapacity = 1024;

// Records "<function>: <printf-formatted detail>" for rlx_last_error.
[[gnu::format(printf, 2, 3)]] void Record(const char* function,
                                          const char* format, ...) noexcept {
  // The buffer is thread_local char storage in src/c_api.cc; only the
  // pointer is const.
  char* message = const_cast<char*>(rlx_last_error());
  int used = std::snprintf(message, kMessageCapacity, "%s: ", function);
  if (used < 0) used = 0;
  if (static_cast<std::size_t>(used) >= kMessageCapacity) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(message + used, kMessageCapacity - used, format, args);
  va_end(args);
}

template <class Body>
rlx_status Guard(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    Record(function, "%s", e.what());
    return RLX_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    Record(function, "out of memory");
    return RLX_OUT_OF_MEMORY;
  } catch (const std::length_error& e) {
    Record(function, "out of memory: %s", e.what());
    return RLX_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    Record(function, "internal error: %s", e.what());
    return RLX_INTERNAL_ERROR;
  } catch (...) {
    Record(function, "internal error: an unknown exception");
    return RLX_INTERNAL_ERROR;
  }
}

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

// The C++ cost for `cost`, or a message naming what is wrong with it.
const char* CheckCost(const rlx_ladder_cost* cost) {
  if (cost == nullptr) return "cost is NULL";
  switch (cost->model) {
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
  switch (cost.model) {
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
