// SPDX-License-Identifier: MIT OR Apache-2.0
// The baseline: a scalar port of the RLX CPU executor's masked softmax loop,
// compiled with the project's normal flags (no target attributes, no
// -march), as the executor itself would be.
#ifndef RLX_BENCH_PEERS_RLX_LOOP_H_
#define RLX_BENCH_PEERS_RLX_LOOP_H_

#include <cmath>
#include <cstddef>

#include "rlx/scores.h"

namespace rlx::bench {

// The executor's materialised mask: score row r uses the k_len floats at
// rows + ((r / div) % mod) * k_len, a keep mask (1.0 / 0.0) or, if `bias`,
// an additive bias; rows == nullptr means no mask.
struct RlxMask {
  const float* rows = nullptr;
  bool bias = false;
  std::size_t div = 1, mod = 1;
};

// Whether a mask row's entry `v` keeps its key (a bias: not -inf).
inline bool RlxKeeps(const RlxMask& mask, float v) {
  return mask.bias ? v != -HUGE_VALF : v >= 0.5f;
}

// The mask row of score row r (null: the mask keeps every key).
inline const float* RlxRow(const RlxMask& mask, std::size_t r,
                           std::size_t k_len) {
  return mask.rows == nullptr ? nullptr
                              : mask.rows + (r / mask.div) % mask.mod * k_len;
}

// For each of `num_rows` contiguous rows of k_len scores: per element
// `if (m[k] < 0.5f) s[k] = -1e9f;` (or s[k] += b[k] for a bias), then a
// three-pass softmax with std::exp: max, exp and sum, divide.
void RlxLoop(float* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask);

// The same on 16-bit rows: each row is widened to f32, run through the loop
// above and narrowed back (round to nearest even), as an executor without
// 16-bit arithmetic would.
void RlxLoop(bf16* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask);
void RlxLoop(f16* scores, std::size_t num_rows, std::size_t k_len,
             const RlxMask& mask);

}  // namespace rlx::bench

#endif  // RLX_BENCH_PEERS_RLX_LOOP_H_
