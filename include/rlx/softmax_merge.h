// SPDX-License-Identifier: MIT OR Apache-2.0
// Merging a softmax row computed in parts (docs/SEMANTICS.md, "Row
// log-sum-exp").
//
// An executor that splits one long row's keys over threads gives each thread
// a view of a key sub-range (with a mask whose logical positions match the
// whole row's: e.g. query_offsets or explicit positions) and runs
// masked_softmax on it with SoftmaxOptions::row_lse set. Each part is then a
// softmax over its own keys; merge_softmax_parts rescales them in place,
//   lse_total = log(sum_parts exp(lse_part) [+ exp(sink_h)]),
//   p = p_part * exp(lse_part - lse_total),
// so that together they are the softmax of the whole row, within the
// softmax bound (one more f32 rounding per probability; bf16 / f16 parts
// round once more to their type).
//
// Sinks: either exactly one part carries the learned sink logits (its
// options.sink_logits; then that part must have a kept key, since a part
// with none reports lse -inf and its sink is lost), or no part does and the
// merge adds them here (`sink_logits`, [heads]), which is exact in every
// case.
#ifndef RLX_SOFTMAX_MERGE_H_
#define RLX_SOFTMAX_MERGE_H_

#include <rlx/export.h>

#include <cstddef>
#include <span>

#include "rlx/scores.h"

namespace rlx {

// One part of a split row set: its probabilities (rescaled in place) and the
// row_lse its masked_softmax call wrote. Every part of a merge has the same
// type, batch, heads and q_len; k_len (the part's keys) may differ.
struct SoftmaxPart {
  ScoreView probs;
  const float* row_lse = nullptr;  // [batch * heads * q_len]
};

// Rescales every row of every part so that the parts form one softmax per
// row (see above). Rows are (b * heads + h) * q_len + q, as in row_lse.
// `merged_lse` (optional, [batch * heads * q_len]) receives lse_total.
// `sink_logits` (optional, [heads]): sinks no part carried.
//
// A part whose lse is -inf (no kept key) is left as it is (all zeros); a
// row where every part's is -inf stays as it is and its merged lse is -inf,
// sinks or not (as masked_softmax reports a row with no kept key). A NaN lse
// makes the merged row NaN. Every element of a part is scaled, masked keys
// included: with zero_masked = false their (unspecified) contents are scaled
// too.
//
// Throws std::invalid_argument naming merge_softmax_parts and the values for
// no parts, a null probs.data or row_lse, an invalid type, an empty extent,
// a row stride below k_len, a view that cannot exist in memory, parts that
// differ in type, batch, heads or q_len, or a NaN or +inf sink logit.
// Nothing is written then.
RLX_ATTN_MASK_API void merge_softmax_parts(std::span<const SoftmaxPart> parts,
                                           float* merged_lse = nullptr,
                                           const float* sink_logits = nullptr);

}  // namespace rlx

#endif  // RLX_SOFTMAX_MERGE_H_
