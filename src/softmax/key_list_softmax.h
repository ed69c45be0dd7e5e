// SPDX-License-Identifier: MIT OR Apache-2.0
// The kernels of masks with a key list (MaskSpec::key_indices): the fused
// softmax over the listed keys alone (src/softmax/key_list_softmax-inl.h) and
// apply_mask's rows (src/scores/apply_key_list-inl.h), with the per-thread
// scratch they share. Arguments are checked by the caller
// (score_kernels.cc), the key list's slots included.
#ifndef RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_H_
#define RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_H_

#include <cstddef>
#include <cstdint>

#include "rlx/score_kernels.h"

namespace rlx::detail {

// Lanes of padding past each array's n entries: the kernels run whole
// vectors over a row's listed keys (at most 64 f32 lanes: SVE's 2048 bits).
inline constexpr std::size_t kKeyListPad = 64;

// One thread's work arrays for rows of n slots over k_len keys: the row's
// listed keys, those of them the per-element rules mask, the per-key ALiBi
// and bias terms, the transformed scores and exps, 16-bit results before
// their scatter, and a bit per key for removing duplicates (all 0 between
// rows). Allocated the first time a thread needs it (std::bad_alloc before
// anything is written), grown when it needs more, kept until it exits.
struct KeyListScratch {
  std::int32_t* keys;
  std::int32_t* masked;
  float* adds;
  float* vals;
  std::uint16_t* packed;
  std::uint64_t* seen;
};
KeyListScratch ThreadKeyListScratch(std::size_t n, std::size_t k_len);

// masked_softmax over `rows` of a mask with a key list: only the listed
// keys are read, transformed, exponentiated and written (the default mode
// also zeroes the rest of each row).
void KeyListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                        const MaskSpec& mask, const SoftmaxOptions& options,
                        RowRange rows);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_H_
