// SPDX-License-Identifier: MIT OR Apache-2.0
// The score kernels: masked_softmax (in place or into out), apply_mask, and
// the ALiBi slopes the softmax takes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <limits>
#include <optional>

#include "bindings/python/src/arrays.h"
#include "bindings/python/src/mask.h"
#include "bindings/python/src/module.h"
#include "rlx/score_kernels.h"

namespace rlx::python {
namespace {

using namespace pybind11::literals;  // NOLINT: "name"_a

// The softmax from src into out; errors name the Python function `kWho`
// and its argument `src_name`.
py::object SoftmaxInto(const char* kWho, const char* src_name,
                       const py::object& src, const py::object& out,
                       const std::optional<Mask>& mask, float scale,
                       float softcap, const py::object& sink_logits,
                       const py::object& alibi_slopes,
                       const py::object& row_lse, bool zero_masked,
                       const Rows& rows) {
  const ArrayPtr in_array = Array::From(src, kWho, src_name);
  const ScoreView in = ScoreViewOf(*in_array, kWho, src_name, false);
  const ArrayPtr out_array = Array::From(out, kWho, "out");
  const ScoreView out_view = ScoreViewOf(*out_array, kWho, "out", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, in.shape);
  const Options o = OptionsOf(kWho, in.shape, scale, softcap, sink_logits,
                              alibi_slopes, row_lse, zero_masked);
  const RowRange range = RowsOf(rows, in.shape);
  {
    py::gil_scoped_release release;
    masked_softmax(in, out_view, spec, o.options, range);
  }
  return out;
}

py::object MaskedSoftmaxInto(const py::object& src, const py::object& out,
                             const std::optional<Mask>& mask, float scale,
                             float softcap, const py::object& sink_logits,
                             const py::object& alibi_slopes,
                             const py::object& row_lse, bool zero_masked,
                             const Rows& rows) {
  return SoftmaxInto("masked_softmax_into", "src", src, out, mask, scale,
                     softcap, sink_logits, alibi_slopes, row_lse, zero_masked,
                     rows);
}

// In place, or into `out` when given (C++'s masked_softmax(in, out, ...)).
py::object MaskedSoftmax(const py::object& scores,
                         const std::optional<Mask>& mask, const py::object& out,
                         float scale, float softcap,
                         const py::object& sink_logits,
                         const py::object& alibi_slopes,
                         const py::object& row_lse, bool zero_masked,
                         const Rows& rows) {
  constexpr const char* kWho = "masked_softmax";
  if (!out.is_none()) {
    return SoftmaxInto(kWho, "scores", scores, out, mask, scale, softcap,
                       sink_logits, alibi_slopes, row_lse, zero_masked, rows);
  }
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, view.shape);
  const Options o = OptionsOf(kWho, view.shape, scale, softcap, sink_logits,
                              alibi_slopes, row_lse, zero_masked);
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    masked_softmax(view, spec, o.options, range);
  }
  return scores;
}

py::object ApplyMask(const py::object& scores, const Mask& mask, float fill,
                     const Rows& rows) {
  constexpr const char* kWho = "apply_mask";
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = mask.Bind(kWho, view.shape);
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    apply_mask(view, spec, range, fill);
  }
  return scores;
}

}  // namespace

void DefineScores(py::module_& m) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  m.def("masked_softmax", &MaskedSoftmax, "scores"_a, "mask"_a = py::none(),
        py::kw_only(), "out"_a = py::none(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "row_lse"_a = py::none(),
        "zero_masked"_a = true, "rows"_a = py::none(),
        "p = softmax(mask(softcap(scale * s))) per row, in place; returns "
        "scores. With out=, from scores into out instead (same shape and "
        "dtype; may be the same memory) and returns out. rows=(begin, end) "
        "over batch * heads * q_len.\n\n"
        "Masked keys come out 0 and a fully masked row all zeros. softcap "
        "c > 0 applies c * tanh(x / c) before masking; sink_logits (float32 "
        "[heads]) enter only the denominator; alibi_slopes (float32 "
        "[heads]) add -slope * |p_q - p_k|; row_lse (writable float32 "
        "[batch * heads * q_len]) receives each row's log-sum-exp (-inf "
        "for a fully masked row); zero_masked=False writes only the keys "
        "inside kept_keys.");
  m.def("masked_softmax_into", &MaskedSoftmaxInto, "src"_a, "out"_a,
        "mask"_a = py::none(), py::kw_only(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "row_lse"_a = py::none(),
        "zero_masked"_a = true, "rows"_a = py::none(),
        "masked_softmax(src, mask, out=out) under the C API's name: from "
        "src into out (same shape and dtype; may be the same memory); "
        "returns out.");
  m.def("apply_mask", &ApplyMask, "scores"_a, "mask"_a, py::kw_only(),
        "fill"_a = neg_inf, "rows"_a = py::none(),
        "Masked scores become fill (a bias is added instead), in place; "
        "returns scores.");
  m.def(
      "alibi_slopes",
      [](std::size_t heads, float max_bias) {
        return ToArray(alibi_slopes(heads, max_bias));
      },
      "heads"_a, "max_bias"_a = 8.0f, "ggml's ALiBi slopes, float32 [heads].");
}

}  // namespace rlx::python
