// SPDX-License-Identifier: MIT OR Apache-2.0
#include "rlx/targets.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "hwy/highway.h"
#include "src/dispatch/dispatch.h"

namespace rlx {
namespace detail {

std::atomic<std::int32_t> g_dispatch_index{-1};

namespace {

std::mutex g_mutex;                     // serialises choosing the target
std::atomic<std::int64_t> g_active{0};  // Highway bit of the active target

// HWY_EXPORT tables hold one slot per dynamic target plus the fallback; a
// build with a single target has a table of one slot.
std::int32_t TableIndexOf(std::int64_t target) {
  if constexpr ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0) {
    return 0;
  } else {
    // hwy::ChosenTarget maps a target bit to its table slot; a private
    // instance leaves Highway's process-wide choice alone.
    hwy::ChosenTarget chosen;
    chosen.Update(target);
    return static_cast<std::int32_t>(chosen.GetIndex());
  }
}

// Targets as Highway bits, best (lowest bit) first.
std::vector<std::int64_t> Bits(std::int64_t mask) {
  std::vector<std::int64_t> bits;
  for (; mask != 0; mask &= mask - 1) bits.push_back(mask & -mask);
  return bits;
}

std::int64_t SupportedMask() {
  std::int64_t mask = hwy::SupportedTargets() & HWY_TARGETS;
  // The portable fallback runs on every CPU even where Highway does not
  // report it.
  mask |= HWY_TARGETS & (HWY_EMU128 | HWY_SCALAR);
  if (mask == 0) mask = HWY_STATIC_TARGET;
  return mask;
}

std::string Join(const std::vector<std::int64_t>& bits) {
  std::string out;
  for (std::int64_t bit : bits) {
    if (!out.empty()) out += ", ";
    out += hwy::TargetName(bit);
  }
  return out;
}

// Resolves `name` to a supported target bit or throws, naming `who`.
std::int64_t ParseTarget(std::string_view name, const char* who) {
  for (std::int64_t bit : Bits(SupportedMask())) {
    if (name == hwy::TargetName(bit)) return bit;
  }
  const bool compiled = [&] {
    for (std::int64_t bit : Bits(HWY_TARGETS)) {
      if (name == hwy::TargetName(bit)) return true;
    }
    return false;
  }();
  throw std::invalid_argument(
      std::string(who) + ": target \"" + std::string(name) + "\" is " +
      (compiled ? "compiled but not supported by this CPU"
                : "not a target of this build") +
      "; supported targets: " + Join(Bits(SupportedMask())) +
      " (compiled: " + Join(Bits(HWY_TARGETS)) + ")");
}

void Activate(std::int64_t bit) {
  g_active.store(bit, std::memory_order_relaxed);
#if defined(RLX_TEST_MISROUTE_AVX2) && (HWY_TARGETS & HWY_AVX2) && \
    (HWY_TARGETS & HWY_SSE4)
  // A deliberately wrong table entry (RLX_ATTN_MASK_TEST_MISROUTE_AVX2).
  if (bit == HWY_AVX2) {
    g_dispatch_index.store(TableIndexOf(HWY_SSE4), std::memory_order_release);
    return;
  }
#endif
  g_dispatch_index.store(TableIndexOf(bit), std::memory_order_release);
}

std::int64_t BestSupported() { return SupportedMask() & -SupportedMask(); }

}  // namespace

std::size_t ChooseDispatchIndex() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::int32_t index = g_dispatch_index.load(std::memory_order_acquire);
  if (index >= 0) return static_cast<std::size_t>(index);
  const char* env = std::getenv("RLX_ATTN_TARGET");
  if (env != nullptr && env[0] != '\0') {
    Activate(ParseTarget(env, "RLX_ATTN_TARGET"));
  } else {
    Activate(BestSupported());
  }
  return static_cast<std::size_t>(g_dispatch_index.load());
}

}  // namespace detail

std::vector<std::string> compiled_targets() {
  std::vector<std::string> names;
  for (std::int64_t bit : detail::Bits(HWY_TARGETS)) {
    names.emplace_back(hwy::TargetName(bit));
  }
  return names;
}

std::vector<std::string> supported_targets() {
  std::vector<std::string> names;
  for (std::int64_t bit : detail::Bits(detail::SupportedMask())) {
    names.emplace_back(hwy::TargetName(bit));
  }
  return names;
}

std::string active_target() {
  detail::DispatchIndex();
  return hwy::TargetName(detail::g_active.load(std::memory_order_relaxed));
}

void force_target(std::string_view name) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  if (name.empty()) {
    detail::Activate(detail::BestSupported());
  } else {
    detail::Activate(detail::ParseTarget(name, "force_target"));
  }
}

}  // namespace rlx
