// SPDX-License-Identifier: MIT OR Apache-2.0
#include "bindings/python/src/arrays.h"

#include <cstring>
#include <string>
#include <utility>

namespace rlx::python {
namespace {

// DLPack 0.x (dlpack.h, Apache-2.0), the ABI that torch 1.13 and NumPy 1.24
// export: declared here so that no header beyond pybind11 is needed.
struct DLDevice {
  std::int32_t device_type;  // 1 = kDLCPU, 3 = kDLCUDAHost (pinned host)
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null = compact row-major
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

PyObject* g_dtype_error = nullptr;

// A buffer-protocol format of one native-order element ("<f", "=e", "l").
DType DTypeOfFormat(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return itemsize == 1 ? DType::kU8 : DType::kOther;
  while (*format == '@' || *format == '=' || *format == '<') ++format;
  if (format[0] == '\0' || format[1] != '\0') return DType::kOther;
  switch (format[0]) {
    case 'f':
      return itemsize == 4 ? DType::kF32 : DType::kOther;
    case 'd':
      return itemsize == 8 ? DType::kF64 : DType::kOther;
    case 'e':
      return itemsize == 2 ? DType::kF16 : DType::kOther;
    case 'B':
      return itemsize == 1 ? DType::kU8 : DType::kOther;
    case '?':
      return itemsize == 1 ? DType::kBool : DType::kOther;
    case 'i':
    case 'l':
    case 'q':
      return itemsize == 4   ? DType::kI32
             : itemsize == 8 ? DType::kI64
                             : DType::kOther;
    case 'I':
    case 'L':
    case 'Q':
      return itemsize == 8 ? DType::kU64 : DType::kOther;
    default:
      return DType::kOther;
  }
}

DType DTypeOfDLPack(const DLDataType& t) {
  if (t.lanes != 1) return DType::kOther;
  switch (t.code) {
    case 0:  // int
      return t.bits == 32   ? DType::kI32
             : t.bits == 64 ? DType::kI64
                            : DType::kOther;
    case 1:  // uint (torch 1.13 also exports bool as uint8)
      return t.bits == 8    ? DType::kU8
             : t.bits == 64 ? DType::kU64
                            : DType::kOther;
    case 2:  // float
      return t.bits == 32   ? DType::kF32
             : t.bits == 16 ? DType::kF16
             : t.bits == 64 ? DType::kF64
                            : DType::kOther;
    case 4:  // bfloat
      return t.bits == 16 ? DType::kBF16 : DType::kOther;
    case 6:  // bool
      return t.bits == 8 ? DType::kBool : DType::kOther;
    default:
      return DType::kOther;
  }
}

std::string Prefix(const char* who, const char* name) {
  return std::string(who) + ": " + name;
}

}  // namespace

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    case DType::kF64:
      return "float64";
    case DType::kU8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU64:
      return "uint64";
    case DType::kOther:
      return "an unsupported dtype";
  }
  return "?";
}

void SetDTypeErrorType(PyObject* type) { g_dtype_error = type; }

void ThrowDType(const std::string& message) {
  PyErr_SetString(g_dtype_error != nullptr ? g_dtype_error : PyExc_TypeError,
                  message.c_str());
  throw py::error_already_set();
}

void ThrowValue(const std::string& message) { throw py::value_error(message); }

std::shared_ptr<const Array> Array::From(const py::handle& obj, const char* who,
                                         const char* name) {
  std::shared_ptr<Array> a(new Array());
  a->object_ = py::reinterpret_borrow<py::object>(obj);
  if (PyObject_CheckBuffer(obj.ptr())) {
    auto buffer = std::make_unique<Py_buffer>();
    if (PyObject_GetBuffer(obj.ptr(), buffer.get(), PyBUF_RECORDS_RO) != 0) {
      py::error_already_set error;
      ThrowValue(Prefix(who, name) + ": its buffer cannot be exported (" +
                 std::string(py::str(error.value())) + ")");
    }
    Py_buffer& b = *buffer;
    a->buffer_ = std::move(buffer);  // released by ~Array from here on
    a->data_ = b.buf;
    a->readonly_ = b.readonly != 0;
    a->dtype_ = DTypeOfFormat(b.format, b.itemsize);
    for (int i = 0; i < b.ndim; ++i) {
      a->shape_.push_back(b.shape[i]);
      if (b.strides[i] % b.itemsize != 0) {
        ThrowValue(Prefix(who, name) + ": byte stride " +
                   std::to_string(b.strides[i]) + " of axis " +
                   std::to_string(i) + " is not a multiple of the " +
                   std::to_string(b.itemsize) + "-byte element");
      }
      a->strides_.push_back(b.strides[i] / b.itemsize);
    }
    return a;
  }
  if (!py::hasattr(obj, "__dlpack__")) {
    throw py::type_error(
        Prefix(who, name) +
        " must be an array with the buffer protocol or "
        "__dlpack__ (a NumPy array or a torch tensor), got " +
        std::string(py::str(py::type::of(obj).attr("__qualname__"))));
  }
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    // torch 1.13 exports no bool tensor through DLPack: such a tensor is
    // taken through its uint8 view (the same memory; 0 or 1 per byte).
    // Checked only on failure, so that other calls pay nothing for it.
    const bool torch_bool =
        py::hasattr(obj, "dtype") &&
        py::str(obj.attr("dtype")).cast<std::string>() == "torch.bool";
    if (!torch_bool) {
      ThrowValue(Prefix(who, name) + ": __dlpack__ failed (" +
                 std::string(py::str(e.type().attr("__name__"))) + ": " +
                 std::string(py::str(e.value())) + ")");
    }
    capsule = obj.attr("view")(py::module_::import("torch").attr("uint8"))
                  .attr("__dlpack__")();
  }
  auto* managed = static_cast<DLManagedTensor*>(
      PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    ThrowValue(Prefix(who, name) + ": __dlpack__ gave no \"dltensor\" capsule");
  }
  // The capsule's destructor releases the export (it still has its name).
  a->capsule_ = std::move(capsule);
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != 1 && t.device.device_type != 3) {
    ThrowValue(Prefix(who, name) + ": the tensor is on DLPack device type " +
               std::to_string(t.device.device_type) + ", not on the CPU");
  }
  a->data_ = static_cast<char*>(t.data) + t.byte_offset;
  a->dtype_ = DTypeOfDLPack(t.dtype);
  std::int64_t compact = 1;
  a->shape_.assign(t.shape, t.shape + t.ndim);
  a->strides_.resize(t.ndim);
  for (int i = t.ndim - 1; i >= 0; --i) {
    a->strides_[i] = t.strides != nullptr ? t.strides[i] : compact;
    compact *= t.shape[i];
  }
  return a;
}

