// SPDX-License-Identifier: MIT OR Apache-2.0
// A lazily filled cache of one artifact per bucket of a ladder: what the
// seed's BucketedCompileCache is to compiled graphs. An executor keeps one
// compiled plan per bucket and builds it the first time a key routes there.
#ifndef RLX_BUCKETED_CACHE_H_
#define RLX_BUCKETED_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rlx/bucket_ladder.h"

namespace rlx {

// Not thread-safe: an executor that shares one across threads locks around
// get(). References returned by get() stay valid until that bucket's artifact
// is dropped (retain_only / clear).
template <class T>
class BucketedCache {
 public:
  // `build(upper)` makes the artifact for a bucket whose compile extent is
  // `upper`; it is called at most once per bucket until that bucket is
  // dropped.
  using Builder = std::function<T(std::uint64_t upper)>;

  BucketedCache(BucketLadder ladder, Builder build)
      : ladder_(std::move(ladder)),
        build_(std::move(build)),
        artifacts_(ladder_.size()) {
    if (!build_) {
      throw std::invalid_argument("BucketedCache: the builder is empty");
    }
  }

  // Routes `key` to its bucket, builds that bucket's artifact on first use,
  // and returns (upper, artifact). Throws std::invalid_argument when `key`
  // routes to no bucket; nothing is built then. If `build` throws, nothing
  // is cached and the exception propagates.
  std::pair<std::uint64_t, T&> get(std::uint64_t key) {
    const std::optional<std::size_t> index = ladder_.bucket_for(key);
    if (!index) {
      throw std::invalid_argument("BucketedCache::get: key " +
                                  std::to_string(key) +
                                  " routes to no bucket of the ladder");
    }
    const std::uint64_t upper = ladder_[*index].upper();
    std::unique_ptr<T>& slot = artifacts_[*index];
    if (!slot) slot = std::make_unique<T>(build_(upper));
    return {upper, *slot};
  }

  // Whether the bucket at `index` holds a built artifact.
  bool is_built(std::size_t index) const {
    return index < artifacts_.size() && artifacts_[index] != nullptr;
  }

  // How many buckets hold a built artifact.
  std::size_t built_count() const {
    std::size_t n = 0;
    for (const auto& a : artifacts_) n += (a != nullptr);
    return n;
  }

  // Drops every artifact except the one of bucket `index` (memory pressure:
  // keep the bucket in use). Throws std::invalid_argument if `index` is not
  // a bucket of the ladder; nothing is dropped then.
  void retain_only(std::size_t index) {
    if (index >= artifacts_.size()) {
      throw std::invalid_argument("BucketedCache::retain_only: index " +
                                  std::to_string(index) +
                                  " is not below the bucket count " +
                                  std::to_string(artifacts_.size()));
    }
    for (std::size_t i = 0; i < artifacts_.size(); ++i) {
      if (i != index) artifacts_[i].reset();
    }
  }

  // Drops every artifact.
  void clear() {
    for (auto& a : artifacts_) a.reset();
  }

  const BucketLadder& ladder() const { return ladder_; }

 private:
  BucketLadder ladder_;
  Builder build_;
  std::vector<std::unique_ptr<T>> artifacts_;  // one slot per bucket
};

}  // namespace rlx

#endif  // RLX_BUCKETED_CACHE_H_
