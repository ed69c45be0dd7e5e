/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one list of rlx::MaskSpec's fields (include/rlx/scores.h), as
 * src/mask/mask_kind_list.h is for the kinds. Every place that must know every
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
 *     (bindings/rust/layout/layout.c), generated;
 *   - the tests' and the fuzzer's draws (tests/mask/rule_masks.h,
 *     tests/fuzz/score_kernels_fuzzer.cc): a switch over MaskField with no
 *     `default:` says how each field is drawn (-Werror=switch).
 * Plain preprocessor: C (layout.c) includes it for the list alone.
 *
 * X(field, role), in declaration order, SEP() between rows. Roles:
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
 *              by hand in CheckMask (CheckKeyList, CheckBlockList) */

#ifndef RLX_SRC_MASK_MASK_FIELD_LIST_H_
#define RLX_SRC_MASK_MASK_FIELD_LIST_H_

/* One row per line: clang-format would fold the rows into a staircase. */
/* clang-format off */
#define RLX_MASK_FIELD_LIST(X, SEP) \
  X(kind, kKind) SEP()              \
  X(window, kKindArg) SEP()         \
  X(past, kKindArg) SEP()           \
  X(upper, kKindArg) SEP()          \
  X(data, kDense) SEP()             \
  X(shape, kDense) SEP()            \
  X(strides, kDense) SEP()          \
  X(query_offsets, kPosition) SEP() \
  X(window_keys, kExtent) SEP()     \
  X(chunk, kExtent) SEP()           \
  X(sink_keys, kExtent) SEP()       \
  X(prefix_end, kRule) SEP()        \
  X(q_segment, kRule) SEP()         \
  X(k_segment, kRule) SEP()         \
  X(q_position, kRule) SEP()        \
  X(k_position, kRule) SEP()        \
  X(dense, kDenseKind) SEP()                \
  X(window_keys_after, kExtent) SEP()       \
  X(q_group, kRule) SEP()                   \
  X(k_group, kRule) SEP()                   \
  X(key_indices, kList) SEP()               \
  X(key_indices_shape, kList) SEP()         \
  X(block_list, kList)
/* clang-format on */

#define RLX_MASK_FIELD_NOTHING()
#define RLX_MASK_FIELD_COMMA() ,

#ifdef __cplusplus
#include "rlx/scores.h"

namespace rlx::fields {

// One enumerator per field, named as the field.
enum class MaskField {
#define RLX_FIELD_ENUM(field, role) field
  RLX_MASK_FIELD_LIST(RLX_FIELD_ENUM, RLX_MASK_FIELD_COMMA)
#undef RLX_FIELD_ENUM
};

inline constexpr MaskField kAllMaskFields[] = {
#define RLX_FIELD_ENTRY(field, role) MaskField::field
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
#define RLX_FIELD_CASE(field, role) \
  case MaskField::field:            \
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

// A row per field of MaskSpec: the binding needs exactly as many names as
// MaskSpec has fields, and each row's field must exist.
inline void MaskFieldListCoversMaskSpec(MaskSpec& m) {
#define RLX_FIELD_NAME(field, role) field
  [[maybe_unused]] auto& [RLX_MASK_FIELD_LIST(RLX_FIELD_NAME,
                                              RLX_MASK_FIELD_COMMA)] = m;
#undef RLX_FIELD_NAME
#define RLX_FIELD_EXISTS(field, role) \
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
#define RLX_FIELD_RULE(field, role) RLX_FIELD_RULE_##role(field)
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
