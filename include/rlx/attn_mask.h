// SPDX-License-Identifier: MIT OR Apache-2.0
// Decode masks for bucketed decode: the seed module (attn_mask.rs) ported.
//
// K layout in the decode graph, `upper + 1` keys wide:
//   K[0 .. past_seq)      real past keys from the KV cache
//   K[past_seq .. upper)  zero padding up to the bucket's extent
//   K[upper]              the new token's own (rope-rotated) key
// A keep mask holds 1.0f where attention may land and 0.0f elsewhere; a
// consumer treats m >= 0.5f as kept. The new token at `upper` is always kept
// (an earlier off-by-one that masked it collapsed decode to degenerate
// tokens), and the padding is never kept.
#ifndef RLX_ATTN_MASK_H_
#define RLX_ATTN_MASK_H_

#include <rlx/export.h>

#include <cstddef>
#include <span>
#include <vector>

namespace rlx {

// Causal decode mask padded to bucket `upper`: length upper + 1, 1.0f at
// i < past_seq and at i == upper, 0.0f elsewhere.
// Throws std::invalid_argument if past_seq > upper.
RLX_ATTN_MASK_API std::vector<float> bucket_decode_mask(std::size_t past_seq,
                                                        std::size_t upper);

// Sliding-window decode mask: 1.0f at lo <= i < past_seq and at i == upper,
// lo = past_seq - min(window, past_seq). The current token (absolute position
// past_seq) attends to the `window` most recent cached keys and itself.
// window == 0 means no window: the causal mask above, as does any
// window >= past_seq. Throws std::invalid_argument if past_seq > upper.
RLX_ATTN_MASK_API std::vector<float> bucket_decode_mask_windowed(
    std::size_t past_seq, std::size_t upper, std::size_t window);

// Writes bucket_decode_mask_windowed(past_seq, upper, window) into `out`
// without allocating, with the SIMD kernel of the active target. `out` may be
// unaligned. Throws std::invalid_argument, writing nothing, if
// out.size() != upper + 1 or past_seq > upper (or upper + 1 overflows).
RLX_ATTN_MASK_API void fill_bucket_decode_mask(std::span<float> out,
                                               std::size_t past_seq,
                                               std::size_t upper,
                                               std::size_t window = 0);

}  // namespace rlx

#endif  // RLX_ATTN_MASK_H_
