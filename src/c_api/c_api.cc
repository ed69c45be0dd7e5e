// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API (include/rlx/rlx_attn_mask.h) over the C++ API. Each entry point
// checks what C can get wrong and C++ cannot (null pointers, enum values
// outside their range, struct sizes), then calls the C++ function inside
// Guard() (src/c_api/c_api_error.h), which turns every exception into a status
// and a thread-local message, so that no exception crosses into C or another
// language's frames.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "rlx/attn_mask.h"
#include "rlx/block_mask.h"
#include "rlx/bucket_ladder.h"
#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
#include "rlx/targets.h"
#include "src/c_api/c_api_error.h"
#include "src/mask/mask_field_list.h"
#include "src/mask/mask_kind_list.h"

// The opaque handle: a ladder is immutable once built.
struct rlx_ladder {
  rlx::BucketLadder ladder;
};

namespace {

using rlx::c_api::Guard;
using rlx::c_api::InvalidArgument;
using rlx::c_api::Record;

// ---------------------------------------------------------------------------
// Targets: names as C strings with static storage.

std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ',';
    joined += name;
  }
  return joined;
}

// The compiled target names, built once; active_target() always returns one
// of them, so its C string can point into this list.
const std::vector<std::string>& CompiledNames() {
  static const std::vector<std::string> names = rlx::compiled_targets();
  return names;
}

// One of CompiledNames()' strings (static storage) for the target `target`
// names: the C API hands out pointers that stay valid, never a temporary's.
const char* CompiledName(const std::string& target) {
  for (const std::string& compiled : CompiledNames()) {
    if (compiled == target) return compiled.c_str();
  }
  throw std::logic_error("target \"" + target +
                         "\" is not among the compiled targets");
}

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

// Growing structs (include/rlx/rlx_attn_mask.h). kSizes<T> lists every
// struct_size a released header produced, oldest first; each later version
// appends fields after the end of the last (and must change sizeof: a field
// that fit in the old trailing padding would be indistinguishable), then adds
// its sizeof here. Today each struct has one layout.
template <class T>
constexpr std::size_t kSizes[] = {sizeof(T)};

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
#define RLX_MAP(field, role) RLX_MAP_##role(field)
  RLX_MASK_FIELD_LIST(RLX_MAP, RLX_MASK_FIELD_NOTHING)
#undef RLX_MAP
#undef RLX_MAP_kKind
#undef RLX_MAP_kDenseKind
#undef RLX_MAP_kKindArg
#undef RLX_MAP_kDense
#undef RLX_MAP_kPosition
#undef RLX_MAP_kExtent
#undef RLX_MAP_kRule
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

// The three arguments every softmax entry point converts (a failure is
// recorded, naming `fn`).
struct SoftmaxCall {
  rlx::ScoreView view;
  rlx::MaskSpec mask;
  rlx::SoftmaxOptions options;
};

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

}  // namespace

extern "C" {

const char* rlx_last_error(void) { return rlx::c_api::LastErrorBuffer(); }

// ---------------------------------------------------------------------------
// Ladders

rlx_status rlx_ladder_power_of_two(uint64_t min, uint64_t max,
                                   rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_power_of_two";
  if (out == nullptr) {
    Record(kFn, "out is NULL (min=%llu, max=%llu)",
           static_cast<unsigned long long>(min),
           static_cast<unsigned long long>(max));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    *out = new rlx_ladder{rlx::BucketLadder::power_of_two(min, max)};
  });
}

rlx_status rlx_ladder_geometric(uint64_t max, uint64_t count,
                                rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_geometric";
  if (out == nullptr) {
    Record(kFn, "out is NULL (max=%llu, count=%llu)",
           static_cast<unsigned long long>(max),
           static_cast<unsigned long long>(count));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    *out = new rlx_ladder{rlx::BucketLadder::geometric(max, count)};
  });
}

rlx_status rlx_ladder_custom(const uint64_t* starts, const uint64_t* ends,
                             size_t n, rlx_ladder** out) {
  constexpr const char* kFn = "rlx_ladder_custom";
  if (out == nullptr) {
    Record(kFn, "out is NULL (n=%zu)", n);
    return RLX_INVALID_ARGUMENT;
  }
  if (n == 0) {
    return InvalidArgument(kFn, "n is 0: a ladder needs at least one bucket");
  }
  if (starts == nullptr || ends == nullptr) {
    Record(kFn, "%s is NULL (n=%zu)", starts == nullptr ? "starts" : "ends", n);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    std::vector<rlx::Bucket> buckets(n);
    for (size_t i = 0; i < n; ++i) buckets[i] = {starts[i], ends[i]};
    *out = new rlx_ladder{rlx::BucketLadder(std::move(buckets))};
  });
}

