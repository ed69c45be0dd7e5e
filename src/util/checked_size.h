// SPDX-License-Identifier: MIT OR Apache-2.0
// Size arithmetic that cannot wrap: products of extents and the byte span of
// a strided tensor, each bounded by PTRDIFF_MAX, the size of the largest
// object C++ can index. A shape or stride whose arithmetic exceeds it
// describes a tensor that cannot exist in memory; the entry points reject it
// (src/scores/score_kernels.cc, src/mask/attn_mask.cc) before any offset is
// formed from it, since a wrapped offset would address a small, wrong element
// instead. Plain C++, no Highway.
#ifndef RLX_SRC_UTIL_CHECKED_SIZE_H_
#define RLX_SRC_UTIL_CHECKED_SIZE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "rlx/scores.h"

namespace rlx::detail {

// The largest size, in elements or bytes, that the library accepts.
inline constexpr std::size_t kMaxSize = static_cast<std::size_t>(PTRDIFF_MAX);

// a * b, or std::nullopt when the product exceeds kMaxSize.
constexpr std::optional<std::size_t> CheckedMul(std::size_t a, std::size_t b) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product) || product > kMaxSize) {
    return std::nullopt;
  }
  return product;
}

// a + b, or std::nullopt when the sum exceeds kMaxSize.
constexpr std::optional<std::size_t> CheckedAdd(std::size_t a, std::size_t b) {
  std::size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxSize) {
    return std::nullopt;
  }
  return sum;
}

// The product of `factors`, or std::nullopt when it exceeds kMaxSize. A zero
// factor makes the product 0 whatever the others are.
constexpr std::optional<std::size_t> CheckedProduct(
    std::initializer_list<std::size_t> factors) {
  for (const std::size_t f : factors) {
    if (f == 0) return 0;
  }
  std::size_t product = 1;
  for (const std::size_t f : factors) {
    const std::optional<std::size_t> next = CheckedMul(product, f);
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

// The number of elements of `shape`, or std::nullopt beyond kMaxSize.
constexpr std::optional<std::size_t> ElementCount(const Shape4& shape) {
  return CheckedProduct({shape.batch, shape.heads, shape.q_len, shape.k_len});
}

// Bytes from the first element of a tensor of `shape` (every extent >= 1) at
// element `strides` (key stride 1) to one past its last element:
//   ((batch - 1) * strides.batch + (heads - 1) * strides.head +
//    (q_len - 1) * strides.row + k_len) * elem_size,
// where an extent of 1 adds nothing whatever its stride, as the kernels
// index it (RowOffset in src/mask/mask_rows.h). std::nullopt when any term or
// partial sum exceeds kMaxSize: then the last element's byte offset, and so
// some pointer the kernels would form, is not representable.
constexpr std::optional<std::size_t> SpanBytes(const Shape4& shape,
                                               const Strides3& strides,
                                               std::size_t elem_size) {
  std::optional<std::size_t> elems = shape.k_len;
  const auto add_axis = [&](std::size_t extent, std::size_t stride) {
    if (!elems || extent <= 1) return;
    const std::optional<std::size_t> reach = CheckedMul(extent - 1, stride);
    elems = reach ? CheckedAdd(*elems, *reach) : std::nullopt;
  };
  add_axis(shape.batch, strides.batch);
  add_axis(shape.heads, strides.head);
  add_axis(shape.q_len, strides.row);
  if (!elems || *elems > kMaxSize) return std::nullopt;
  return CheckedMul(*elems, elem_size);
}

}  // namespace rlx::detail

#endif  // RLX_SRC_UTIL_CHECKED_SIZE_H_
