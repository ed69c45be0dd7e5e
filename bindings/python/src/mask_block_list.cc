// SPDX-License-Identifier: MIT OR Apache-2.0
// MaskSpec.with_block_list: FlexAttention's BlockMask arrays (int32,
// C-contiguous: num_blocks [batch, heads, q_blocks], indices [batch, heads,
// q_blocks, max_blocks], and optionally the full pair of the same shapes)
// as an rlx::BlockList, the arrays held by the mask.
#include <string>

#include "bindings/python/src/mask.h"

namespace rlx::python {
namespace {

constexpr const char* kWho = "MaskSpec.with_block_list";

ArrayPtr Int32Array(const py::handle& obj, const char* name, std::size_t ndim) {
  ArrayPtr a = Array::From(obj, kWho, name);
  if (a->dtype() != DType::kI32) {
    ThrowDType(std::string(kWho) + ": " + name + " must be int32, got " +
               DTypeName(a->dtype()));
  }
  if (!a->c_contiguous()) {
    ThrowValue(std::string(kWho) + ": " + name +
               " must be C-contiguous, got shape " + ShapeString(*a));
  }
  if (a->ndim() != ndim) {
    ThrowValue(std::string(kWho) + ": " + name + " must have " +
               std::to_string(ndim) + " axes (" +
               (ndim == 3 ? "[batch, heads, q_blocks]"
                          : "[batch, heads, q_blocks, max_blocks]") +
               "), got shape " + ShapeString(*a));
  }
  return a;
}

// Whether `num` and `idx` have the leading axes [batch, heads, q_blocks].
bool SameBlocks(const Array& num, const Array& idx) {
  for (std::size_t i = 0; i < 3; ++i) {
    if (num.shape()[i] != idx.shape()[i]) return false;
  }
  return true;
}

}  // namespace

Mask Mask::WithBlockList(const py::handle& num_blocks,
                         const py::handle& indices,
                         const py::handle& full_num_blocks,
                         const py::handle& full_indices, std::size_t q_block,
                         std::size_t k_block) const {
  Mask m = *this;
  m.block_num = Int32Array(num_blocks, "num_blocks", 3);
  m.block_indices = Int32Array(indices, "indices", 4);
  if (!SameBlocks(*m.block_num, *m.block_indices)) {
    ThrowValue(std::string(kWho) + ": num_blocks " + ShapeString(*m.block_num) +
               " and indices " + ShapeString(*m.block_indices) +
               " differ in [batch, heads, q_blocks]");
  }
  if (full_num_blocks.is_none() != full_indices.is_none()) {
    ThrowValue(std::string(kWho) +
               ": full_num_blocks and full_indices are given together");
  }
  m.block_full_num = nullptr;
  m.block_full_indices = nullptr;
  if (!full_num_blocks.is_none()) {
    m.block_full_num = Int32Array(full_num_blocks, "full_num_blocks", 3);
    m.block_full_indices = Int32Array(full_indices, "full_indices", 4);
    if (m.block_full_num->shape() != m.block_num->shape() ||
        m.block_full_indices->shape() != m.block_indices->shape()) {
      ThrowValue(std::string(kWho) + ": full_num_blocks " +
                 ShapeString(*m.block_full_num) + " and full_indices " +
                 ShapeString(*m.block_full_indices) +
                 " must have the shapes of num_blocks and indices");
    }
  }
  const auto& e = m.block_indices->shape();
  BlockList l;
  l.num_blocks = static_cast<const std::int32_t*>(m.block_num->data());
  l.indices = static_cast<const std::int32_t*>(m.block_indices->data());
  if (m.block_full_num) {
    l.full_num_blocks =
        static_cast<const std::int32_t*>(m.block_full_num->data());
    l.full_indices =
        static_cast<const std::int32_t*>(m.block_full_indices->data());
  }
  l.batch = static_cast<std::size_t>(e[0]);
  l.heads = static_cast<std::size_t>(e[1]);
  l.q_blocks = static_cast<std::size_t>(e[2]);
  l.max_blocks = static_cast<std::size_t>(e[3]);
  l.q_block = q_block;
  l.k_block = k_block;
  m.spec = spec.with_block_list(l);
  return m;
}

}  // namespace rlx::python
