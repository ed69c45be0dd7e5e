// SPDX-License-Identifier: MIT OR Apache-2.0
#include "bindings/python/src/mask.h"

#include <cstdint>
#include <string>
#include <type_traits>

#include "src/mask/mask_field_list.h"

namespace rlx::python {
namespace {

constexpr const char* kBuild = "MaskSpec";

// An optional rule array's elements, or nullptr where it is absent.
template <class T>
const T* DataOf(const ArrayPtr& array) {
  return array ? static_cast<const T*>(array->data()) : nullptr;
}

// A dense part: rank 1 to 4, padded on the left with broadcast axes of 1
// (NumPy's broadcasting), the last axis contiguous, no negative strides.
struct DenseLayout {
  Shape4 shape;  // keep_bits: k_len holds the word count until Bind
  Strides3 strides;
};

DenseLayout LayoutOf(const Array& a, const char* name) {
  if (a.ndim() < 1 || a.ndim() > 4) {
    ThrowValue(std::string(kBuild) + "." + name +
               ": the array must have 1 to 4 axes ([batch, heads, q_len, "
               "k_len], leading ones may be left out), got shape " +
               ShapeString(a));
  }
  std::int64_t e[4] = {1, 1, 1, 1}, s[4] = {0, 0, 0, 1};
  const std::size_t pad = 4 - a.ndim();
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    e[pad + i] = a.shape()[i];
    s[pad + i] = a.strides()[i];
  }
  if (e[3] > 1 && s[3] != 1) {
    ThrowValue(std::string(kBuild) + "." + name +
               ": the last (key) axis must be contiguous, but its stride is " +
               std::to_string(s[3]) + " elements (shape " + ShapeString(a) +
               ")");
  }
  for (int i = 0; i < 3; ++i) {
    if (e[i] <= 1) {
      s[i] = 0;
    } else if (s[i] < 0) {
      ThrowValue(std::string(kBuild) + "." + name + ": axis " +
                 std::to_string(i - static_cast<int>(pad)) +
                 " has a negative stride (shape " + ShapeString(a) + ")");
    }
  }
  DenseLayout l;
  l.shape = {static_cast<std::size_t>(e[0]), static_cast<std::size_t>(e[1]),
             static_cast<std::size_t>(e[2]), static_cast<std::size_t>(e[3])};
  l.strides = {static_cast<std::size_t>(s[0]), static_cast<std::size_t>(s[1]),
               static_cast<std::size_t>(s[2])};
  return l;
}

struct DenseOf {
  ArrayPtr array;
  DenseKind kind;
  DenseLayout layout;
};

DenseOf MakeDense(const py::handle& obj, Mask::DenseArg arg, const char* name) {
  const std::string who = std::string(kBuild) + "." + name;
  DenseOf d{Array::From(obj, who.c_str(), "array"), DenseKind::kNone, {}};
  const DType t = d.array->dtype();
  switch (arg) {
    case Mask::DenseArg::kKeep:
      if (t == DType::kF32) {
        d.kind = DenseKind::kKeepF32;
      } else if (t == DType::kU8 || t == DType::kBool) {
        d.kind = DenseKind::kKeepU8;
      } else {
        ThrowDType(who +
                   ": a keep mask must be float32 (kept iff >= 0.5), "
                   "uint8 or bool (kept iff != 0), got " +
                   DTypeName(t));
      }
      break;
    case Mask::DenseArg::kBias:
      if (t != DType::kF32) {
        ThrowDType(who + ": a bias must be float32, got " + DTypeName(t));
      }
      d.kind = DenseKind::kBias;
      break;
    case Mask::DenseArg::kBits:
      if (t != DType::kU64 && t != DType::kI64) {
        ThrowDType(who + ": keep bits must be uint64 (or int64) words, got " +
                   DTypeName(t));
      }
      d.kind = DenseKind::kKeepBits;
      break;
  }
  d.layout = LayoutOf(*d.array, name);
  return d;
}

// An optional array argument: None gives null.
ArrayPtr Optional(const py::handle& obj, const char* who, const char* name,
                  DType dtype) {
  if (obj.is_none()) return nullptr;
  ArrayPtr a = Array::From(obj, who, name);
  if (a->dtype() != dtype) {
    ThrowDType(std::string(who) + ": " + name + " must be " + DTypeName(dtype) +
               ", got " + DTypeName(a->dtype()));
  }
  if (!a->c_contiguous()) {
    ThrowValue(std::string(who) + ": " + name +
               " must be C-contiguous, got shape " + ShapeString(*a));
  }
  return a;
}

// Per-batch arrays: `per_batch` entries for each batch, C-contiguous.
void CheckBatches(const char* who, const char* name, const ArrayPtr& a,
                  std::size_t per_batch, const Shape4& shape,
                  const std::size_t* batch_index) {
  if (!a) return;
  const std::size_t n = a->size();
  const bool ok =
      batch_index == nullptr
          ? n == shape.batch * per_batch
          : per_batch > 0 && n % per_batch == 0 && n / per_batch > *batch_index;
  if (!ok) {
    const std::string need =
        batch_index == nullptr
            ? std::to_string(shape.batch) + " x " + std::to_string(per_batch) +
                  " = " + std::to_string(shape.batch * per_batch) + " elements"
            : "whole batches of " + std::to_string(per_batch) +
                  " elements, more than " + std::to_string(*batch_index);
    ThrowValue(std::string(who) + ": mask " + name + " has shape " +
               ShapeString(*a) + " but needs " + need + " for scores " +
               ShapeString(shape));
  }
}

// The DType of a MaskSpec array's element type.
template <class T>
constexpr DType DTypeOf() {
  static_assert(
      std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
      "a per-batch mask array holds int32 or int64");
  return std::is_same_v<T, std::int32_t> ? DType::kI32 : DType::kI64;
}

// A per-batch array of MaskSpec field `name` with elements T: the builders
// took it with T's dtype, and it holds `per_batch` elements a batch.
template <class T>
void CheckField(const char* who, const char* name, const ArrayPtr& a,
                std::size_t per_batch, const Shape4& shape,
                const std::size_t* batch_index) {
  if (a && a->dtype() != DTypeOf<T>()) {
    ThrowDType(std::string(who) + ": mask " + name + " must be " +
               DTypeName(DTypeOf<T>()) + ", got " + DTypeName(a->dtype()));
  }
  CheckBatches(who, name, a, per_batch, shape, batch_index);
}

}  // namespace