void rlx_ladder_free(rlx_ladder* ladder) { delete ladder; }

rlx_status rlx_ladder_size(const rlx_ladder* ladder, size_t* size) {
  constexpr const char* kFn = "rlx_ladder_size";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (size == nullptr) return InvalidArgument(kFn, "size is NULL");
  *size = ladder->ladder.size();
  return RLX_OK;
}

rlx_status rlx_ladder_bucket(const rlx_ladder* ladder, size_t i,
                             uint64_t* start, uint64_t* end) {
  constexpr const char* kFn = "rlx_ladder_bucket";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (start == nullptr || end == nullptr) {
    Record(kFn, "%s is NULL (bucket %zu)", start == nullptr ? "start" : "end",
           i);
    return RLX_INVALID_ARGUMENT;
  }
  if (i >= ladder->ladder.size()) {
    Record(kFn, "index %zu is not below the bucket count %zu", i,
           ladder->ladder.size());
    return RLX_INVALID_ARGUMENT;
  }
  *start = ladder->ladder[i].start;
  *end = ladder->ladder[i].end;
  return RLX_OK;
}

rlx_status rlx_ladder_bucket_for(const rlx_ladder* ladder, uint64_t key,
                                 bool* found, size_t* index) {
  constexpr const char* kFn = "rlx_ladder_bucket_for";
  if (ladder == nullptr) return InvalidArgument(kFn, "ladder is NULL");
  if (found == nullptr || index == nullptr) {
    Record(kFn, "%s is NULL (key %llu)", found == nullptr ? "found" : "index",
           static_cast<unsigned long long>(key));
    return RLX_INVALID_ARGUMENT;
  }
  // bucket_for does not allocate or throw.
  const std::optional<std::size_t> bucket = ladder->ladder.bucket_for(key);
  *found = bucket.has_value();
  if (bucket) *index = *bucket;
  return RLX_OK;
}

// ---------------------------------------------------------------------------
// Decode masks

rlx_status rlx_fill_bucket_decode_mask(float* out, size_t out_len,
                                       size_t past_seq, size_t upper,
                                       size_t window) {
  constexpr const char* kFn = "rlx_fill_bucket_decode_mask";
  if (out == nullptr) {
    Record(kFn, "out is NULL (out_len %zu, past_seq %zu, upper %zu)", out_len,
           past_seq, upper);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    rlx::fill_bucket_decode_mask(std::span<float>(out, out_len), past_seq,
                                 upper, window);
  });
}

// ---------------------------------------------------------------------------
// Targets

rlx_status rlx_compiled_targets(const char** names) {
  constexpr const char* kFn = "rlx_compiled_targets";
  if (names == nullptr) return InvalidArgument(kFn, "names is NULL");
  return Guard(kFn, [&] {
    // Built once (thread-safe static initialisation; a throw leaves it to be
    // tried again) and kept for the life of the process.
    static const std::string joined = JoinNames(rlx::compiled_targets());
    *names = joined.c_str();
  });
}

rlx_status rlx_supported_targets(const char** names) {
  constexpr const char* kFn = "rlx_supported_targets";
  if (names == nullptr) return InvalidArgument(kFn, "names is NULL");
  return Guard(kFn, [&] {
    static const std::string joined = JoinNames(rlx::supported_targets());
    *names = joined.c_str();
  });
}

rlx_status rlx_active_target(const char** name) {
  constexpr const char* kFn = "rlx_active_target";
  if (name == nullptr) return InvalidArgument(kFn, "name is NULL");
  return Guard(kFn, [&] { *name = CompiledName(rlx::active_target()); });
}

rlx_status rlx_dispatched_target(const char** name) {
  constexpr const char* kFn = "rlx_dispatched_target";
  if (name == nullptr) return InvalidArgument(kFn, "name is NULL");
  return Guard(kFn, [&] { *name = CompiledName(rlx::dispatched_target()); });
}

rlx_status rlx_force_target(const char* name) {
  return Guard("rlx_force_target", [&] {
    rlx::force_target(name == nullptr ? std::string_view()
                                      : std::string_view(name));
  });
}

// ---------------------------------------------------------------------------
// Score kernels

rlx_status rlx_kept_keys(const rlx_mask_spec* mask, size_t batch_index,
                         size_t q, size_t q_len, size_t k_len,
                         rlx_kept_intervals* out) {
  constexpr const char* kFn = "rlx_kept_keys";
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  if (out == nullptr) {
    Record(kFn, "out is NULL (batch_index %zu, q %zu, q_len %zu, k_len %zu)",
           batch_index, q, q_len, k_len);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const rlx::KeptKeys kept =
        rlx::kept_keys(*spec, batch_index, q, q_len, k_len);
    rlx_kept_intervals result{};
    result.count = kept.count;
    for (std::size_t i = 0; i < kept.count; ++i) {
      result.intervals[i] = {kept.intervals[i].begin, kept.intervals[i].end};
    }
    *out = result;
  });
}

