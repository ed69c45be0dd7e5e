// SPDX-License-Identifier: MIT OR Apache-2.0
// Dispatching entry points of the decode masks: argument checks, then one
// dispatch per call.
#include "rlx/attn_mask.h"

#include <limits>
#include <stdexcept>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/mask/attn_mask.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/mask/attn_mask-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/util/checked_size.h"

namespace rlx {

HWY_EXPORT(FillDecodeMask);

namespace {

void CheckPastWithinUpper(const char* who, std::size_t past_seq,
                          std::size_t upper) {
  if (past_seq > upper) {
    throw std::invalid_argument(
        std::string(who) + ": past_seq " + std::to_string(past_seq) +
        " exceeds the bucket's upper " + std::to_string(upper) +
        " (past keys must fit before the new token's slot)");
  }
  if (upper == std::numeric_limits<std::size_t>::max()) {
    throw std::invalid_argument(std::string(who) + ": upper " +
                                std::to_string(upper) +
                                " leaves no room for the mask's upper + 1");
  }
  if (!detail::CheckedMul(upper + 1, sizeof(float))) {
    throw std::invalid_argument(
        std::string(who) + ": upper " + std::to_string(upper) +
        " asks for a mask of upper + 1 floats, more than PTRDIFF_MAX (" +
        std::to_string(detail::kMaxSize) + ") bytes");
  }
}

// First kept past key: past_seq - min(window, past_seq); window 0 = none.
std::size_t WindowStart(std::size_t past_seq, std::size_t window) {
  return window == 0 ? 0 : past_seq - std::min(window, past_seq);
}

}  // namespace

void fill_bucket_decode_mask(std::span<float> out, std::size_t past_seq,
                             std::size_t upper, std::size_t window) {
  CheckPastWithinUpper("fill_bucket_decode_mask", past_seq, upper);
  if (out.size() != upper + 1) {
    throw std::invalid_argument(
        "fill_bucket_decode_mask: out.size() " + std::to_string(out.size()) +
        " must be upper + 1 = " + std::to_string(upper + 1));
  }
  RLX_DYNAMIC_DISPATCH(FillDecodeMask)
  (out.data(), WindowStart(past_seq, window), past_seq, upper);
}

std::vector<float> bucket_decode_mask_windowed(std::size_t past_seq,
                                               std::size_t upper,
                                               std::size_t window) {
  CheckPastWithinUpper("bucket_decode_mask_windowed", past_seq, upper);
  std::vector<float> mask(upper + 1);
  fill_bucket_decode_mask(mask, past_seq, upper, window);
  return mask;
}

std::vector<float> bucket_decode_mask(std::size_t past_seq, std::size_t upper) {
  CheckPastWithinUpper("bucket_decode_mask", past_seq, upper);
  return bucket_decode_mask_windowed(past_seq, upper, 0);
}

}  // namespace rlx
#endif  // HWY_ONCE
