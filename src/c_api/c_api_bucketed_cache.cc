// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the per-bucket artifact cache (rlx_bucketed_cache_* in
// include/rlx/rlx_attn_mask_bucketed_cache.h) over rlx::BucketedCache: the
// artifacts are the caller's opaque pointers, each owned by the cache through
// Artifact, which releases it with the caller's function when the cache drops
// it. Like src/c_api/c_api.cc: C-only checks first, then the C++ call inside
// Guard.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rlx/bucket_ladder.h"
#include "rlx/bucketed_cache.h"
#include "rlx/rlx_attn_mask.h"
#include "src/c_api/c_api_error.h"

namespace {

using rlx::c_api::Guard;
using rlx::c_api::InvalidArgument;
using rlx::c_api::Record;

// One built artifact: released exactly once, by whichever Artifact holds it
// last (a moved-from one holds nothing).
class Artifact {
 public:
  Artifact(void* data, rlx_cache_release_fn release, void* user)
      : data_(data), release_(release), user_(user) {}
  Artifact(Artifact&& other) noexcept
      : data_(other.data_),
        release_(std::exchange(other.release_, nullptr)),
        user_(other.user_) {}
  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;
  Artifact& operator=(Artifact&&) = delete;
  ~Artifact() {
    if (release_ != nullptr) release_(data_, user_);
  }
  void* data() const { return data_; }

 private:
  void* data_;
  rlx_cache_release_fn release_;
  void* user_;
};

// A build that returned a status other than RLX_OK: thrown through
// BucketedCache::get, which then caches nothing, and turned back into that
// status by rlx_bucketed_cache_get.
struct BuildFailed {
  rlx_status status;
  std::uint64_t upper;
};

}  // namespace

struct rlx_bucketed_cache {
  rlx::BucketedCache<Artifact> cache;
};

rlx_status rlx_bucketed_cache_new(const rlx_ladder* ladder,
                                  rlx_cache_build_fn build,
                                  rlx_cache_release_fn release, void* user,
                                  rlx_bucketed_cache** out) {
  constexpr const char* kFn = "rlx_bucketed_cache_new";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (build == nullptr) return InvalidArgument(kFn, "build is NULL");
  if (out == nullptr) return InvalidArgument(kFn, "out is NULL");
  return Guard(kFn, [&] {
    // The ladder through the public accessors: the handle's layout is
    // src/c_api/c_api.cc's.
    std::size_t n = 0;
    rlx_ladder_size(ladder, &n);
    std::vector<rlx::Bucket> buckets(n);
    for (std::size_t i = 0; i < n; ++i) {
      rlx_ladder_bucket(ladder, i, &buckets[i].start, &buckets[i].end);
    }
    auto builder = [build, release, user](std::uint64_t upper) {
      void* data = nullptr;
      const rlx_status status = build(upper, user, &data);
      if (status != RLX_OK) throw BuildFailed{status, upper};
      return Artifact(data, release, user);
    };
    *out = new rlx_bucketed_cache{rlx::BucketedCache<Artifact>(
        rlx::BucketLadder(std::move(buckets)), std::move(builder))};
  });
}

void rlx_bucketed_cache_free(rlx_bucketed_cache* cache) { delete cache; }

rlx_status rlx_bucketed_cache_get(rlx_bucketed_cache* cache, uint64_t key,
                                  uint64_t* upper, void** artifact) {
  constexpr const char* kFn = "rlx_bucketed_cache_get";
  if (cache == nullptr || upper == nullptr || artifact == nullptr) {
    Record(
        kFn, "%s is NULL (key %llu)",
        cache == nullptr ? "cache" : (upper == nullptr ? "upper" : "artifact"),
        static_cast<unsigned long long>(key));
    return RLX_INVALID_ARGUMENT;
  }
  std::optional<BuildFailed> failed;
  const rlx_status status = Guard(kFn, [&] {
    try {
      const auto [bucket_upper, built] = cache->cache.get(key);
      *upper = bucket_upper;
      *artifact = built.data();
    } catch (const BuildFailed& e) {
      failed = e;
    }
  });
  if (failed) {
    Record(kFn,
           "the build of the artifact of upper %llu (key %llu) returned "
           "status %d; nothing was cached",
           static_cast<unsigned long long>(failed->upper),
           static_cast<unsigned long long>(key),
           static_cast<int>(failed->status));
    return failed->status;
  }
  return status;
}

rlx_status rlx_bucketed_cache_is_built(const rlx_bucketed_cache* cache,
                                       size_t index, bool* built) {
  constexpr const char* kFn = "rlx_bucketed_cache_is_built";
  if (cache == nullptr) return InvalidArgument(kFn, "cache is NULL");
  if (built == nullptr) return InvalidArgument(kFn, "built is NULL");
  *built = cache->cache.is_built(index);
  return RLX_OK;
}

rlx_status rlx_bucketed_cache_built_count(const rlx_bucketed_cache* cache,
                                          size_t* count) {
  constexpr const char* kFn = "rlx_bucketed_cache_built_count";
  if (cache == nullptr) return InvalidArgument(kFn, "cache is NULL");
  if (count == nullptr) return InvalidArgument(kFn, "count is NULL");
  *count = cache->cache.built_count();
  return RLX_OK;
}

rlx_status rlx_bucketed_cache_retain_only(rlx_bucketed_cache* cache,
                                          size_t index) {
  constexpr const char* kFn = "rlx_bucketed_cache_retain_only";
  if (cache == nullptr) return InvalidArgument(kFn, "cache is NULL");
  return Guard(kFn, [&] { cache->cache.retain_only(index); });
}

rlx_status rlx_bucketed_cache_clear(rlx_bucketed_cache* cache) {
  if (cache == nullptr) {
    return InvalidArgument("rlx_bucketed_cache_clear", "cache is NULL");
  }
  cache->cache.clear();
  return RLX_OK;
}
