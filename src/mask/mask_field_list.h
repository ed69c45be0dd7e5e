/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one list of rlx::MaskSpec's fields (include/rlx/scores.h), as
 * src/mask/mask_kind_list.h is for the kinds. docs/KERNELS.md "Adding a mask
 * rule" names the places it cannot reach. Every place that must know every
 * field is generated from it or checked against it, so that a field added
 * to MaskSpec and not to one of them fails the build (or, for the Rust
 * declarations, the rust leg's layout test):
 *   - the list itself: a structured binding of MaskSpec with one name per
 *     row (MaskFieldListCoversMaskSpec below) fails to compile when the
 *     counts differ;
 *   - the C mapping (src/c_api/c_api_convert.cc ToMask): one assignment per row
 * from the rlx_mask_spec field of the same name, which must exist;
 *   - validation (src/scores/score_kernels.cc CheckMask): every kExtent field
 * is checked to fit int64, generated;
 *   - the rules (src/mask/mask_rows.h RulesOf): a mask is dense-only when no
 *     kExtent or kRule field is set, generated (AnyRuleSet);
 *   - the C layout the Rust crate compares its declarations with
 *     (bindings/rust/layout/layout.c), generated, with each field's extent
 *     and element size, which the crate's length checks are tested against
 *     (rust_length_checks_follow_the_field_list);
 *   - the Python binding's length and dtype checks of the per-batch arrays
 *     (bindings/python/src/mask.cc Mask::Bind), generated;
 *   - the tests' and the fuzzer's draws (tests/mask/rule_masks.h,
 *     tests/fuzz/score_kernels_fuzzer.cc): a switch over MaskField with no
 *     `default:` says how each field is drawn (-Werror=switch).
 * Plain preprocessor: C (layout.c) includes it for the list alone.
 *
 * X(field, role, extent), in declaration order, SEP() between rows. Roles:
 *   kKind      the kind (converted on its own)
 *   kKindArg   an argument of the kind: window, past, upper
 *   kDense     the dense part's data, extents and strides
 *   kDenseKind the dense part on top of a structured kind (converted on
 *              its own)
 *   kPosition  moves logical positions, masks nothing by itself
 *   kExtent    a rule's size_t extent, 0 = absent, at most INT64_MAX
 *   kRule      a rule's array, nullptr = absent
 *   kList      a mask part that restricts a row to listed keys (a key
 *              list, a block list): a rule (AnyRuleSet counts it), checked
 *              by hand in CheckMask (CheckKeyList, CheckBlockList)
 * Extents: how many elements of the field's element type a call on scores
 * of shape [batch, heads, q_len, k_len] reads (the bindings' length checks
 * are generated from them or tested against them):
 *   kScalar     not an array
 *   kBatch      [batch]
 *   kBatchQuery [batch, q_len]
 *   kBatchKey   [batch, k_len]
 *   kDenseShape the dense part's own shape and strides
 *   kOwnShape   the part's own extents (key_indices_shape, a BlockList's) */

#ifndef RLX_SRC_MASK_MASK_FIELD_LIST_H_
#define RLX_SRC_MASK_MASK_FIELD_LIST_H_

/* One row per line: clang-format would fold the rows into a staircase. */
/* clang-format off */
#define RLX_MASK_FIELD_LIST(X, SEP)            \
  X(kind, kKind, kScalar) SEP()                \
  X(window, kKindArg, kScalar) SEP()           \
  X(past, kKindArg, kScalar) SEP()             \
  X(upper, kKindArg, kScalar) SEP()            \
  X(data, kDense, kDenseShape) SEP()           \
  X(shape, kDense, kScalar) SEP()              \
  X(strides, kDense, kScalar) SEP()            \
  X(query_offsets, kPosition, kBatch) SEP()    \
  X(window_keys, kExtent, kScalar) SEP()       \
  X(chunk, kExtent, kScalar) SEP()             \
  X(sink_keys, kExtent, kScalar) SEP()         \
  X(prefix_end, kRule, kBatch) SEP()           \
  X(q_segment, kRule, kBatchQuery) SEP()       \
  X(k_segment, kRule, kBatchKey) SEP()         \
  X(q_position, kRule, kBatchQuery) SEP()      \
  X(k_position, kRule, kBatchKey) SEP()        \
  X(dense, kDenseKind, kScalar) SEP()          \
  X(window_keys_after, kExtent, kScalar) SEP() \
  X(q_group, kRule, kBatchQuery) SEP()         \
  X(k_group, kRule, kBatchKey) SEP()           \
  X(key_indices, kList, kOwnShape) SEP()       \
  X(key_indices_shape, kList, kScalar) SEP()   \
  X(block_list, kList, kOwnShape)
