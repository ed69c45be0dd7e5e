// SPDX-License-Identifier: MIT OR Apache-2.0
// The Python MaskSpec: rlx::MaskSpec plus the arrays its pointers refer to,
// held for as long as the mask (and every mask derived from it) lives.
#ifndef RLX_BINDINGS_PYTHON_MASK_H_
#define RLX_BINDINGS_PYTHON_MASK_H_

#include <cstddef>
#include <string>

#include "bindings/python/src/arrays.h"
#include "rlx/scores.h"

namespace rlx::python {

struct Mask {
  MaskSpec spec;
  // The dense part's array. A keep_bits part learns its k_len from the call
  // (its last axis holds ceil(k_len / 64) words).
  ArrayPtr dense;
  bool dense_bits = false;
  ArrayPtr query_offsets, prefix_end;  // [batch] int64
  ArrayPtr q_segment, k_segment;       // [batch, q_len] / [batch, k_len] int32
  ArrayPtr q_position, k_position;     // [batch, q_len] / [batch, k_len] int64
  ArrayPtr q_group, k_group;           // [batch, q_len] / [batch, k_len] int32
  ArrayPtr key_indices;                // [batch|1, heads|1, q_len|1, n] int32
  // A block list's int32 arrays (mask_block_list.cc).
  ArrayPtr block_num, block_indices, block_full_num, block_full_indices;

  // Builders. `kind` picks keep (float32 -> f32, uint8 or bool -> u8), bias
  // (float32) or bits (uint64 or int64 words).
  enum class DenseArg { kKeep, kBias, kBits };
  static Mask Dense(const py::handle& array, DenseArg kind);
  Mask WithDense(const py::handle& array, DenseArg kind) const;
  Mask WithQueryOffsets(const py::handle& offsets) const;
  Mask WithPrefix(const py::handle& prefix_end) const;
  Mask WithSegments(const py::handle& q_seg, const py::handle& k_seg) const;
  Mask WithPositions(const py::handle& q_pos, const py::handle& k_pos) const;
  Mask WithBlockList(const py::handle& num_blocks, const py::handle& indices,
                     const py::handle& full_num_blocks,
                     const py::handle& full_indices, std::size_t q_block,
                     std::size_t k_block) const;
  Mask WithGroups(const py::handle& q_groups, const py::handle& k_groups) const;
  // `shape` None: the array's own 4 extents; else (batch, heads, q_len, n)
  // over an array of that many values.
  Mask WithKeyIndices(const py::handle& indices, const py::handle& shape) const;

  // The spec for a call on scores of `shape`, every array checked against
  // it: per-batch arrays must hold exactly shape.batch batches, or, when
  // `batch_index` is given (kept_keys), some number of batches above it.
  // Throws ValueError / DTypeError naming `who`.
  MaskSpec Bind(const char* who, const Shape4& shape,
                const std::size_t* batch_index = nullptr) const;

  std::string Repr() const;
};

}  // namespace rlx::python

#endif  // RLX_BINDINGS_PYTHON_MASK_H_
