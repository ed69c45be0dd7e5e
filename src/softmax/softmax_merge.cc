// SPDX-License-Identifier: MIT OR Apache-2.0
// merge_softmax_parts: the checks and the per-row lse arithmetic in plain
// C++ (double), the per-element scale per target
// (src/softmax/softmax_merge-inl.h).
#include "rlx/softmax_merge.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/softmax_merge.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/softmax_merge-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/util/checked_size.h"

namespace rlx {

HWY_EXPORT(ScaleRow);

namespace {

constexpr const char* kWho = "merge_softmax_parts";

[[noreturn]] void Fail(const std::string& what) {
  throw std::invalid_argument(std::string(kWho) + ": " + what);
}

std::string ShapeString(const Shape4& s) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.heads) + ", " +
         std::to_string(s.q_len) + ", " + std::to_string(s.k_len) + "]";
}

void CheckPart(std::size_t index, const SoftmaxPart& part,
               const SoftmaxPart& first) {
  const std::string name = "part " + std::to_string(index);
  const ScoreView& v = part.probs;
  if (v.data == nullptr) Fail(name + " probs.data is null");
  if (part.row_lse == nullptr) Fail(name + " row_lse is null");
  if (v.type != ScoreType::kF32 && v.type != ScoreType::kBF16 &&
      v.type != ScoreType::kF16) {
    Fail(name + " type " + std::to_string(static_cast<int>(v.type)) +
         " is not a ScoreType");
  }
  const Shape4& s = v.shape;
  if (s.batch == 0 || s.heads == 0 || s.q_len == 0 || s.k_len == 0) {
    Fail(name + " shape " + ShapeString(s) + " has an empty extent");
  }
  if (s.q_len > 1 && v.strides.row < s.k_len) {
    Fail(name + " row stride " + std::to_string(v.strides.row) +
         " is below k_len " + std::to_string(s.k_len));
  }
  const std::size_t elem =
      v.type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
  if (!detail::ElementCount(s) || !detail::SpanBytes(s, v.strides, elem)) {
    Fail(name + " shape " + ShapeString(s) +
         " cannot exist in memory (more than PTRDIFF_MAX elements or bytes)");
  }
  const Shape4& f = first.probs.shape;
  if (v.type != first.probs.type) {
    Fail(name + " type " + std::to_string(static_cast<int>(v.type)) +
         " differs from part 0's " +
         std::to_string(static_cast<int>(first.probs.type)));
  }
  if (s.batch != f.batch || s.heads != f.heads || s.q_len != f.q_len) {
    Fail(name + " shape " + ShapeString(s) + " differs from part 0's " +
         ShapeString(f) + " in batch, heads or q_len");
  }
}

}  // namespace

void merge_softmax_parts(std::span<const SoftmaxPart> parts, float* merged_lse,
                         const float* sink_logits) {
  if (parts.empty()) Fail("no parts");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CheckPart(i, parts[i], parts[0]);
  }
  const Shape4& s = parts[0].probs.shape;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (sink_logits != nullptr) {
    for (std::size_t h = 0; h < s.heads; ++h) {
      if (std::isnan(sink_logits[h]) || sink_logits[h] == kInf) {
        Fail("sink_logits[" + std::to_string(h) + "] (head " +
             std::to_string(h) + ") is " + std::to_string(sink_logits[h]) +
             ": must be finite or -inf (no sink)");
      }
    }
  }
  // One dispatch per call.
  auto* const scale_row = &RLX_DYNAMIC_DISPATCH(ScaleRow);
  const std::size_t rows = s.rows();
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t b = r / (s.heads * s.q_len), h = (r / s.q_len) % s.heads,
                      q = r % s.q_len;
    // lse_total = m + log(sum exp(lse_i - m)), m the largest part lse.
    // No kept key in any part: the row stays zeros and its lse -inf, sinks
    // or not (as masked_softmax reports such a row).
    double m = -kInf;
    bool nan = false;
    for (const SoftmaxPart& part : parts) {
      const double lse = part.row_lse[r];
      if (std::isnan(lse)) nan = true;
      m = std::max(m, lse);
    }
    const double sink = sink_logits != nullptr ? sink_logits[h] : -kInf;
    m = m == -kInf ? m : std::max(m, sink);
    double total;
    if (nan) {
      total = std::numeric_limits<double>::quiet_NaN();
    } else if (m == -kInf) {
      if (merged_lse != nullptr)
        merged_lse[r] = -std::numeric_limits<float>::infinity();
      continue;
    } else {
      double sum = sink != -kInf ? std::exp(sink - m) : 0.0;
      for (const SoftmaxPart& part : parts) {
        sum += std::exp(static_cast<double>(part.row_lse[r]) - m);
      }
      total = m + std::log(sum);
    }
    if (merged_lse != nullptr) merged_lse[r] = static_cast<float>(total);
    for (const SoftmaxPart& part : parts) {
      const double lse = part.row_lse[r];
      if (lse == -kInf) continue;  // no kept key: zeros stay zeros
      const ScoreView& v = part.probs;
      const std::size_t offset = (s.batch == 1 ? 0 : b * v.strides.batch) +
                                 (s.heads == 1 ? 0 : h * v.strides.head) +
                                 (s.q_len == 1 ? 0 : q * v.strides.row);
      const std::size_t elem =
          v.type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
      scale_row(v.type, static_cast<char*>(v.data) + offset * elem,
                v.shape.k_len, static_cast<float>(std::exp(lse - total)));
    }
  }
}

}  // namespace rlx
#endif  // HWY_ONCE
