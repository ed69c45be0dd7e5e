// SPDX-License-Identifier: MIT OR Apache-2.0
#include "src/softmax/thread_exp_buffer.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

namespace rlx::detail {
namespace {

std::atomic<std::size_t> limit_floats{SIZE_MAX};

constexpr std::align_val_t kAlign{kThreadExpBufferAlign};

struct FreeBuffer {
  void operator()(float* p) const { ::operator delete(p, kAlign); }
};

struct ThreadBuffer {
  std::unique_ptr<float, FreeBuffer> data;
  std::size_t floats = 0;
};

}  // namespace

float* ThreadExpBuffer(std::size_t floats) {
  thread_local ThreadBuffer buffer;
  if (floats <= buffer.floats) return buffer.data.get();
  const std::size_t limit = limit_floats.load(std::memory_order_relaxed);
  if (floats > limit) return nullptr;
  // Grown to at least twice its size (rows that lengthen by a key per decode
  // step reallocate O(log n) times), within the limit, in whole lines.
  constexpr std::size_t kLineFloats = kThreadExpBufferAlign / sizeof(float);
  std::size_t grown = std::max(floats, std::min(2 * buffer.floats, limit));
  if (grown > SIZE_MAX / sizeof(float) - kThreadExpBufferAlign) return nullptr;
  grown = (grown + kLineFloats - 1) / kLineFloats * kLineFloats;
  void* p = ::operator new(grown * sizeof(float), kAlign, std::nothrow);
  if (p == nullptr) return nullptr;
  buffer.data.reset(static_cast<float*>(p));
  buffer.floats = grown;
  return buffer.data.get();
}

std::size_t SetThreadExpBufferLimit(std::size_t floats) {
  return limit_floats.exchange(floats);
}

}  // namespace rlx::detail
