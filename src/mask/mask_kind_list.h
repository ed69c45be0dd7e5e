// SPDX-License-Identifier: MIT OR Apache-2.0
// The one list of mask kinds and dense-part kinds (include/rlx/scores.h)
// that the C mapping (src/c_api/c_api_convert.cc), the fuzzer (tests/fuzz/) and
// the bindings' checks come from. Adding a kind: add its enumerator to
// scores.h, its row here and its constant to
// include/rlx/rlx_attn_mask_scores.h; every switch over the list has no
// `default:`, and the library, tests and fuzzer build with -Werror=switch, so
// each place that does not handle it yet fails the build, and the
// static_asserts below fail until the list matches the enum.
#ifndef RLX_SRC_MASK_MASK_KIND_LIST_H_
#define RLX_SRC_MASK_MASK_KIND_LIST_H_

#include <cstddef>
#include <iterator>

#include "rlx/scores.h"

// X(MaskKind enumerator, C constant, the DenseKind it reads (kNone for the
// structured kinds), name). Rows in enumerator order, values 0, 1, ...
#define RLX_MASK_KIND_LIST(X)                                         \
  X(kNone, RLX_MASK_NONE, kNone, "none")                              \
  X(kCausal, RLX_MASK_CAUSAL, kNone, "causal")                        \
  X(kSlidingWindow, RLX_MASK_SLIDING_WINDOW, kNone, "sliding_window") \
  X(kDecode, RLX_MASK_DECODE, kNone, "decode")                        \
  X(kKeepF32, RLX_MASK_KEEP_F32, kKeepF32, "keep_f32")                \
  X(kKeepU8, RLX_MASK_KEEP_U8, kKeepU8, "keep_u8")                    \
  X(kBias, RLX_MASK_BIAS, kBias, "bias")                              \
  X(kKeepBits, RLX_MASK_KEEP_BITS, kKeepBits, "keep_bits")

// X(DenseKind enumerator, C constant, name, what error messages call it),
// in enumerator order.
#define RLX_DENSE_KIND_LIST(X)                                    \
  X(kNone, RLX_DENSE_NONE, "none", "none")                        \
  X(kKeepF32, RLX_DENSE_KEEP_F32, "keep_f32", "f32 keep mask")    \
  X(kKeepU8, RLX_DENSE_KEEP_U8, "keep_u8", "u8 keep mask")        \
  X(kKeepBits, RLX_DENSE_KEEP_BITS, "keep_bits", "bit keep mask") \
  X(kBias, RLX_DENSE_BIAS, "bias", "bias")

namespace rlx::kinds {

#define RLX_KIND_ENTRY(kind, c_name, ...) MaskKind::kind,
inline constexpr MaskKind kAllMaskKinds[] = {
    RLX_MASK_KIND_LIST(RLX_KIND_ENTRY)};
#undef RLX_KIND_ENTRY
#define RLX_KIND_ENTRY(kind, c_name, ...) DenseKind::kind,
inline constexpr DenseKind kAllDenseKinds[] = {
    RLX_DENSE_KIND_LIST(RLX_KIND_ENTRY)};
#undef RLX_KIND_ENTRY

inline constexpr std::size_t kMaskKindCount = std::size(kAllMaskKinds);
inline constexpr std::size_t kDenseKindCount = std::size(kAllDenseKinds);

// The list's dense column is what MaskSpec::dense_kind_of says, kind by
// kind (scores.h cannot include this list, so it is checked here).
#define RLX_KIND_CHECK(k, c_name, dense, name)                            \
  static_assert(MaskSpec::dense_kind_of(MaskKind::k) == DenseKind::dense, \
                "RLX_MASK_KIND_LIST: dense column of " name);
RLX_MASK_KIND_LIST(RLX_KIND_CHECK)
#undef RLX_KIND_CHECK

constexpr const char* NameOf(MaskKind kind) {
  switch (kind) {
#define RLX_KIND_CASE(k, c_name, dense, name) \
  case MaskKind::k:                           \
    return name;
    RLX_MASK_KIND_LIST(RLX_KIND_CASE)
#undef RLX_KIND_CASE
  }
  return "?";
}

constexpr const char* NameOf(DenseKind kind) {
  switch (kind) {
#define RLX_KIND_CASE(k, c_name, name, message) \
  case DenseKind::k:                            \
    return name;
    RLX_DENSE_KIND_LIST(RLX_KIND_CASE)
#undef RLX_KIND_CASE
  }
  return "?";
}

// What error messages call a dense kind.
constexpr const char* MessageNameOf(DenseKind kind) {
  switch (kind) {
#define RLX_KIND_CASE(k, c_name, name, message) \
  case DenseKind::k:                            \
    return message;
    RLX_DENSE_KIND_LIST(RLX_KIND_CASE)
#undef RLX_KIND_CASE
  }
  return "?";
}

// The rows are the enumerators 0, 1, ..., n - 1 in order, so that a value
// below the count is a listed kind (the fuzzer and the C mapping rely on
// it). An enumerator missing from the list (appended after the last row,
// say) leaves a case out of the switches above: a build error
// (-Werror=switch).
template <class Enum, std::size_t N>
constexpr bool InOrder(const Enum (&all)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(all[i]) != i) return false;
  }
  return true;
}
static_assert(InOrder(kAllMaskKinds), "RLX_MASK_KIND_LIST out of order");
static_assert(InOrder(kAllDenseKinds), "RLX_DENSE_KIND_LIST out of order");

}  // namespace rlx::kinds

#endif  // RLX_SRC_MASK_MASK_KIND_LIST_H_
