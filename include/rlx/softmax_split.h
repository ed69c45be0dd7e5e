// SPDX-License-Identifier: MIT OR Apache-2.0
// A softmax row split over threads and finished in place (docs/SEMANTICS.md,
// "Split rows finished in place").
//
// One long row (a decode step at a long context) is more work than one
// thread should do alone. Its keys are split into P disjoint key ranges
// (split_kept_keys gives ranges of equal cost), and
// each of P threads runs two steps on its own range, with one
// synchronisation between them:
//
//   1. masked_softmax_part(scores, mask, keys_p, stats_p, options, rows):
//      the part's maximum, its exps (stored in place, relative to the part's
//      own maximum) and its statistics stats_p[r] per row;
//   -- every part's step 1 done (the executor's barrier) --
//   2. finish_softmax_part(scores, mask, keys_p, parts, p, options, rows):
//      the row's log-sum-exp from every part's statistics, and this part's
//      keys scaled into probabilities.
//
// Together the parts are masked_softmax of the whole row: the same mask and
// options (scale, softcap, ALiBi, sinks, row_lse, zero_masked), with no merge
// pass and no masked key rescaled. Each part reads and writes only its own
// key range (step 2 reads the other parts' statistics), so the parts may
// run concurrently on one tensor.
#ifndef RLX_SOFTMAX_SPLIT_H_
#define RLX_SOFTMAX_SPLIT_H_

#include <rlx/export.h>

#include <cstddef>
#include <span>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"

namespace rlx {

// The keys [begin, end) of every row of a call that one part covers.
struct KeyRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// What the default mode's zero fill of a masked key costs, relative to the
// softmax of a kept key (three passes and an exp): about a quarter
// (measured on AVX3 with split_row_in_place,
// bench/suites/softmax_ext_bench.cc).
inline constexpr double kMaskedKeyFillCost = 0.25;

// Part `part` of a balanced split of a row into `parts` key ranges: the
// ranges are disjoint, in order and cover [0, k_len); each costs about 1 /
// parts of the row, where a key inside the row's kept_keys (`kept`, as
// kept_keys(mask, b, q, q_len, k_len) reports it) costs 1 and a key outside
// costs `masked_key_cost` (rounded to sixteenths): kMaskedKeyFillCost in the
// default mode, whose step 1 zero-fills them, 0 for kept-only writes, where
// no step touches them. Each part's cost is within about one kept key's of
// the ideal share. With a cost of 0, boundaries fall on kept keys, so a part is
// empty only when the row keeps fewer keys than there are parts. Throws
// std::invalid_argument naming split_kept_keys and the values for parts 0,
// part >= parts, a masked_key_cost outside [0, 1], or intervals that are
// empty, out of order or beyond k_len.
RLX_ATTN_MASK_API KeyRange
split_kept_keys(const KeptKeys& kept, std::size_t k_len, std::size_t part,
                std::size_t parts, double masked_key_cost = kMaskedKeyFillCost);

// One part's statistics for one row, written by masked_softmax_part: the
// part's stored values v_k relate to the row's transformed kept scores z_k
// by exp(z_k) = v_k * exp(log_scale) (within the softmax bound), and `sum`
// is the sum of its v_k. A part with no kept key: log_scale -inf, sum 0. A
// kept NaN or +inf score: both NaN.
struct SoftmaxPartStats {
  double log_scale = 0.0;
  double sum = 0.0;
};

// Step 1 for the keys in `keys` of every row in `rows`. Within that range it
// writes as masked_softmax writes (default mode: every key of the range,
// masked ones 0; kept-only writes: the keys of the range inside kept_keys),
// except that a kept key holds the exp of its score relative to the part's
// maximum, in the row type, not yet a probability. stats[r] ([batch * heads
// * q_len], indexed as row_lse) receives the part's statistics for each row
// r of `rows`. The mask and the options are the whole row's:
// options.sink_logits and options.row_lse are ignored here (step 2 uses
// them). A range with no key of a row gives that row no kept key (stats -inf,
// 0). Throws std::invalid_argument naming masked_softmax_part and the values
// for what masked_softmax rejects, a null stats, or keys.begin > keys.end or
// keys.end > k_len; nothing is written then. Allocates as masked_softmax
// does.
RLX_ATTN_MASK_API void masked_softmax_part(const ScoreView& scores,
                                           const MaskSpec& mask, KeyRange keys,
                                           SoftmaxPartStats* stats,
                                           const SoftmaxOptions& options,
                                           RowRange rows);
RLX_ATTN_MASK_API void masked_softmax_part(const ScoreView& scores,
                                           const MaskSpec& mask, KeyRange keys,
                                           SoftmaxPartStats* stats,
                                           const SoftmaxOptions& options = {});

// Step 2 for part `part` of `parts` (each part's stats array, in the same
// order for every part): per row r of `rows`, the row's log-sum-exp
//   lse = log(sum_i parts[i][r].sum * exp(parts[i][r].log_scale)
//             + exp(sink_h))
// (in double; sink_h from options.sink_logits, none if null), written to
// options.row_lse[r] when it is not null (give row_lse to one part's step 2
// only: every part would write the same value), and this part's kept values
// scaled by exp(log_scale - lse), rounded to f32 once, in place. Only the
// keys of kept_keys inside `keys` are scaled; the rest are left as step 1
// wrote them. A row with no kept key in any part stays zeros and its lse is
// -inf, sinks or not (as masked_softmax). A NaN in any part's statistics
// makes the row's lse NaN and every nonzero value of this part NaN (masked
// keys stay 0; a kept key whose exp underflowed to 0 does too).
//
// Error bound: f32 rows as masked_softmax (the factor replaces its
// reciprocal of the sum); bf16/f16 rows round once more to their type
// (step 1 stores the exps in it).
//
// Throws std::invalid_argument naming finish_softmax_part and the values for
// what masked_softmax_part rejects, no parts, a null parts[i], part >=
// parts.size(), or a NaN or +inf sink logit; nothing is written then.
RLX_ATTN_MASK_API void finish_softmax_part(
    const ScoreView& scores, const MaskSpec& mask, KeyRange keys,
    std::span<const SoftmaxPartStats* const> parts, std::size_t part,
    const SoftmaxOptions& options, RowRange rows);
RLX_ATTN_MASK_API void finish_softmax_part(
    const ScoreView& scores, const MaskSpec& mask, KeyRange keys,
    std::span<const SoftmaxPartStats* const> parts, std::size_t part,
    const SoftmaxOptions& options = {});

}  // namespace rlx

#endif  // RLX_SOFTMAX_SPLIT_H_
