// SPDX-License-Identifier: MIT OR Apache-2.0
// Scalar reference implementations: the oracle that tests and benchmarks
// compare the SIMD kernels to. Written for clarity, not speed; each follows
// the seed (attn_mask.rs) or docs/SEMANTICS.md line by line.
#ifndef RLX_TESTS_REFERENCE_REFERENCE_H_
#define RLX_TESTS_REFERENCE_REFERENCE_H_

#include <cstddef>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"

namespace rlx::reference {

// The seed's bucket_decode_mask_windowed, into out[0, upper]:
// 1.0f where lo <= i < past_seq or i == upper, lo = past_seq -
// min(window, past_seq) (window 0: lo = 0). Precondition: past_seq <= upper.
void decode_mask(float* out, std::size_t past_seq, std::size_t upper,
                 std::size_t window);

// Element `off` of a view (counted in elements of its type), as a double.
double element_at(const ScoreView& v, std::size_t off);

// Whether key k of row (b, h, q) is kept by a keep-style mask, straight from
// docs/SEMANTICS.md (abs_q = query offset + q). For kBias: the bias is not
// -inf.
bool is_kept(const MaskSpec& mask, const Shape4& scores, std::size_t b,
             std::size_t h, std::size_t q, std::size_t k);

// Whether row (b, h, q) lists key k: its key list names it and its block
// list lists k's block (each true when absent).
bool is_listed(const MaskSpec& mask, std::size_t b, std::size_t h,
               std::size_t q, std::size_t k);

// The additive bias of (b, h, q, k) for kBias masks, 0 otherwise.
float bias_at(const MaskSpec& mask, const Shape4& scores, std::size_t b,
              std::size_t h, std::size_t q, std::size_t k);

// Scalar apply_mask over `rows`, any score type. Arguments are assumed valid.
void apply_mask(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                float fill);

// The ALiBi term -slope_h * |p_q - p_k| of (b, h, q, k) from logical
// positions (0 without slopes), in double.
double alibi_at(const MaskSpec& mask, const Shape4& scores,
                const SoftmaxOptions& options, std::size_t b, std::size_t h,
                std::size_t q, std::size_t k);

// Masked softmax over `rows` in double precision, rounded once to the output
// type, with every SoftmaxOptions field: sinks, ALiBi, row_lse (written for
// `rows`, rounded to f32) and zero_masked (false: masked keys not written;
// the kernels also write +0 on the masked keys inside kept_keys, and with
// a key list on the listed ones inside it).
// `in` and `out` may be the same view. Arguments are assumed valid.
void masked_softmax(const ScoreView& in, const ScoreView& out,
                    const MaskSpec& mask, const SoftmaxOptions& options,
                    RowRange rows);

}  // namespace rlx::reference

#endif  // RLX_TESTS_REFERENCE_REFERENCE_H_
