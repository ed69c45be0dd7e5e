// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API (include/rlx/rlx_attn_mask.h) over the C++ API. Each entry point
// checks what C can get wrong and C++ cannot (null pointers, enum values
// outside their range), then calls the C++ function inside Guard(), which
// turns every exception into a status and a thread-local message, so that no
// exception crosses into C or another language's frames.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "rlx/attn_mask.h"
#include "rlx/bucket_ladder.h"
#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/targets.h"

// The opaque handle: a ladder is immutable once built.
struct rlx_ladder {
  rlx::BucketLadder ladder;
};

namespace {

// A fixed buffer rather than a std::string: recording a failure must not
// itself allocate (it also reports out-of-memory) nor throw.
constexpr std::size_t kMessageCapacity = 1024;
thread_local char g_last_error[kMessageCapacity] = "";

// Records "<function>: <printf-formatted detail>" for rlx_last_error.
[[gnu::format(printf, 2, 3)]] void Record(const char* function,
                                          const char* format, ...) noexcept {
  int used = std::snprintf(g_last_error, kMessageCapacity, "%s: ", function);
  if (used < 0) used = 0;
  if (static_cast<std::size_t>(used) >= kMessageCapacity) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_last_error + used, kMessageCapacity - used, format, args);
  va_end(args);
}

rlx_status Fail(rlx_status status, const char* function,
                const char* detail) noexcept {
  Record(function, "%s", detail);
  return status;
}

rlx_status InvalidArgument(const char* function, const char* what) noexcept {
  return Fail(RLX_INVALID_ARGUMENT, function, what);
}

// Runs `body` and maps whatever it throws to a status. The C++ messages name
// the C++ function and values; the C function's name is put in front.
template <class Body>
rlx_status Guard(const char* function, Body&& body) noexcept {
  try {
    body();
    return RLX_OK;
  } catch (const std::invalid_argument& e) {
    return Fail(RLX_INVALID_ARGUMENT, function, e.what());
  } catch (const std::bad_alloc&) {
    return Fail(RLX_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::length_error& e) {
    // A container asked for more than it can ever hold: too large for
    // memory, like bad_alloc, rather than a bug.
    Record(function, "out of memory: %s", e.what());
    return RLX_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    Record(function, "internal error: %s", e.what());
    return RLX_INTERNAL_ERROR;
  } catch (...) {
    return Fail(RLX_INTERNAL_ERROR, function,
                "internal error: an unknown exception");
  }
}

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

// ---------------------------------------------------------------------------
// Score kernels: the C structs to the C++ ones.

// The C enums carry the C++ enumerators' values, so that a value means the
// same on both sides (and in the Rust crate, which declares them as
// unsigned int constants).
static_assert(RLX_SCORE_F32 == static_cast<int>(rlx::ScoreType::kF32));
static_assert(RLX_SCORE_BF16 == static_cast<int>(rlx::ScoreType::kBF16));
static_assert(RLX_SCORE_F16 == static_cast<int>(rlx::ScoreType::kF16));
static_assert(RLX_MASK_NONE == static_cast<int>(rlx::MaskKind::kNone));
static_assert(RLX_MASK_CAUSAL == static_cast<int>(rlx::MaskKind::kCausal));
static_assert(RLX_MASK_SLIDING_WINDOW ==
              static_cast<int>(rlx::MaskKind::kSlidingWindow));
static_assert(RLX_MASK_DECODE == static_cast<int>(rlx::MaskKind::kDecode));
static_assert(RLX_MASK_KEEP_F32 == static_cast<int>(rlx::MaskKind::kKeepF32));
static_assert(RLX_MASK_KEEP_U8 == static_cast<int>(rlx::MaskKind::kKeepU8));
static_assert(RLX_MASK_BIAS == static_cast<int>(rlx::MaskKind::kBias));
// The statuses: RLX_OK is 0 so that `if (status)` tests for failure; the
// values are fixed because bindings (bindings/rust/src/ffi.rs) hard-code
// them. The enums are int-sized, as the bindings declare them.
static_assert(RLX_OK == 0 && RLX_INVALID_ARGUMENT == 1 &&
              RLX_OUT_OF_MEMORY == 2 && RLX_INTERNAL_ERROR == 3);
static_assert(sizeof(rlx_status) == sizeof(int) &&
              sizeof(rlx_score_type) == sizeof(int) &&
              sizeof(rlx_mask_kind) == sizeof(int));

// Enum values are checked here because a C caller can pass any integer;
// everything else (null data, extents, strides, their sizes, ranges) is the
// C++ functions' to check.

rlx::Shape4 ToShape(const rlx_shape4& s) {
  return {s.batch, s.heads, s.q_len, s.k_len};
}

rlx::Strides3 ToStrides(const rlx_strides3& s) {
  return {s.batch, s.head, s.row};
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
    case RLX_MASK_NONE:
      return rlx::MaskKind::kNone;
    case RLX_MASK_CAUSAL:
      return rlx::MaskKind::kCausal;
    case RLX_MASK_SLIDING_WINDOW:
      return rlx::MaskKind::kSlidingWindow;
    case RLX_MASK_DECODE:
      return rlx::MaskKind::kDecode;
    case RLX_MASK_KEEP_F32:
      return rlx::MaskKind::kKeepF32;
    case RLX_MASK_KEEP_U8:
      return rlx::MaskKind::kKeepU8;
    case RLX_MASK_BIAS:
      return rlx::MaskKind::kBias;
  }
  return std::nullopt;
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
  const std::optional<rlx::MaskKind> kind = ToMaskKind(mask->kind);
  if (!kind) {
    Record(function, "mask->kind %lld is not an rlx_mask_kind",
           static_cast<long long>(RawValue(mask->kind)));
    return std::nullopt;
  }
  rlx::MaskSpec spec;
  spec.kind = *kind;
  spec.window = mask->window;
  spec.past = mask->past;
  spec.upper = mask->upper;
  spec.data = mask->data;
  spec.shape = ToShape(mask->shape);
  spec.strides = ToStrides(mask->strides);
  spec.query_offsets = mask->query_offsets;
  return spec;
}

rlx::SoftmaxOptions ToOptions(const rlx_softmax_options* options) {
  if (options == nullptr) return {};
  return {options->scale, options->softcap};
}

rlx::RowRange ToRows(const rlx_row_range* rows, const rlx::Shape4& shape) {
  if (rows == nullptr) return rlx::RowRange::all(shape);
  return {rows->begin, rows->end};
}

}  // namespace

extern "C" {

const char* rlx_last_error(void) { return g_last_error; }

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
  return Guard(kFn, [&] {
    const std::string active = rlx::active_target();
    for (const std::string& compiled : CompiledNames()) {
      if (compiled == active) {
        *name = compiled.c_str();
        return;
      }
    }
    throw std::logic_error("active target \"" + active +
                           "\" is not among the compiled targets");
  });
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
  const std::optional<rlx::ScoreView> view = ToView(kFn, "scores", scores);
  if (!view) return RLX_INVALID_ARGUMENT;
  const std::optional<rlx::MaskSpec> spec = ToMask(kFn, mask);
  if (!spec) return RLX_INVALID_ARGUMENT;
  return Guard(kFn, [&] {
    rlx::masked_softmax(*view, *spec, ToOptions(options),
                        ToRows(rows, view->shape));
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
  return Guard(kFn, [&] {
    rlx::masked_softmax(*in_view, *out_view, *spec, ToOptions(options),
                        ToRows(rows, in_view->shape));
  });
}

}  // extern "C"
