// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target SoftmaxKeepByteRow of src/softmax/softmax_keep_byte_row-inl.h,
// called by SoftmaxRow (src/softmax/softmax_rows.cc) for the same target.
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/softmax_keep_byte_rows.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/softmax_keep_byte_row-inl.h"
