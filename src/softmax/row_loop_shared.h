// SPDX-License-Identifier: MIT OR Apache-2.0
// What the row loops (src/softmax/plain_loop-inl.h, general_loop-inl.h)
// share: when a call prefetches its next rows, and a row's sink, row_lse
// entry, key shift and dense-row bytes. Plain C++, no Highway.
// docs/PERFORMANCE.md ("Prefetch thresholds") has the measurements behind
// the constants.
#ifndef RLX_SRC_SOFTMAX_ROW_LOOP_SHARED_H_
#define RLX_SRC_SOFTMAX_ROW_LOOP_SHARED_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/mask/mask_rows.h"

namespace rlx::detail {

// Calls whose rows total at most kPrefetchMinBytes are not prefetched: they
// sit in L1 or L2 already (a decode step at a short context, just written
// by QK^T), and the prefetches only take load slots.
constexpr std::size_t kPrefetchMinBytes = 128 * 1024;
// Calls above kFinishMinBytes (beyond the L2 and most of an L3 share: rows
// come from memory) also issue the part of the next row's plan that the exp
// steps did not reach, before the fill. Below it, the burst waits on miss
// buffers that L2 hits free soon anyway.
constexpr std::size_t kFinishMinBytes = 8 * 1024 * 1024;
// A plain batch's plan fetches the next batch's whole rows into L1 over its
// exps, and is issued only when they fit in this many bytes: a plan larger
// than L1 evicts its own first lines, and the batch's rows, before their
// passes read them.
constexpr std::size_t kMaxBatchPlanBytes = 32 * 1024;

// Whether a call whose rows span `call_bytes` prefetches each next row
// (kPrefetchMinBytes), and issues the rest of its plan before the fill
// (kFinishMinBytes).
struct CallPrefetch {
  bool rows, finish;
};
inline CallPrefetch CallPrefetchOf(std::size_t call_bytes) {
  return {call_bytes > kPrefetchMinBytes, call_bytes > kFinishMinBytes};
}

// The keys of the next row that a kept-only call's prefetch fetches: this
// row's largest kept interval, which the next head of a decode step shares
// and the next row of a causal head differs from by a key. Kept-only calls
// never touch the masked keys' lines, so fetching whole rows costs them
// more than no prefetch at all. Default-mode calls fetch all the row's (or
// the part's) keys, as their fill writes the masked ones.
inline KeyInterval LargestInterval(const KeptKeys& kept) {
  KeyInterval largest;
  for (std::size_t j = 0; j < kept.count; ++j) {
    if (kept.intervals[j].size() > largest.size()) largest = kept.intervals[j];
  }
  return largest;
}

// p_k - k of the keys of kept interval iv with implicit positions (a
// segment's shift, ALiBi's): 0, except for the Decode token, whose slot
// upper sits at position past.
inline std::int64_t KeyShift(const MaskSpec& mask, const Rules& rules,
                             const KeyInterval& iv) {
  return rules.decode && iv.begin == mask.upper
             ? static_cast<std::int64_t>(mask.past) -
                   static_cast<std::int64_t>(mask.upper)
             : 0;
}

// The sink logit of head h (-inf: none), and row r's log-sum-exp entry
// (null: none).
inline float HeadSink(const SoftmaxOptions& options, std::size_t h) {
  return options.sink_logits != nullptr
             ? options.sink_logits[h]
             : -std::numeric_limits<float>::infinity();
}
inline float* RowLse(const SoftmaxOptions& options, std::size_t r) {
  return options.row_lse != nullptr ? options.row_lse + r : nullptr;
}

// The dense part's address unit (its offsets count these) and row bytes.
inline std::size_t DenseUnitBytes(DenseKind dense) {
  switch (dense) {
    case DenseKind::kKeepU8:
      return 1;
    case DenseKind::kKeepBits:
      return sizeof(std::uint64_t);
    case DenseKind::kKeepF32:
    case DenseKind::kBias:
    case DenseKind::kNone:
      return sizeof(float);
  }
  return sizeof(float);
}

inline std::size_t DenseRowBytes(DenseKind dense, std::size_t n) {
  return dense == DenseKind::kKeepBits ? (n + 63) / 64 * sizeof(std::uint64_t)
                                       : n * DenseUnitBytes(dense);
}

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_ROW_LOOP_SHARED_H_
