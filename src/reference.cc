// SPDX-License-Identifier: MIT OR Apache-2.0
#include "src/reference.h"

namespace rlx::reference {

void decode_mask(float* out, std::size_t past_seq, std::size_t upper,
                 std::size_t window) {
  const std::size_t lo =
      window == 0 ? 0 : (past_seq > window ? past_seq - window : 0);
  for (std::size_t i = 0; i <= upper; ++i) {
    const bool real_past_in_window = i >= lo && i < past_seq;
    out[i] = (real_past_in_window || i == upper) ? 1.0f : 0.0f;
  }
}

}  // namespace rlx::reference
