// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_attn_mask._core: the C++ API (include/rlx/) on NumPy arrays and torch
// tensors, in place on the caller's memory. Every array argument is borrowed
// (bindings/python/src/arrays.h) and checked before the call; the kernels run
// with the GIL released. One file per topic adds its names (module.h); this
// one adds the module's own: DTypeError, __version__ and the targets.
#include "bindings/python/src/module.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>

#include "rlx/targets.h"
#include "rlx/version.h"

namespace rlx::python {

using namespace pybind11::literals;  // NOLINT: "name"_a

RowRange RowsOf(const Rows& rows, const Shape4& shape) {
  return rows ? RowRange{rows->first, rows->second} : RowRange::all(shape);
}

Mask MaskOf(const MaskSpec& spec) {
  Mask m;
  m.spec = spec;
  return m;
}

const Mask& MaskOr(const std::optional<Mask>& mask) {
  static const Mask kNone;
  return mask ? *mask : kNone;
}

Options OptionsOf(const char* who, const Shape4& shape, float scale,
                  float softcap, const py::object& sink_logits,
                  const py::object& alibi_slopes, const py::object& row_lse,
                  bool zero_masked) {
  Options o;
  o.options.scale = scale;
  o.options.softcap = softcap;
  o.options.zero_masked = zero_masked;
  if (!sink_logits.is_none()) {
    o.sink_logits = Array::From(sink_logits, who, "sink_logits");
    CheckVector(*o.sink_logits, who, "sink_logits", DType::kF32, shape.heads,
                false);
    o.options.sink_logits = static_cast<const float*>(o.sink_logits->data());
  }
  if (!alibi_slopes.is_none()) {
    o.alibi_slopes = Array::From(alibi_slopes, who, "alibi_slopes");
    CheckVector(*o.alibi_slopes, who, "alibi_slopes", DType::kF32, shape.heads,
                false);
    o.options.alibi_slopes = static_cast<const float*>(o.alibi_slopes->data());
  }
  if (!row_lse.is_none()) {
    o.row_lse = Array::From(row_lse, who, "row_lse");
    CheckVector(*o.row_lse, who, "row_lse", DType::kF32, shape.rows(), true);
    o.options.row_lse = static_cast<float*>(o.row_lse->data());
  }
  return o;
}

py::array_t<float> ToArray(const std::vector<float>& v) {
  py::array_t<float> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

namespace {

void DefineTargets(py::module_& m) {
  m.def("compiled_targets", &compiled_targets,
        "The SIMD targets compiled into this build, best first: Highway's "
        "names (\"AVX3_DL\", \"AVX3\", \"AVX2\", \"SSE4\", \"SCALAR\" or "
        "\"EMU128\" on x86; \"SVE2_128\", \"SVE_256\", \"SVE2\", \"SVE\", "
        "\"NEON\" on Arm).");
  m.def("supported_targets", &supported_targets,
        "The compiled targets this CPU can run, best first; never empty (the "
        "portable fallback runs everywhere).");
  m.def("active_target", &active_target,
        "The target the next kernel call dispatches to: the one "
        "force_target chose, else the RLX_ATTN_TARGET environment variable "
        "if set, else the best supported target. ValueError if "
        "RLX_ATTN_TARGET names a target that is unknown or not supported.");
  m.def("dispatched_target", &dispatched_target,
        "The target whose code the next kernel call runs, as that code "
        "reports it itself through the kernels' dispatch table; equals "
        "active_target() unless the dispatch is broken.");
  m.def(
      "force_target", [](const std::string& name) { force_target(name); },
      "name"_a,
      "Makes every later kernel call use the target `name`; \"\" returns to "
      "the automatic choice. ValueError, listing the supported targets, if "
      "`name` is not one of them (the active target is unchanged then).");
}

void DefineModule(py::module_& m) {
  m.doc() =
      "rlx-attn-mask: SIMD attention-mask kernels, in place on NumPy "
      "arrays and torch tensors";
  // The library's version, which is CMake's project(VERSION).
  m.attr("__version__") = std::string(version());

  PyObject* bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_TypeError);
  PyObject* dtype_error = PyErr_NewExceptionWithDoc(
      "rlx_attn_mask.DTypeError",
      "An array of the wrong element type: both a ValueError and a "
      "TypeError.",
      bases, nullptr);
  Py_DECREF(bases);
  if (dtype_error == nullptr) throw py::error_already_set();
  SetDTypeErrorType(dtype_error);  // the module's reference keeps it
  m.attr("DTypeError") = py::reinterpret_steal<py::object>(dtype_error);

  DefineMaskSpec(m);
  DefineScores(m);
  DefinePlanning(m);
  DefineLadders(m);
  DefineTargets(m);
}

}  // namespace
}  // namespace rlx::python

PYBIND11_MODULE(_core, m) { rlx::python::DefineModule(m); }
