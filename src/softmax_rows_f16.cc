// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax of f16 rows (src/softmax_rows.h says why one unit per type).
#include "src/softmax_rows_targets.h"  // first: sets the targets
//
#include "src/softmax_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax_rows_f16.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/score_kernels-inl.h"

RLX_SOFTMAX_ROWS_PER_TARGET(F16);

#if HWY_ONCE
#include "src/dispatch.h"

RLX_SOFTMAX_ROWS_EXPORT(F16)
#endif  // HWY_ONCE