Mask Mask::Dense(const py::handle& array, DenseArg kind) {
  const char* name = kind == DenseArg::kKeep   ? "keep"
                     : kind == DenseArg::kBias ? "bias"
                                               : "keep_bits";
  DenseOf d = MakeDense(array, kind, name);
  Mask m;
  switch (d.kind) {
    case DenseKind::kKeepF32:
      m.spec = MaskSpec::keep(static_cast<const float*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kKeepU8:
      m.spec = MaskSpec::keep(static_cast<const std::uint8_t*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kBias:
      m.spec = MaskSpec::bias(static_cast<const float*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kKeepBits:
      m.spec = MaskSpec::keep_bits(
          static_cast<const std::uint64_t*>(d.array->data()), d.layout.shape);
      break;
    case DenseKind::kNone:
      break;
  }
  m.spec = m.spec.with_strides(d.layout.strides);
  m.dense = d.array;
  m.dense_bits = d.kind == DenseKind::kKeepBits;
  return m;
}

Mask Mask::WithDense(const py::handle& array, DenseArg kind) const {
  const char* name = kind == DenseArg::kKeep   ? "with_keep"
                     : kind == DenseArg::kBias ? "with_bias"
                                               : "with_keep_bits";
  DenseOf d = MakeDense(array, kind, name);
  Mask m = *this;
  switch (d.kind) {
    case DenseKind::kKeepF32:
      m.spec = spec.with_keep(static_cast<const float*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kKeepU8:
      m.spec = spec.with_keep(static_cast<const std::uint8_t*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kBias:
      m.spec = spec.with_bias(static_cast<const float*>(d.array->data()),
                              d.layout.shape);
      break;
    case DenseKind::kKeepBits:
      m.spec = spec.with_keep_bits(
          static_cast<const std::uint64_t*>(d.array->data()), d.layout.shape);
      break;
    case DenseKind::kNone:
      break;
  }
  m.spec = m.spec.with_strides(d.layout.strides);
  m.dense = d.array;
  m.dense_bits = d.kind == DenseKind::kKeepBits;
  return m;
}

Mask Mask::WithQueryOffsets(const py::handle& offsets) const {
  Mask m = *this;
  m.query_offsets =
      Optional(offsets, "MaskSpec.with_query_offsets", "offsets", DType::kI64);
  m.spec = spec.with_query_offsets(DataOf<std::int64_t>(m.query_offsets));
  return m;
}

Mask Mask::WithPrefix(const py::handle& prefix_end_per_batch) const {
  Mask m = *this;
  m.prefix_end = Optional(prefix_end_per_batch, "MaskSpec.with_prefix",
                          "prefix_end", DType::kI64);
  m.spec = spec.with_prefix(DataOf<std::int64_t>(m.prefix_end));
  return m;
}

Mask Mask::WithSegments(const py::handle& q_seg,
                        const py::handle& k_seg) const {
  Mask m = *this;
  m.q_segment =
      Optional(q_seg, "MaskSpec.with_segments", "q_segments", DType::kI32);
  m.k_segment =
      Optional(k_seg, "MaskSpec.with_segments", "k_segments", DType::kI32);
  m.spec = spec.with_segments(DataOf<std::int32_t>(m.q_segment),
                              DataOf<std::int32_t>(m.k_segment));
  return m;
}

Mask Mask::WithPositions(const py::handle& q_pos,
                         const py::handle& k_pos) const {
  Mask m = *this;
  m.q_position =
      Optional(q_pos, "MaskSpec.with_positions", "q_positions", DType::kI64);
  m.k_position =
      Optional(k_pos, "MaskSpec.with_positions", "k_positions", DType::kI64);
  m.spec = spec.with_positions(DataOf<std::int64_t>(m.q_position),
                               DataOf<std::int64_t>(m.k_position));
  return m;
}

Mask Mask::WithGroups(const py::handle& q_groups,
                      const py::handle& k_groups) const {
  Mask m = *this;
  m.q_group =
      Optional(q_groups, "MaskSpec.with_groups", "q_groups", DType::kI32);
  m.k_group =
      Optional(k_groups, "MaskSpec.with_groups", "k_groups", DType::kI32);
  m.spec = spec.with_groups(DataOf<std::int32_t>(m.q_group),
                            DataOf<std::int32_t>(m.k_group));
  return m;
}

Mask Mask::WithKeyIndices(const py::handle& indices,
                          const py::handle& shape) const {
  constexpr const char* kWho = "MaskSpec.with_key_indices";
  Mask m = *this;
  m.key_indices = Optional(indices, kWho, "indices", DType::kI32);
  if (!m.key_indices) {
    m.spec = spec.with_key_indices(nullptr, {});
    return m;
  }
  Shape4 ls;
  if (shape.is_none()) {
    if (m.key_indices->ndim() != 4) {
      ThrowValue(std::string(kWho) +
                 ": without a shape, indices must be 4-d (batch, heads, "
                 "q_len, n), got shape " +
                 ShapeString(*m.key_indices));
    }
    const auto& e = m.key_indices->shape();
    ls = {static_cast<std::size_t>(e[0]), static_cast<std::size_t>(e[1]),
          static_cast<std::size_t>(e[2]), static_cast<std::size_t>(e[3])};
  } else {
    std::vector<std::size_t> t;
    for (const py::handle extent : py::iter(shape)) {
      t.push_back(extent.cast<std::size_t>());
    }
    if (t.size() != 4) {
      ThrowValue(std::string(kWho) +
                 ": shape must be (batch, heads, q_len, n), got " +
                 std::to_string(t.size()) + " extents");
    }
    ls = {t[0], t[1], t[2], t[3]};
    std::size_t need = 0;
    if (__builtin_mul_overflow(ls.batch, ls.heads, &need) ||
        __builtin_mul_overflow(need, ls.q_len, &need) ||
        __builtin_mul_overflow(need, ls.k_len, &need)) {
      ThrowValue(std::string(kWho) + ": shape " + ShapeString(ls) +
                 " overflows");
    }
    if (m.key_indices->size() != need) {
      ThrowValue(std::string(kWho) + ": indices has " +
                 std::to_string(m.key_indices->size()) + " values, shape " +
                 ShapeString(ls) + " needs " + std::to_string(need));
    }
  }
  // A list of n = 0 slots still names no key (not an absent list): its
  // pointer must not be null.
  static const std::int32_t kNoSlot = -1;
  const auto* data = DataOf<std::int32_t>(m.key_indices);
  m.spec = spec.with_key_indices(data != nullptr ? data : &kNoSlot, ls);
  return m;
}

MaskSpec Mask::Bind(const char* who, const Shape4& shape,
                    const std::size_t* batch_index) const {
  MaskSpec s = spec;
  if (dense_bits) {
    const std::size_t words = shape.k_len / 64 + (shape.k_len % 64 != 0);
    if (s.shape.k_len != words) {
      ThrowValue(std::string(who) + ": keep_bits mask has " +
                 std::to_string(s.shape.k_len) + " words per row, but k_len " +
                 std::to_string(shape.k_len) +
                 " needs ceil(k_len / 64) = " + std::to_string(words));
    }
    s.shape.k_len = shape.k_len;
  }
  // Every per-batch array of the field list (src/mask/mask_field_list.h),
  // generated: its element type from MaskSpec's field, its length from the
  // list's extent, its name in messages the builder's argument's. A new
  // per-batch field needs a Mask member of the field's name and a name here.
#define RLX_PY_NAME_query_offsets "query_offsets"
#define RLX_PY_NAME_prefix_end "prefix_end"
#define RLX_PY_NAME_q_segment "q_segments"
#define RLX_PY_NAME_k_segment "k_segments"
#define RLX_PY_NAME_q_position "q_positions"
#define RLX_PY_NAME_k_position "k_positions"
#define RLX_PY_NAME_q_group "q_groups"
#define RLX_PY_NAME_k_group "k_groups"
#define RLX_BIND_ARRAY(field, extent)                                          \
  CheckField<                                                                  \
      std::remove_cv_t<std::remove_pointer_t<decltype(MaskSpec::field)>>>(     \
      who, RLX_PY_NAME_##field, field,                                         \
      fields::PerBatch(fields::FieldExtent::extent, shape.q_len, shape.k_len), \
      shape, batch_index);
#define RLX_BIND_kScalar(field)
#define RLX_BIND_kDenseShape(field)
#define RLX_BIND_kOwnShape(field)
#define RLX_BIND_kBatch(field) RLX_BIND_ARRAY(field, kBatch)
#define RLX_BIND_kBatchQuery(field) RLX_BIND_ARRAY(field, kBatchQuery)
#define RLX_BIND_kBatchKey(field) RLX_BIND_ARRAY(field, kBatchKey)
#define RLX_BIND(field, role, extent) RLX_BIND_##extent(field)
  RLX_MASK_FIELD_LIST(RLX_BIND, RLX_MASK_FIELD_NOTHING)
#undef RLX_BIND
#undef RLX_BIND_kScalar
#undef RLX_BIND_kDenseShape
#undef RLX_BIND_kOwnShape
#undef RLX_BIND_kBatch
#undef RLX_BIND_kBatchQuery
#undef RLX_BIND_kBatchKey
#undef RLX_BIND_ARRAY
  return s;
}

std::string Mask::Repr() const {
  static constexpr const char* kKinds[] = {
      "none", "causal", "sliding_window", "decode",
      "keep", "keep",   "bias",           "keep_bits"};
  const auto kind_index = static_cast<std::size_t>(spec.kind);
  std::string r = std::string("MaskSpec.") +
                  (kind_index < 8 ? kKinds[kind_index] : "?") + "(";
  switch (spec.kind) {
    case MaskKind::kSlidingWindow:
      r += std::to_string(spec.window);
      break;
    case MaskKind::kDecode:
      r += std::to_string(spec.past) + ", " + std::to_string(spec.upper) +
           ", window=" + std::to_string(spec.window);
      break;
    case MaskKind::kKeepF32:
    case MaskKind::kKeepU8:
    case MaskKind::kBias:
    case MaskKind::kKeepBits:
      r += ShapeString(*dense);
      break;
    case MaskKind::kNone:
    case MaskKind::kCausal:
      break;
  }
  r += ")";
  if (query_offsets) r += ".with_query_offsets(...)";
  if (spec.window_keys) {
    r += ".with_window_keys(" + std::to_string(spec.window_keys) + ")";
  }
  if (spec.window_keys_after) {
    r += ".with_window_keys_after(" + std::to_string(spec.window_keys_after) +
         ")";
  }
  if (spec.chunk) r += ".with_chunk(" + std::to_string(spec.chunk) + ")";
  if (spec.sink_keys) {
    r += ".with_sink_keys(" + std::to_string(spec.sink_keys) + ")";
  }
  if (prefix_end) r += ".with_prefix(...)";
  if (q_segment || k_segment) r += ".with_segments(...)";
  if (q_position || k_position) r += ".with_positions(...)";
  if (block_num) {
    r += ".with_block_list(" + ShapeString(*block_indices) +
         (block_full_num ? ", full" : "") +
         ", q_block=" + std::to_string(spec.block_list.q_block) +
         ", k_block=" + std::to_string(spec.block_list.k_block) + ")";
  }
  if (q_group || k_group) r += ".with_groups(...)";
  if (key_indices) {
    r += ".with_key_indices(" + ShapeString(spec.key_indices_shape) + ")";
  }
  switch (spec.dense) {
    case DenseKind::kKeepF32:
    case DenseKind::kKeepU8:
      r += ".with_keep(" + ShapeString(*dense) + ")";
      break;
    case DenseKind::kKeepBits:
      r += ".with_keep_bits(" + ShapeString(*dense) + ")";
      break;
    case DenseKind::kBias:
      r += ".with_bias(" + ShapeString(*dense) + ")";
      break;
    case DenseKind::kNone:
      break;
  }
  return r;
}

}  // namespace rlx::python
