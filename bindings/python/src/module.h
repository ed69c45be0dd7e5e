// SPDX-License-Identifier: MIT OR Apache-2.0
// What the files of rlx_attn_mask._core share: each Define* adds one topic's
// names to the module (module.cc calls them in order), and the helpers below
// are the argument handling the score and planning functions have in common.
#ifndef RLX_BINDINGS_PYTHON_MODULE_H_
#define RLX_BINDINGS_PYTHON_MODULE_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "bindings/python/src/arrays.h"
#include "bindings/python/src/mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"

namespace rlx::python {

// The class MaskSpec (mask_spec.cc).
void DefineMaskSpec(py::module_& m);
// masked_softmax, masked_softmax_into, apply_mask, alibi_slopes (scores.cc).
void DefineScores(py::module_& m);
// kept_keys, BlockMask, classify_blocks, merge_softmax_parts and the split
// rows: split_kept_keys, masked_softmax_part, finish_softmax_part
// (planning.cc).
void DefinePlanning(py::module_& m);
// Bucket, BucketLadder, ladder_cost and the decode masks (ladders.cc).
void DefineLadders(py::module_& m);

// rows=(begin, end) over batch * heads * q_len; None = every row.
using Rows = std::optional<std::pair<std::size_t, std::size_t>>;
RowRange RowsOf(const Rows& rows, const Shape4& shape);

// A Python MaskSpec holding no arrays, of a structured rlx::MaskSpec.
Mask MaskOf(const MaskSpec& spec);
// `mask`, or MaskSpec.none() for None.
const Mask& MaskOr(const std::optional<Mask>& mask);

// The softmax keywords, borrowed and checked against scores of `shape`.
struct Options {
  SoftmaxOptions options;
  ArrayPtr sink_logits, alibi_slopes, row_lse;
};
Options OptionsOf(const char* who, const Shape4& shape, float scale,
                  float softcap, const py::object& sink_logits,
                  const py::object& alibi_slopes, const py::object& row_lse,
                  bool zero_masked);

// A new float32 NumPy array holding `v`.
py::array_t<float> ToArray(const std::vector<float>& v);

}  // namespace rlx::python

#endif  // RLX_BINDINGS_PYTHON_MODULE_H_
