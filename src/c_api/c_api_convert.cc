// SPDX-License-Identifier: MIT OR Apache-2.0
// The C structs and enums as the C++ ones (src/c_api/c_api_convert.h).
#include "src/c_api/c_api_convert.h"

#include <cstddef>
#include <cstring>
#include <optional>
#include <type_traits>

#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
#include "src/c_api/c_api_error.h"
#include "src/mask/mask_field_list.h"
#include "src/mask/mask_kind_list.h"

namespace rlx::c_api {

// ---------------------------------------------------------------------------
// Score kernels: the C structs to the C++ ones.

// The C enums carry the C++ enumerators' values, so that a value means the
// same on both sides (and in the Rust crate, which declares them as
// unsigned int constants). The kinds come from the one list
// (src/mask/mask_kind_list.h).
static_assert(RLX_SCORE_F32 == static_cast<int>(rlx::ScoreType::kF32));
static_assert(RLX_SCORE_BF16 == static_cast<int>(rlx::ScoreType::kBF16));
static_assert(RLX_SCORE_F16 == static_cast<int>(rlx::ScoreType::kF16));
#define RLX_ASSERT_SAME(kind, c_name, ...)                       \
  static_assert(c_name == static_cast<int>(rlx::MaskKind::kind), \
                #c_name " differs from rlx::MaskKind::" #kind);
RLX_MASK_KIND_LIST(RLX_ASSERT_SAME)
#undef RLX_ASSERT_SAME
#define RLX_ASSERT_SAME(kind, c_name, ...)                        \
  static_assert(c_name == static_cast<int>(rlx::DenseKind::kind), \
                #c_name " differs from rlx::DenseKind::" #kind);
RLX_DENSE_KIND_LIST(RLX_ASSERT_SAME)
#undef RLX_ASSERT_SAME
static_assert(RLX_MAX_KEPT_INTERVALS == rlx::KeptKeys::kMaxIntervals);
// A caller's rlx_softmax_part_stats arrays are handed to the C++ functions
// as rlx::SoftmaxPartStats arrays, without a copy (step 1 writes them, step
// 2 reads every part's): the two structs must be laid out alike.
static_assert(std::is_standard_layout_v<rlx::SoftmaxPartStats> &&
              std::is_trivially_copyable_v<rlx::SoftmaxPartStats>);
static_assert(sizeof(rlx_softmax_part_stats) == sizeof(rlx::SoftmaxPartStats) &&
              alignof(rlx_softmax_part_stats) ==
                  alignof(rlx::SoftmaxPartStats));
static_assert(offsetof(rlx_softmax_part_stats, log_scale) ==
                  offsetof(rlx::SoftmaxPartStats, log_scale) &&
              offsetof(rlx_softmax_part_stats, sum) ==
                  offsetof(rlx::SoftmaxPartStats, sum));
static_assert(std::is_same_v<decltype(rlx_softmax_part_stats::log_scale),
                             decltype(rlx::SoftmaxPartStats::log_scale)> &&
              std::is_same_v<decltype(rlx_softmax_part_stats::sum),
                             decltype(rlx::SoftmaxPartStats::sum)>);
// The statuses: RLX_OK is 0 so that `if (status)` tests for failure; the
// values are fixed because bindings (bindings/rust/src/ffi.rs) hard-code
// them. The enums are int-sized, as the bindings declare them.
static_assert(RLX_OK == 0 && RLX_INVALID_ARGUMENT == 1 &&
              RLX_OUT_OF_MEMORY == 2 && RLX_INTERNAL_ERROR == 3);
static_assert(sizeof(rlx_status) == sizeof(int) &&
              sizeof(rlx_score_type) == sizeof(int) &&
              sizeof(rlx_mask_kind) == sizeof(int) &&
              sizeof(rlx_dense_kind) == sizeof(int));

// Enum values and struct sizes are checked here because a C caller can pass
// any integer; everything else (null data, extents, strides, their sizes,
// ranges, rules the kind does not admit) is the C++ functions' to check.

rlx::Shape4 ToShape(const rlx_shape4& s) {
  return {s.batch, s.heads, s.q_len, s.k_len};
}

rlx::Strides3 ToStrides(const rlx_strides3& s) {
  return {s.batch, s.head, s.row};
}

// A C mask field as its C++ field (ToMask): extents and strides convert,
// sizes and pointers are the same.
rlx::Shape4 FromC(const rlx_shape4& s) { return ToShape(s); }
rlx::Strides3 FromC(const rlx_strides3& s) { return ToStrides(s); }
rlx::BlockList FromC(const rlx_block_list& b) {
  rlx::BlockList list;
  list.num_blocks = b.num_blocks;
  list.indices = b.indices;
  list.full_num_blocks = b.full_num_blocks;
  list.full_indices = b.full_indices;
  list.batch = b.batch;
  list.heads = b.heads;
  list.q_blocks = b.q_blocks;
  list.max_blocks = b.max_blocks;
  list.q_block = b.q_block;
  list.k_block = b.k_block;
  return list;
}
template <class T>
T FromC(T v) {
  return v;
}

// The integer a C caller stored in an enum field. Read through memcpy: in
// C++ loading an enum object that holds a value outside its enumerators'
// range is undefined behaviour, and C callers may store any integer.
template <class Enum>
std::underlying_type_t<Enum> RawValue(const Enum& field) {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

std::optional<rlx::ScoreType> ToScoreType(const rlx_score_type& type) {
  switch (RawValue(type)) {
    case RLX_SCORE_F32:
      return rlx::ScoreType::kF32;
    case RLX_SCORE_BF16:
      return rlx::ScoreType::kBF16;
    case RLX_SCORE_F16:
      return rlx::ScoreType::kF16;
  }
  return std::nullopt;
}

std::optional<rlx::MaskKind> ToMaskKind(const rlx_mask_kind& kind) {
  switch (RawValue(kind)) {
#define RLX_KIND_CASE(k, c_name, ...) \
  case c_name:                        \
    return rlx::MaskKind::k;
    RLX_MASK_KIND_LIST(RLX_KIND_CASE)
#undef RLX_KIND_CASE
  }
  return std::nullopt;
}

std::optional<rlx::DenseKind> ToDenseKind(const rlx_dense_kind& kind) {
  switch (RawValue(kind)) {
#define RLX_KIND_CASE(k, c_name, ...) \
  case c_name:                        \
    return rlx::DenseKind::k;
    RLX_DENSE_KIND_LIST(RLX_KIND_CASE)
#undef RLX_KIND_CASE
  }
  return std::nullopt;
}

// Growing structs (include/rlx/rlx_attn_mask_scores.h). kSizes<T> lists every
// struct_size a released header produced, oldest first; each later version
// appends fields after the end of the last (and must change sizeof: a field
// that fit in the old trailing padding would be indistinguishable), then adds
// its sizeof here.
template <class T>
constexpr std::size_t kSizes[] = {sizeof(T)};
// 0.1.0 ended at `dense`; the two-sided window, groups, key list and block
// list fields followed.
template <>
constexpr std::size_t kSizes<rlx_mask_spec>[] = {
    offsetof(rlx_mask_spec, window_keys_after), sizeof(rlx_mask_spec)};

// Copies the caller's struct, as far as its struct_size reaches, over
// `result`, which holds the defaults (the fields an older header did not have
// keep them), or records why not (naming `function` and `which` argument).
// The caller's struct is read as bytes: an older one is smaller than T.
template <class T>
bool ReadSized(const char* function, const char* which, const void* caller,
               T& result) {
  static_assert(offsetof(T, struct_size) == 0);
  std::size_t size;
  std::memcpy(&size, caller, sizeof(size));
  for (const std::size_t known : kSizes<T>) {
    if (size == known) {
      std::memcpy(static_cast<void*>(&result), caller, size);
      return true;
    }
  }
  Record(function,
         "%s->struct_size %zu is not a size this library knows (%zu): "
         "initialise the struct with its _init function first",
         which, size, sizeof(T));
  return false;
}

// Converts *view, or records why not (naming `function` and `which`
// argument) and returns std::nullopt.
std::optional<rlx::ScoreView> ToView(const char* function, const char* which,
                                     const rlx_score_view* view) {
  if (view == nullptr) {
    Record(function, "%s is NULL", which);
    return std::nullopt;
  }
  const std::optional<rlx::ScoreType> type = ToScoreType(view->type);
  if (!type) {
    Record(function, "%s->type %lld is not an rlx_score_type", which,
           static_cast<long long>(RawValue(view->type)));
    return std::nullopt;
  }
  return rlx::ScoreView{view->data, *type, ToShape(view->shape),
                        ToStrides(view->strides)};
}

std::optional<rlx::MaskSpec> ToMask(const char* function,
                                    const rlx_mask_spec* mask) {
  if (mask == nullptr) {
    Record(function, "%s", "mask is NULL");
    return std::nullopt;
  }
  rlx_mask_spec m;
  rlx_mask_spec_init(&m);
  if (!ReadSized(function, "mask", mask, m)) return std::nullopt;
  const std::optional<rlx::MaskKind> kind = ToMaskKind(m.kind);
  if (!kind) {
    Record(function, "mask->kind %lld is not an rlx_mask_kind",
           static_cast<long long>(RawValue(m.kind)));
    return std::nullopt;
  }
  const std::optional<rlx::DenseKind> dense = ToDenseKind(m.dense);
  if (!dense) {
    Record(function, "mask->dense %lld is not an rlx_dense_kind",
           static_cast<long long>(RawValue(m.dense)));
    return std::nullopt;
  }
  // Every field of the list (src/mask/mask_field_list.h), from the C field of
  // the same name: a field added to MaskSpec and the list fails to compile
  // here until rlx_mask_spec has it. The kind and the dense kind are
  // converted above.
  rlx::MaskSpec spec;
  spec.kind = *kind;
  spec.dense = *dense;
#define RLX_MAP_kKind(field)
#define RLX_MAP_kDenseKind(field)
#define RLX_MAP_kKindArg(field) spec.field = FromC(m.field);
#define RLX_MAP_kDense(field) spec.field = FromC(m.field);
#define RLX_MAP_kPosition(field) spec.field = FromC(m.field);
#define RLX_MAP_kExtent(field) spec.field = FromC(m.field);
#define RLX_MAP_kRule(field) spec.field = FromC(m.field);
#define RLX_MAP_kList(field) spec.field = FromC(m.field);
#define RLX_MAP(field, role, extent) RLX_MAP_##role(field)
  RLX_MASK_FIELD_LIST(RLX_MAP, RLX_MASK_FIELD_NOTHING)
#undef RLX_MAP
#undef RLX_MAP_kKind
#undef RLX_MAP_kDenseKind
#undef RLX_MAP_kKindArg
#undef RLX_MAP_kDense
#undef RLX_MAP_kPosition
#undef RLX_MAP_kExtent
#undef RLX_MAP_kRule
#undef RLX_MAP_kList
  return spec;
}

std::optional<rlx::SoftmaxOptions> ToOptions(
    const char* function, const rlx_softmax_options* options) {
  if (options == nullptr) return rlx::SoftmaxOptions{};
  rlx_softmax_options o;
  rlx_softmax_options_init(&o);
  if (!ReadSized(function, "options", options, o)) return std::nullopt;
  // Every field, bound as in ToMask: a new option fails to compile until
  // it is mapped here.
  rlx::SoftmaxOptions result;
  auto& [scale, softcap, sink_logits, alibi_slopes, row_lse, zero_masked] =
      result;
  scale = o.scale;
  softcap = o.softcap;
  sink_logits = o.sink_logits;
  alibi_slopes = o.alibi_slopes;
  row_lse = o.row_lse;
  // Read as a byte: a C caller may store any value in a bool's storage.
  unsigned char zero_masked_byte;
  std::memcpy(&zero_masked_byte, &o.zero_masked, 1);
  zero_masked = zero_masked_byte != 0;
  return result;
}

std::optional<SoftmaxCall> ToSoftmaxCall(const char* fn,
                                         const rlx_score_view* scores,
                                         const rlx_mask_spec* mask,
                                         const rlx_softmax_options* options) {
  const std::optional<rlx::ScoreView> view = ToView(fn, "scores", scores);
  if (!view) return std::nullopt;
  const std::optional<rlx::MaskSpec> spec = ToMask(fn, mask);
  if (!spec) return std::nullopt;
  const std::optional<rlx::SoftmaxOptions> opts = ToOptions(fn, options);
  if (!opts) return std::nullopt;
  return SoftmaxCall{*view, *spec, *opts};
}

rlx::RowRange ToRows(const rlx_row_range* rows, const rlx::Shape4& shape) {
  if (rows == nullptr) return rlx::RowRange::all(shape);
  return {rows->begin, rows->end};
}

rlx::KeyRange ToKeys(const rlx_key_range& keys) {
  return {keys.begin, keys.end};
}

}  // namespace rlx::c_api
