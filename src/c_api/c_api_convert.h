// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API's structs as the C++ API's (src/c_api/c_api_convert.cc): each
// conversion checks what C can get wrong and C++ cannot (null pointers, enum
// values outside their range, struct sizes) and, on failure, records why
// (naming the C function and its argument) and returns std::nullopt.
#ifndef RLX_SRC_C_API_C_API_CONVERT_H_
#define RLX_SRC_C_API_C_API_CONVERT_H_

#include <cstddef>
#include <optional>

#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_split.h"

namespace rlx::c_api {

Shape4 ToShape(const rlx_shape4& s);
Strides3 ToStrides(const rlx_strides3& s);

// *view, or std::nullopt after recording why (naming `function` and `which`
// argument).
std::optional<ScoreView> ToView(const char* function, const char* which,
                                const rlx_score_view* view);
std::optional<MaskSpec> ToMask(const char* function, const rlx_mask_spec* mask);
// Null options: the defaults.
std::optional<SoftmaxOptions> ToOptions(const char* function,
                                        const rlx_softmax_options* options);

// The three arguments every softmax entry point converts (a failure is
// recorded, naming `fn`).
struct SoftmaxCall {
  ScoreView view;
  MaskSpec mask;
  SoftmaxOptions options;
};
std::optional<SoftmaxCall> ToSoftmaxCall(const char* fn,
                                         const rlx_score_view* scores,
                                         const rlx_mask_spec* mask,
                                         const rlx_softmax_options* options);

// Null rows: every row of `shape`.
RowRange ToRows(const rlx_row_range* rows, const Shape4& shape);
KeyRange ToKeys(const rlx_key_range& keys);

}  // namespace rlx::c_api

#endif  // RLX_SRC_C_API_C_API_CONVERT_H_
