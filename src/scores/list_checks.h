// SPDX-License-Identifier: MIT OR Apache-2.0
// The checks of a mask's list parts (docs/SEMANTICS.md, "Key lists" and
// "Block lists"), called by CheckMask and the entry points
// (src/scores/score_kernels.cc): each throws std::invalid_argument naming
// `who` and the values, before anything is written.
#ifndef RLX_SRC_SCORES_LIST_CHECKS_H_
#define RLX_SRC_SCORES_LIST_CHECKS_H_

#include "rlx/scores.h"

namespace rlx::detail {

// A key list's extents against the scores'.
void CheckKeyList(const char* who, const MaskSpec& mask, const Shape4& scores);

// Every slot of the key-list rows that scores rows `rows` read.
void CheckKeyListSlots(const char* who, const MaskSpec& mask,
                       const Shape4& scores, RowRange rows);

// A block list's extents against the scores'.
void CheckBlockList(const char* who, const MaskSpec& mask,
                    const Shape4& scores);

// Every entry of the block-list rows that scores rows `rows` read: counts,
// indices, no key block listed twice.
void CheckBlockListRows(const char* who, const MaskSpec& mask,
                        const Shape4& scores, RowRange rows);

}  // namespace rlx::detail

#endif  // RLX_SRC_SCORES_LIST_CHECKS_H_
