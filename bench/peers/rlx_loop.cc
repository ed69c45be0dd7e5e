// SPDX-License-Identifier: MIT OR Apache-2.0
#include "bench/peers/rlx_loop.h"

#include <cmath>
#include <limits>
#include <vector>

#include "bench/harness/workloads.h"

namespace rlx::bench {
namespace {

// One row, exactly as the executor writes it.
void RlxRow(float* s, const float* m, bool bias, std::size_t k_len) {
  if (m != nullptr) {
    if (bias) {
      for (std::size_t k = 0; k < k_len; ++k) s[k] += m[k];
    } else {
      for (std::size_t k = 0; k < k_len; ++k) {
        if (m[k] < 0.5f) s[k] = -1e9f;
      }
    }
  }
  float max = -std::numeric_limits<float>::infinity();
  for (std::size_t k = 0; k < k_len; ++k) {
    if (s[k] > max) max = s[k];
  }
  float sum = 0.0f;
  for (std::size_t k = 0; k < k_len; ++k) {
    s[k] = std::exp(s[k] - max);
    sum += s[k];
  }
  for (std::size_t k = 0; k < k_len; ++k) s[k] /= sum;
}

const float* MaskRow(const RlxMask& mask, std::size_t r, std::size_t k_len) {
  if (mask.rows == nullptr) return nullptr;
  return mask.rows + ((r / mask.div) % mask.mod) * k_len;
}

template <typename T>
void RlxLoop16(T* scores, std::size_t num_rows, std::size_t k_len,
               const RlxMask& mask, T (*narrow)(float)) {
  std::vector<float> row(k_len);
  for (std::size_t r = 0; r < num_rows; ++r) {
    T* s = scores + r * k_len;
    for (std::size_t k = 0; k < k_len; ++k) row[k] = ToF32(s[k]);
    RlxRow(row.data(), MaskRow(mask, r, k_len), mask.bias, k_len);
    for (std::size_t k = 0; k < k_len; ++k) s[k] = narrow(row[k]);
  }
}

}  // namespace

void RlxLoop(float* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask) {
  for (std::size_t r = 0; r < num_rows; ++r) {
    RlxRow(scores + r * k_len, MaskRow(mask, r, k_len), mask.bias, k_len);
  }
}

void RlxLoop(bf16* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask) {
  RlxLoop16(scores, num_rows, k_len, mask, &ToBF16);
}

void RlxLoop(f16* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask) {
  RlxLoop16(scores, num_rows, k_len, mask, &ToF16);
}

}  // namespace rlx::bench
