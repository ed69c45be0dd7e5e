// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target SoftmaxAlibiRow of src/softmax/softmax_alibi_row-inl.h, called
// by the softmax rows of src/softmax/softmax_rows.cc for the same target.
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/softmax_alibi_rows.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/softmax_alibi_row-inl.h"
