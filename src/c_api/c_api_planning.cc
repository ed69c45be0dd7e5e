// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the planning helpers: block masks (rlx/block_mask.h), the
// merge of softmax parts (rlx/softmax_merge.h) and split rows finished in
// place (rlx/softmax_split.h).
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

#include "rlx/block_mask.h"
#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
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

// ---------------------------------------------------------------------------
// Block masks and split rows

rlx_status rlx_classify_blocks(const rlx_mask_spec* mask,
                               const rlx_shape4* shape, size_t batch_index,
                               size_t head, size_t tq, size_t tk,
                               const rlx_block_mask_view* out) {
  constexpr const char* kFn = "rlx_classify_blocks";
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  if (shape == nullptr || out == nullptr) {
    Record(kFn, "%s is NULL (batch_index %zu, head %zu, tq %zu, tk %zu)",
           shape == nullptr ? "shape" : "out", batch_index, head, tq, tk);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const rlx::BlockMaskView view{
        out->q_blocks,   out->k_blocks,           out->kv_num_blocks,
        out->kv_indices, out->full_kv_num_blocks, out->full_kv_indices};
    rlx::classify_blocks(*spec, ToShape(*shape), batch_index, head, tq, tk,
                         view);
  });
}

rlx_status rlx_merge_softmax_parts(const rlx_softmax_part* parts,
                                   size_t n_parts, float* merged_lse,
                                   const float* sink_logits) {
  constexpr const char* kFn = "rlx_merge_softmax_parts";
  if (parts == nullptr) {
    Record(kFn, "parts is NULL (n_parts %zu)", n_parts);
    return RLX_INVALID_ARGUMENT;
  }
  if (n_parts == 0) return InvalidArgument(kFn, "n_parts is 0: no parts");
  // The C++ parts: on the stack for the usual few, so that a merge per
  // decode step does not allocate.
  constexpr std::size_t kLocalParts = 16;
  std::array<rlx::SoftmaxPart, kLocalParts> local;
  return Guard(kFn, [&]() -> rlx_status {
    std::vector<rlx::SoftmaxPart> heap;
    rlx::SoftmaxPart* converted = local.data();
    if (n_parts > kLocalParts) {
      heap.resize(n_parts);
      converted = heap.data();
    }
    for (std::size_t i = 0; i < n_parts; ++i) {
      char which[48];
      std::snprintf(which, sizeof(which), "parts[%zu].probs", i);
      const std::optional<rlx::ScoreView> view =
          ToView(kFn, which, &parts[i].probs);
      if (!view) return RLX_INVALID_ARGUMENT;
      converted[i] = {*view, parts[i].row_lse};
    }
    rlx::merge_softmax_parts(
        std::span<const rlx::SoftmaxPart>(converted, n_parts), merged_lse,
        sink_logits);
    return RLX_OK;
  });
}

// ---------------------------------------------------------------------------
// Split rows finished in place

rlx_status rlx_split_kept_keys(const rlx_kept_intervals* kept, size_t k_len,
                               size_t part, size_t parts,
                               double masked_key_cost, rlx_key_range* out) {
  constexpr const char* kFn = "rlx_split_kept_keys";
  if (kept == nullptr || out == nullptr) {
    Record(kFn, "%s is NULL (k_len %zu, part %zu, parts %zu)",
           kept == nullptr ? "kept" : "out", k_len, part, parts);
    return RLX_INVALID_ARGUMENT;
  }
  if (kept->count > RLX_MAX_KEPT_INTERVALS) {
    Record(kFn,
           "kept->count %zu exceeds RLX_MAX_KEPT_INTERVALS (%d) (k_len %zu, "
           "part %zu, parts %zu)",
           kept->count, RLX_MAX_KEPT_INTERVALS, k_len, part, parts);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    rlx::KeptKeys converted;
    converted.count = kept->count;
    for (std::size_t i = 0; i < kept->count; ++i) {
      converted.intervals[i] = {kept->intervals[i].begin,
                                kept->intervals[i].end};
    }
    const rlx::KeyRange range =
        rlx::split_kept_keys(converted, k_len, part, parts, masked_key_cost);
    *out = {range.begin, range.end};
  });
}

rlx_status rlx_masked_softmax_part(const rlx_score_view* scores,
                                   const rlx_mask_spec* mask,
                                   rlx_key_range keys,
                                   rlx_softmax_part_stats* stats,
                                   const rlx_softmax_options* options,
                                   const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax_part";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  // A null stats is the C++ function's to reject (with the values).
  return Guard(kFn, [&] {
    rlx::masked_softmax_part(view, spec, ToKeys(keys),
                             reinterpret_cast<rlx::SoftmaxPartStats*>(stats),
                             opts, ToRows(rows, view.shape));
  });
}

rlx_status rlx_finish_softmax_part(
    const rlx_score_view* scores, const rlx_mask_spec* mask, rlx_key_range keys,
    const rlx_softmax_part_stats* const* parts, size_t n_parts, size_t part,
    const rlx_softmax_options* options, const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_finish_softmax_part";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  if (parts == nullptr) {
    Record(kFn, "parts is NULL (n_parts %zu, part %zu)", n_parts, part);
    return RLX_INVALID_ARGUMENT;
  }
  if (n_parts == 0) return InvalidArgument(kFn, "n_parts is 0: no parts");
  // The C++ pointers: on the stack for the usual few, so that a split decode
  // step does not allocate. A null parts[i] is the C++ function's to reject.
  constexpr std::size_t kLocalParts = 16;
  std::array<const rlx::SoftmaxPartStats*, kLocalParts> local;
  return Guard(kFn, [&] {
    std::vector<const rlx::SoftmaxPartStats*> heap;
    const rlx::SoftmaxPartStats** converted = local.data();
    if (n_parts > kLocalParts) {
      heap.resize(n_parts);
      converted = heap.data();
    }
    for (std::size_t i = 0; i < n_parts; ++i) {
      converted[i] = reinterpret_cast<const rlx::SoftmaxPartStats*>(parts[i]);
    }
    rlx::finish_softmax_part(
        view, spec, ToKeys(keys),
        std::span<const rlx::SoftmaxPartStats* const>(converted, n_parts), part,
        opts, ToRows(rows, view.shape));
  });
}

}  // extern "C"
