// SPDX-License-Identifier: MIT OR Apache-2.0
// ALiBi slopes, exactly as ggml computes them (ggml_soft_max's max_bias): in
// f32 with powf, so that a model run here and under llama.cpp sees the same
// slopes bit for bit.
#include <bit>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"

namespace rlx {

std::vector<float> alibi_slopes(std::size_t heads, float max_bias) {
  if (heads == 0) {
    throw std::invalid_argument("alibi_slopes: heads is 0");
  }
  if (!(max_bias >= 0.0f) || !std::isfinite(max_bias)) {
    throw std::invalid_argument(
        "alibi_slopes: max_bias " + std::to_string(max_bias) +
        " must be finite and >= 0 (heads " + std::to_string(heads) + ")");
  }
  // n = 2^floor(log2 heads): ggml's n_head_log2.
  const std::size_t n = std::bit_floor(heads);
  const float nf = static_cast<float>(n);
  const float m0 = powf(2.0f, -max_bias / nf);
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / nf);
  std::vector<float> slopes(heads);
  for (std::size_t h = 0; h < heads; ++h) {
    slopes[h] = h < n ? powf(m0, static_cast<float>(h + 1))
                      : powf(m1, static_cast<float>(2 * (h - n) + 1));
  }
  return slopes;
}

}  // namespace rlx
