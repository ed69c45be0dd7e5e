// SPDX-License-Identifier: MIT OR Apache-2.0
// Scalar reference implementations: the oracle that tests and benchmarks
// compare the SIMD kernels to. Written for clarity, not speed; each follows
// the seed (attn_mask.rs) or DESIGN.md line by line.
#ifndef RLX_SRC_REFERENCE_H_
#define RLX_SRC_REFERENCE_H_

#include <cstddef>

namespace rlx::reference {

// The seed's bucket_decode_mask_windowed, into out[0, upper]:
// 1.0f where lo <= i < past_seq or i == upper, lo = past_seq -
// min(window, past_seq) (window 0: lo = 0). Precondition: past_seq <= upper.
void decode_mask(float* out, std::size_t past_seq, std::size_t upper,
                 std::size_t window);

}  // namespace rlx::reference

#endif  // RLX_SRC_REFERENCE_H_
