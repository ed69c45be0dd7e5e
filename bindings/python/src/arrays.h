// SPDX-License-Identifier: MIT OR Apache-2.0
// Borrowed views of Python arrays: the caller's memory, never a copy.
//
// An Array is taken from the buffer protocol when the object has it (NumPy
// arrays, memoryviews, array.array) and otherwise from DLPack
// (`obj.__dlpack__()`: PyTorch tensors, and any other CPU array that speaks
// it). Either way it keeps the object, and what pins its memory (the
// Py_buffer export, which stops NumPy from resizing the array; the DLPack
// capsule, which holds a reference to the tensor's storage), for as long as
// the Array lives. Arrays must be created and destroyed with the GIL held;
// the pointer and extents may be used without it.
#ifndef RLX_BINDINGS_PYTHON_ARRAYS_H_
#define RLX_BINDINGS_PYTHON_ARRAYS_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rlx/scores.h"

namespace rlx::python {

namespace py = pybind11;

enum class DType : std::uint8_t {
  kF32,
  kBF16,
  kF16,
  kF64,
  kU8,
  kBool,
  kI32,
  kI64,
  kU64,
  kOther
};

// "float32", "bfloat16", ... as NumPy and PyTorch spell them.
const char* DTypeName(DType dtype);

// The Python exception for an array of the wrong element type: a subclass of
// both ValueError and TypeError (rlx_attn_mask.DTypeError), created once by
// the module.
void SetDTypeErrorType(PyObject* type);

// Throws DTypeError (a ValueError and a TypeError) with `message`.
[[noreturn]] void ThrowDType(const std::string& message);
// Throws ValueError with `message`.
[[noreturn]] void ThrowValue(const std::string& message);

class Array {
 public:
  // Borrows `obj` (buffer protocol, else __dlpack__). Throws TypeError for an
  // object that is neither, ValueError for a non-CPU DLPack tensor or one
  // whose byte strides are not whole elements. `who` and `name` prefix the
  // messages ("masked_softmax: scores ...").
  static std::shared_ptr<const Array> From(const py::handle& obj,
                                           const char* who, const char* name);

  ~Array();
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  bool readonly() const { return readonly_; }
  std::size_t ndim() const { return shape_.size(); }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  // Element strides (may be negative or 0).
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::size_t size() const;
  // Every element of the array in one dense, row-major run.
  bool c_contiguous() const;
  const py::object& object() const { return object_; }

 private:
  Array() = default;

  py::object object_;   // what the caller passed
  py::object capsule_;  // DLPack: the capsule that owns the export
  std::unique_ptr<Py_buffer> buffer_;  // buffer protocol: the export
  void* data_ = nullptr;
  DType dtype_ = DType::kOther;
  bool readonly_ = false;
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> strides_;
};

using ArrayPtr = std::shared_ptr<const Array>;

// Checks that `a` is a 4-D score tensor [batch, heads, q_len, k_len] of
// float32, bfloat16 or float16 with a contiguous key axis and non-negative
// strides (and writable, when `writable`), and returns the view of it.
ScoreView ScoreViewOf(const Array& a, const char* who, const char* name,
                      bool writable);

// Checks a per-row / per-head / per-batch vector: dtype, C-contiguous,
// exactly `count` elements (any rank), writable when asked.
void CheckVector(const Array& a, const char* who, const char* name, DType dtype,
                 std::size_t count, bool writable);

// "(1, 8, 512, 512)".
std::string ShapeString(const Array& a);
std::string ShapeString(const Shape4& s);

}  // namespace rlx::python

#endif  // RLX_BINDINGS_PYTHON_ARRAYS_H_
