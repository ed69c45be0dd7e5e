// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the score kernels (rlx/score_kernels.h): kept keys,
// apply_mask, masked_softmax and ALiBi slopes.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/c_api/c_api_convert.h"
#include "src/c_api/c_api_error.h"

namespace {

using rlx::c_api::Guard;
using rlx::c_api::InvalidArgument;
using rlx::c_api::Record;
using rlx::c_api::SoftmaxCall;
using rlx::c_api::ToKeys;
using rlx::c_api::ToMask;
using rlx::c_api::ToOptions;
using rlx::c_api::ToRows;
using rlx::c_api::ToShape;
using rlx::c_api::ToSoftmaxCall;
using rlx::c_api::ToView;

}  // namespace

extern "C" {

rlx_status rlx_kept_keys(const rlx_mask_spec* mask, size_t batch_index,
                         size_t q, size_t q_len, size_t k_len,
                         rlx_kept_intervals* out) {
  constexpr const char* kFn = "rlx_kept_keys";
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  if (out == nullptr) {
    Record(kFn, "out is NULL (batch_index %zu, q %zu, q_len %zu, k_len %zu)",
           batch_index, q, q_len, k_len);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const rlx::KeptKeys kept =
        rlx::kept_keys(*spec, batch_index, q, q_len, k_len);
    rlx_kept_intervals result{};
    result.count = kept.count;
    for (std::size_t i = 0; i < kept.count; ++i) {
      result.intervals[i] = {kept.intervals[i].begin, kept.intervals[i].end};
    }
    *out = result;
  });
}

rlx_status rlx_apply_mask(const rlx_score_view* scores,
                          const rlx_mask_spec* mask, const rlx_row_range* rows,
                          float fill) {
  constexpr const char* kFn = "rlx_apply_mask";
  const std::optional<rlx::ScoreView> view = ToView(kFn, "scores", scores);
  if (!view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  return Guard(kFn, [&] {
    rlx::apply_mask(*view, *spec, ToRows(rows, view->shape), fill);
  });
}

rlx_status rlx_masked_softmax(const rlx_score_view* scores,
                              const rlx_mask_spec* mask,
                              const rlx_softmax_options* options,
                              const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  return Guard(kFn, [&] {
    rlx::masked_softmax(view, spec, opts, ToRows(rows, view.shape));
  });
}

rlx_status rlx_masked_softmax_into(const rlx_score_view* in,
                                   const rlx_score_view* out,
                                   const rlx_mask_spec* mask,
                                   const rlx_softmax_options* options,
                                   const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax_into";
  const std::optional<rlx::ScoreView> in_view = ToView(kFn, "in", in);
  if (!in_view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::ScoreView> out_view = ToView(kFn, "out", out);
  if (!out_view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::SoftmaxOptions> opts = ToOptions(kFn, options);
  if (!opts) return RLX_INVALID_ARGUMENT;
  return Guard(kFn, [&] {
    rlx::masked_softmax(*in_view, *out_view, *spec, *opts,
                        ToRows(rows, in_view->shape));
  });
}

rlx_status rlx_alibi_slopes(size_t heads, float max_bias, float* out,
                            size_t out_len) {
  constexpr const char* kFn = "rlx_alibi_slopes";
  if (out == nullptr) {
    Record(kFn, "out is NULL (heads %zu, max_bias %g)", heads,
           static_cast<double>(max_bias));
    return RLX_INVALID_ARGUMENT;
  }
  if (out_len != heads) {
    Record(kFn, "out_len %zu is not heads %zu (max_bias %g)", out_len, heads,
           static_cast<double>(max_bias));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const std::vector<float> slopes = rlx::alibi_slopes(heads, max_bias);
    if (slopes.size() != heads) {
      throw std::logic_error("alibi_slopes returned " +
                             std::to_string(slopes.size()) + " slopes for " +
                             std::to_string(heads) + " heads");
    }
    std::memcpy(out, slopes.data(), heads * sizeof(float));
  });
}

}  // extern "C"
