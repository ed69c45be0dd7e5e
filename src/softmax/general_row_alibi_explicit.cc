// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target SoftmaxAlibiExplicitRow of
// src/softmax/general_row_units-inl.h, called by SoftmaxRow
// (src/softmax/row_loop.cc) for the same target.
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#define RLX_GENERAL_ROW_UNIT RLX_UNIT_ALIBI_EXPLICIT
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/general_row_alibi_explicit.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/general_row_units-inl.h"