/* clang-format on */

#define RLX_MASK_FIELD_NOTHING()
#define RLX_MASK_FIELD_COMMA() ,

/* An extent as a number, for C (the Rust crate's layout test reads them). */
#define RLX_MASK_EXTENT_kScalar 0
#define RLX_MASK_EXTENT_kBatch 1
#define RLX_MASK_EXTENT_kBatchQuery 2
#define RLX_MASK_EXTENT_kBatchKey 3
#define RLX_MASK_EXTENT_kDenseShape 4
#define RLX_MASK_EXTENT_kOwnShape 5

#ifdef __cplusplus
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "rlx/scores.h"

namespace rlx::fields {

// One enumerator per field, named as the field.
enum class MaskField {
#define RLX_FIELD_ENUM(field, role, extent) field
  RLX_MASK_FIELD_LIST(RLX_FIELD_ENUM, RLX_MASK_FIELD_COMMA)
#undef RLX_FIELD_ENUM
};

inline constexpr MaskField kAllMaskFields[] = {
#define RLX_FIELD_ENTRY(field, role, extent) MaskField::field
    RLX_MASK_FIELD_LIST(RLX_FIELD_ENTRY, RLX_MASK_FIELD_COMMA)
#undef RLX_FIELD_ENTRY
};

// Whether a field is a rule or moves positions (roles kPosition, kExtent,
// kRule, kList): what the tests and the fuzzer draw as rules.
constexpr bool IsRuleField(MaskField f) {
#define RLX_FIELD_IS_RULE_kKind false
#define RLX_FIELD_IS_RULE_kKindArg false
#define RLX_FIELD_IS_RULE_kDense false
#define RLX_FIELD_IS_RULE_kDenseKind false
#define RLX_FIELD_IS_RULE_kPosition true
#define RLX_FIELD_IS_RULE_kExtent true
#define RLX_FIELD_IS_RULE_kRule true
#define RLX_FIELD_IS_RULE_kList true
#define RLX_FIELD_CASE(field, role, extent) \
  case MaskField::field:                    \
    return RLX_FIELD_IS_RULE_##role;
  switch (f) { RLX_MASK_FIELD_LIST(RLX_FIELD_CASE, RLX_MASK_FIELD_NOTHING) }
#undef RLX_FIELD_CASE
#undef RLX_FIELD_IS_RULE_kKind
#undef RLX_FIELD_IS_RULE_kKindArg
#undef RLX_FIELD_IS_RULE_kDense
#undef RLX_FIELD_IS_RULE_kDenseKind
#undef RLX_FIELD_IS_RULE_kPosition
#undef RLX_FIELD_IS_RULE_kExtent
#undef RLX_FIELD_IS_RULE_kRule
#undef RLX_FIELD_IS_RULE_kList
  return false;
}

// What a call reads of a field (the list's extent column).
enum class FieldExtent {
  kScalar = RLX_MASK_EXTENT_kScalar,
  kBatch = RLX_MASK_EXTENT_kBatch,
  kBatchQuery = RLX_MASK_EXTENT_kBatchQuery,
  kBatchKey = RLX_MASK_EXTENT_kBatchKey,
  kDenseShape = RLX_MASK_EXTENT_kDenseShape,
  kOwnShape = RLX_MASK_EXTENT_kOwnShape,
};

constexpr FieldExtent ExtentOf(MaskField f) {
#define RLX_FIELD_CASE(field, role, extent) \
  case MaskField::field:                    \
    return FieldExtent::extent;
  switch (f) { RLX_MASK_FIELD_LIST(RLX_FIELD_CASE, RLX_MASK_FIELD_NOTHING) }
#undef RLX_FIELD_CASE
  return FieldExtent::kScalar;
}

// The elements per batch of a field with a per-batch extent, for scores of
// q_len queries and k_len keys; 0 for the other extents.
constexpr std::size_t PerBatch(FieldExtent e, std::size_t q_len,
                               std::size_t k_len) {
  switch (e) {
    case FieldExtent::kBatch:
      return 1;
    case FieldExtent::kBatchQuery:
      return q_len;
    case FieldExtent::kBatchKey:
      return k_len;
    case FieldExtent::kScalar:
    case FieldExtent::kDenseShape:
    case FieldExtent::kOwnShape:
      return 0;
  }
  return 0;
}

// A per-batch extent belongs to a pointer field (its element type is what
// the pointer points to), and every kPosition and kRule field has one.
#define RLX_FIELD_EXTENT_FITS(field, role, extent)         \
  static_assert(                                           \
      (PerBatch(FieldExtent::extent, 1, 1) > 0) ==         \
          (std::is_pointer_v<decltype(MaskSpec::field)> && \
           (std::string_view(#role) == "kPosition" ||      \
            std::string_view(#role) == "kRule")),          \
      "MaskSpec::" #field                                  \
      ": a kPosition or kRule pointer has a per-batch extent, nothing else");
RLX_MASK_FIELD_LIST(RLX_FIELD_EXTENT_FITS, RLX_MASK_FIELD_NOTHING)
#undef RLX_FIELD_EXTENT_FITS

// A row per field of MaskSpec: the binding needs exactly as many names as
// MaskSpec has fields, and each row's field must exist.
inline void MaskFieldListCoversMaskSpec(MaskSpec& m) {
#define RLX_FIELD_NAME(field, role, extent) field
  [[maybe_unused]] auto& [RLX_MASK_FIELD_LIST(RLX_FIELD_NAME,
                                              RLX_MASK_FIELD_COMMA)] = m;
#undef RLX_FIELD_NAME
#define RLX_FIELD_EXISTS(field, role, extent) \
  static_assert(sizeof(MaskSpec::field) > 0, "no MaskSpec::" #field);
  RLX_MASK_FIELD_LIST(RLX_FIELD_EXISTS, RLX_MASK_FIELD_NOTHING)
#undef RLX_FIELD_EXISTS
}

// Whether a rule field is absent (0 or nullptr).
constexpr bool Absent(std::size_t v) { return v == 0; }
template <class T>
constexpr bool Absent(const T* p) {
  return p == nullptr;
}
// A key list's extents say nothing without its indices; a block list is
// absent while it has no num_blocks.
constexpr bool Absent(const Shape4&) { return true; }
constexpr bool Absent(const BlockList& b) { return b.num_blocks == nullptr; }

// Whether any kExtent, kRule or kList field of `m` is set.
inline bool AnyRuleSet(const MaskSpec& m) {
  bool any = false;
#define RLX_FIELD_RULE_kKind(field)
#define RLX_FIELD_RULE_kKindArg(field)
#define RLX_FIELD_RULE_kDense(field)
#define RLX_FIELD_RULE_kDenseKind(field)
#define RLX_FIELD_RULE_kPosition(field)
#define RLX_FIELD_RULE_kExtent(field) any = any || !Absent(m.field);
#define RLX_FIELD_RULE_kRule(field) any = any || !Absent(m.field);
#define RLX_FIELD_RULE_kList(field) any = any || !Absent(m.field);
#define RLX_FIELD_RULE(field, role, extent) RLX_FIELD_RULE_##role(field)
  RLX_MASK_FIELD_LIST(RLX_FIELD_RULE, RLX_MASK_FIELD_NOTHING)
#undef RLX_FIELD_RULE
#undef RLX_FIELD_RULE_kKind
#undef RLX_FIELD_RULE_kKindArg
#undef RLX_FIELD_RULE_kDense
#undef RLX_FIELD_RULE_kDenseKind
#undef RLX_FIELD_RULE_kPosition
#undef RLX_FIELD_RULE_kExtent
#undef RLX_FIELD_RULE_kRule
#undef RLX_FIELD_RULE_kList
  return any;
}

}  // namespace rlx::fields

#endif  // __cplusplus
#endif  // RLX_SRC_MASK_MASK_FIELD_LIST_H_