rlx_status rlx_apply_mask(const rlx_score_view* scores,
                          const rlx_mask_spec* mask, const rlx_row_range* rows,
                          float fill) {
  constexpr const char* kFn = "rlx_apply_mask";
  const std::optional<rlx::ScoreView> view = ToView(kFn, "scores", scores);
  if (!view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  return Guard(kFn, [&] {
    rlx::apply_mask(*view, *spec, ToRows(rows, view->shape), fill);
  });
}

rlx_status rlx_masked_softmax(const rlx_score_view* scores,
                              const rlx_mask_spec* mask,
                              const rlx_softmax_options* options,
                              const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  return Guard(kFn, [&] {
    rlx::masked_softmax(view, spec, opts, ToRows(rows, view.shape));
  });
}

rlx_status rlx_masked_softmax_into(const rlx_score_view* in,
                                   const rlx_score_view* out,
                                   const rlx_mask_spec* mask,
                                   const rlx_softmax_options* options,
                                   const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax_into";
  const std::optional<rlx::ScoreView> in_view = ToView(kFn, "in", in);
  if (!in_view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::ScoreView> out_view = ToView(kFn, "out", out);
  if (!out_view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::SoftmaxOptions> opts = ToOptions(kFn, options);
  if (!opts) return RLX_INVALID_ARGUMENT;
  return Guard(kFn, [&] {
    rlx::masked_softmax(*in_view, *out_view, *spec, *opts,
                        ToRows(rows, in_view->shape));
  });
}

rlx_status rlx_alibi_slopes(size_t heads, float max_bias, float* out,
                            size_t out_len) {
  constexpr const char* kFn = "rlx_alibi_slopes";
  if (out == nullptr) {
    Record(kFn, "out is NULL (heads %zu, max_bias %g)", heads,
           static_cast<double>(max_bias));
    return RLX_INVALID_ARGUMENT;
  }
  if (out_len != heads) {
    Record(kFn, "out_len %zu is not heads %zu (max_bias %g)", out_len, heads,
           static_cast<double>(max_bias));
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const std::vector<float> slopes = rlx::alibi_slopes(heads, max_bias);
    if (slopes.size() != heads) {
      throw std::logic_error("alibi_slopes returned " +
                             std::to_string(slopes.size()) + " slopes for " +
                             std::to_string(heads) + " heads");
    }
    std::memcpy(out, slopes.data(), heads * sizeof(float));
  });
}

// ---------------------------------------------------------------------------
// Block masks and split rows

rlx_status rlx_classify_blocks(const rlx_mask_spec* mask,
                               const rlx_shape4* shape, size_t batch_index,
                               size_t head, size_t tq, size_t tk,
                               const rlx_block_mask_view* out) {
  constexpr const char* kFn = "rlx_classify_blocks";
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  if (shape == nullptr || out == nullptr) {
    Record(kFn, "%s is NULL (batch_index %zu, head %zu, tq %zu, tk %zu)",
           shape == nullptr ? "shape" : "out", batch_index, head, tq, tk);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    const rlx::BlockMaskView view{
        out->q_blocks,   out->k_blocks,           out->kv_num_blocks,
        out->kv_indices, out->full_kv_num_blocks, out->full_kv_indices};
    rlx::classify_blocks(*spec, ToShape(*shape), batch_index, head, tq, tk,
                         view);
  });
}

rlx_status rlx_merge_softmax_parts(const rlx_softmax_part* parts,
                                   size_t n_parts, float* merged_lse,
                                   const float* sink_logits) {
  constexpr const char* kFn = "rlx_merge_softmax_parts";
  if (parts == nullptr) {
    Record(kFn, "parts is NULL (n_parts %zu)", n_parts);
    return RLX_INVALID_ARGUMENT;
  }
  if (n_parts == 0) return InvalidArgument(kFn, "n_parts is 0: no parts");
  // The C++ parts: on the stack for the usual few, so that a merge per
  // decode step does not allocate.
  constexpr std::size_t kLocalParts = 16;
  std::array<rlx::SoftmaxPart, kLocalParts> local;
  return Guard(kFn, [&]() -> rlx_status {
    std::vector<rlx::SoftmaxPart> heap;
    rlx::SoftmaxPart* converted = local.data();
    if (n_parts > kLocalParts) {
      heap.resize(n_parts);
      converted = heap.data();
    }
    for (std::size_t i = 0; i < n_parts; ++i) {
      char which[48];
      std::snprintf(which, sizeof(which), "parts[%zu].probs", i);
      const std::optional<rlx::ScoreView> view =
          ToView(kFn, which, &parts[i].probs);
      if (!view) return RLX_INVALID_ARGUMENT;
      converted[i] = {*view, parts[i].row_lse};
    }
    rlx::merge_softmax_parts(
        std::span<const rlx::SoftmaxPart>(converted, n_parts), merged_lse,
        sink_logits);
    return RLX_OK;
  });
}

// ---------------------------------------------------------------------------
// Split rows finished in place

rlx_status rlx_split_kept_keys(const rlx_kept_intervals* kept, size_t k_len,
                               size_t part, size_t parts,
                               double masked_key_cost, rlx_key_range* out) {
  constexpr const char* kFn = "rlx_split_kept_keys";
  if (kept == nullptr || out == nullptr) {
    Record(kFn, "%s is NULL (k_len %zu, part %zu, parts %zu)",
           kept == nullptr ? "kept" : "out", k_len, part, parts);
    return RLX_INVALID_ARGUMENT;
  }
  if (kept->count > RLX_MAX_KEPT_INTERVALS) {
    Record(kFn,
           "kept->count %zu exceeds RLX_MAX_KEPT_INTERVALS (%d) (k_len %zu, "
           "part %zu, parts %zu)",
           kept->count, RLX_MAX_KEPT_INTERVALS, k_len, part, parts);
    return RLX_INVALID_ARGUMENT;
  }
  return Guard(kFn, [&] {
    rlx::KeptKeys converted;
    converted.count = kept->count;
    for (std::size_t i = 0; i < kept->count; ++i) {
      converted.intervals[i] = {kept->intervals[i].begin,
                                kept->intervals[i].end};
    }
    const rlx::KeyRange range =
        rlx::split_kept_keys(converted, k_len, part, parts, masked_key_cost);
    *out = {range.begin, range.end};
  });
}

rlx_status rlx_masked_softmax_part(const rlx_score_view* scores,
                                   const rlx_mask_spec* mask,
                                   rlx_key_range keys,
                                   rlx_softmax_part_stats* stats,
                                   const rlx_softmax_options* options,
                                   const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_masked_softmax_part";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  // A null stats is the C++ function's to reject (with the values).
  return Guard(kFn, [&] {
    rlx::masked_softmax_part(view, spec, ToKeys(keys),
                             reinterpret_cast<rlx::SoftmaxPartStats*>(stats),
                             opts, ToRows(rows, view.shape));
  });
}

rlx_status rlx_finish_softmax_part(
    const rlx_score_view* scores, const rlx_mask_spec* mask, rlx_key_range keys,
    const rlx_softmax_part_stats* const* parts, size_t n_parts, size_t part,
    const rlx_softmax_options* options, const rlx_row_range* rows) {
  constexpr const char* kFn = "rlx_finish_softmax_part";
  const std::optional<SoftmaxCall> call =
      ToSoftmaxCall(kFn, scores, mask, options);
  if (!call) return RLX_INVALID_ARGUMENT;
  const rlx::ScoreView& view = call->view;
  const rlx::MaskSpec& spec = call->mask;
  const rlx::SoftmaxOptions& opts = call->options;
  if (parts == nullptr) {
    Record(kFn, "parts is NULL (n_parts %zu, part %zu)", n_parts, part);
    return RLX_INVALID_ARGUMENT;
  }
  if (n_parts == 0) return InvalidArgument(kFn, "n_parts is 0: no parts");
  // The C++ pointers: on the stack for the usual few, so that a split decode
  // step does not allocate. A null parts[i] is the C++ function's to reject.
  constexpr std::size_t kLocalParts = 16;
  std::array<const rlx::SoftmaxPartStats*, kLocalParts> local;
  return Guard(kFn, [&] {
    std::vector<const rlx::SoftmaxPartStats*> heap;
    const rlx::SoftmaxPartStats** converted = local.data();
    if (n_parts > kLocalParts) {
      heap.resize(n_parts);
      converted = heap.data();
    }
    for (std::size_t i = 0; i < n_parts; ++i) {
      converted[i] = reinterpret_cast<const rlx::SoftmaxPartStats*>(parts[i]);
    }
    rlx::finish_softmax_part(
        view, spec, ToKeys(keys),
        std::span<const rlx::SoftmaxPartStats* const>(converted, n_parts), part,
        opts, ToRows(rows, view.shape));
  });
}

}  // extern "C"