Array::~Array() {
  if (buffer_) PyBuffer_Release(buffer_.get());
}

std::size_t Array::size() const {
  std::size_t n = 1;
  for (std::int64_t e : shape_) n *= static_cast<std::size_t>(e);
  return n;
}

bool Array::c_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string ShapeString(const Array& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(a.shape()[i]);
  }
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string ShapeString(const Shape4& s) {
  return "(" + std::to_string(s.batch) + ", " + std::to_string(s.heads) + ", " +
         std::to_string(s.q_len) + ", " + std::to_string(s.k_len) + ")";
}

ScoreView ScoreViewOf(const Array& a, const char* who, const char* name,
                      bool writable) {
  ScoreView v;
  switch (a.dtype()) {
    case DType::kF32:
      v.type = ScoreType::kF32;
      break;
    case DType::kBF16:
      v.type = ScoreType::kBF16;
      break;
    case DType::kF16:
      v.type = ScoreType::kF16;
      break;
    default:
      ThrowDType(Prefix(who, name) +
                 " must be float32, bfloat16 or float16, got " +
                 DTypeName(a.dtype()));
  }
  if (a.ndim() != 4) {
    ThrowValue(Prefix(who, name) +
               " must be 4-D [batch, heads, q_len, k_len], got shape " +
               ShapeString(a));
  }
  if (writable && a.readonly()) {
    ThrowValue(Prefix(who, name) + " is read-only; the kernel writes it");
  }
  const auto& e = a.shape();
  const auto& st = a.strides();
  if (e[3] > 1 && st[3] != 1) {
    ThrowValue(Prefix(who, name) + " key axis (the last) must be contiguous, " +
               "but its stride is " + std::to_string(st[3]) +
               " elements (shape " + ShapeString(a) + ")");
  }
  static constexpr const char* kAxis[3] = {"batch", "heads", "q_len"};
  std::size_t s3[3] = {};
  for (int i = 0; i < 3; ++i) {
    if (e[i] <= 1) continue;  // the stride of a single index is never used
    if (st[i] < 0 || (writable && st[i] == 0)) {
      ThrowValue(Prefix(who, name) + " " + kAxis[i] + " stride " +
                 std::to_string(st[i]) + " is " +
                 (st[i] < 0 ? "negative" : "0 (rows would overlap)") +
                 " (shape " + ShapeString(a) + ")");
    }
    s3[i] = static_cast<std::size_t>(st[i]);
  }
  v.data = a.data();
  v.shape = {static_cast<std::size_t>(e[0]), static_cast<std::size_t>(e[1]),
             static_cast<std::size_t>(e[2]), static_cast<std::size_t>(e[3])};
  v.strides = {s3[0], s3[1], s3[2]};
  return v;
}

void CheckVector(const Array& a, const char* who, const char* name, DType dtype,
                 std::size_t count, bool writable) {
  if (a.dtype() != dtype) {
    ThrowDType(Prefix(who, name) + " must be " + DTypeName(dtype) + ", got " +
               DTypeName(a.dtype()));
  }
  if (!a.c_contiguous()) {
    ThrowValue(Prefix(who, name) + " must be C-contiguous (shape " +
               ShapeString(a) + ")");
  }
  if (a.size() != count) {
    ThrowValue(Prefix(who, name) + " must hold " + std::to_string(count) +
               " elements, got shape " + ShapeString(a));
  }
  if (writable && a.readonly()) {
    ThrowValue(Prefix(who, name) + " is read-only; the call writes it");
  }
}

}  // namespace rlx::python
