// SPDX-License-Identifier: MIT OR Apache-2.0
// Dispatching entry points of the score kernels: argument checks (nothing is
// written when they fail), then one dispatch per call covering all its rows.
#include "rlx/score_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/scores/score_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/scores/apply_key_list-inl.h"
#include "src/scores/apply_mask-inl.h"
#include "src/scores/block_list_apply-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {

void ApplyMask(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
               float fill) {
  if (detail::HasBlockList(mask)) {
    switch (scores.type) {
      case ScoreType::kF32:
        return ApplyBlockListRows<ScoreType::kF32>(scores, mask, rows, fill);
      case ScoreType::kBF16:
        return ApplyBlockListRows<ScoreType::kBF16>(scores, mask, rows, fill);
      case ScoreType::kF16:
        return ApplyBlockListRows<ScoreType::kF16>(scores, mask, rows, fill);
    }
  }
  switch (scores.type) {
    case ScoreType::kF32:
      return ApplyMaskRows<ScoreType::kF32>(scores, mask, rows, fill);
    case ScoreType::kBF16:
      return ApplyMaskRows<ScoreType::kBF16>(scores, mask, rows, fill);
    case ScoreType::kF16:
      return ApplyMaskRows<ScoreType::kF16>(scores, mask, rows, fill);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/mask/block_list.h"
#include "src/mask/key_list.h"
#include "src/mask/mask_field_list.h"
#include "src/mask/mask_kind_list.h"
#include "src/mask/mask_rows.h"
#include "src/scores/check_messages.h"
#include "src/scores/list_checks.h"
#include "src/softmax/key_list_softmax.h"
#include "src/softmax/softmax_rows.h"
#include "src/softmax/thread_exp_buffer.h"
#include "src/util/checked_size.h"

namespace rlx {

using detail::Fail;
using detail::MaxSizeString;
using detail::ShapeString;
using detail::StridesString;

HWY_EXPORT(ApplyMask);
HWY_EXPORT(ApplyKeyList);

namespace {

// Rejects a tensor (`what` names it: "scores", "mask") whose element count
// or byte span exceeds PTRDIFF_MAX: no such tensor exists, and offsets into
// it would wrap. Extents must be >= 1.
void CheckTensorSize(const char* who, const std::string& what,
                     const Shape4& shape, const Strides3& strides,
                     std::size_t elem_size) {
  if (!detail::ElementCount(shape)) {
    Fail(who, what + " shape " + ShapeString(shape) + " has more than " +
                  MaxSizeString() + " elements");
  }
  if (!detail::SpanBytes(shape, strides, elem_size)) {
    Fail(who, what + " shape " + ShapeString(shape) + " at strides " +
                  StridesString(strides) + " spans more than " +
                  MaxSizeString() + " bytes of " + std::to_string(elem_size) +
                  "-byte elements");
  }
}

std::size_t ElemSize(ScoreType type) {
  return type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
}

void CheckScores(const char* who, const char* name, const ScoreView& v) {
  const std::string n(name);
  if (v.data == nullptr) Fail(who, n + ".data is null");
  if (v.type != ScoreType::kF32 && v.type != ScoreType::kBF16 &&
      v.type != ScoreType::kF16) {
    Fail(who, n + ".type " + std::to_string(static_cast<int>(v.type)) +
                  " is not a ScoreType");
  }
  const Shape4& s = v.shape;
  if (s.k_len == 0) Fail(who, n + " k_len is 0");
  if (s.batch == 0 || s.heads == 0 || s.q_len == 0) {
    Fail(who, n + " shape " + ShapeString(s) + " has an empty extent");
  }
  if (s.q_len > 1 && v.strides.row < s.k_len) {
    Fail(who, n + " row stride " + std::to_string(v.strides.row) +
                  " is below k_len " + std::to_string(s.k_len));
  }
  CheckTensorSize(who, n, s, v.strides, ElemSize(v.type));
}

void CheckRows(const char* who, const Shape4& shape, RowRange rows) {
  if (rows.begin > rows.end || rows.end > shape.rows()) {
    Fail(who, "row range [" + std::to_string(rows.begin) + ", " +
                  std::to_string(rows.end) + ") is not within the " +
                  std::to_string(shape.rows()) + " rows of shape " +
                  ShapeString(shape));
  }
}

// From the kind list (src/mask/mask_kind_list.h).
const char* DenseName(DenseKind dense) { return kinds::MessageNameOf(dense); }

void CheckDense(const char* who, const MaskSpec& mask, DenseKind dense,
                const Shape4& scores) {
  if (mask.data == nullptr) {
    Fail(who,
         std::string("dense mask data is null (") + DenseName(dense) + ")");
  }
  const Shape4& m = mask.shape;
  const auto fits = [](std::size_t mask_extent, std::size_t extent) {
    return mask_extent == extent || mask_extent == 1;
  };
  if (!fits(m.batch, scores.batch) || !fits(m.heads, scores.heads) ||
      !fits(m.q_len, scores.q_len) || m.k_len != scores.k_len) {
    Fail(who, "mask shape " + ShapeString(m) +
                  " does not broadcast to scores " + ShapeString(scores) +
                  " (each extent must match or be 1; k_len must match)");
  }
  // A zero stride broadcasts (docs/SEMANTICS.md, "Dense parts and
  // broadcasting"): every query row reads the same mask row. Any other
  // row stride below a row's width is a caller's mistake (a stride in
  // bytes, or in keys for a bit mask), not a layout.
  const bool broadcast_rows = m.q_len == 1 || mask.strides.row == 0;
  if (dense == DenseKind::kKeepBits) {
    // Strides count 64-bit words: a row holds ceil(k_len / 64) of them.
    const std::size_t words = m.k_len / 64 + (m.k_len % 64 != 0);
    if (!broadcast_rows && mask.strides.row < words) {
      Fail(who,
           "keep_bits row stride " + std::to_string(mask.strides.row) +
               " words is below ceil(k_len / 64) = " + std::to_string(words) +
               " for k_len " + std::to_string(m.k_len));
    }
    CheckTensorSize(who, "mask", Shape4{m.batch, m.heads, m.q_len, words},
                    mask.strides, sizeof(std::uint64_t));
    return;
  }
  if (!broadcast_rows && mask.strides.row < m.k_len) {
    Fail(who, "mask row stride " + std::to_string(mask.strides.row) +
                  " is below k_len " + std::to_string(m.k_len));
  }
  CheckTensorSize(
      who, "mask", m, mask.strides,
      dense == DenseKind::kKeepU8 ? sizeof(std::uint8_t) : sizeof(float));
}

// The rules' extents are compared with int64 position differences: one
// larger than INT64_MAX cannot be represented.
void CheckRuleExtent(const char* who, const char* name, std::size_t value) {
  if (value > static_cast<std::size_t>(INT64_MAX)) {
    Fail(who, std::string(name) + " " + std::to_string(value) +
                  " exceeds the largest position difference " +
                  std::to_string(INT64_MAX));
  }
}

// From the kind list (src/mask/mask_kind_list.h): its rows are 0, 1, ...
bool IsMaskKind(MaskKind kind) {
  return static_cast<std::size_t>(kind) < kinds::kMaskKindCount;
}

void CheckMask(const char* who, const MaskSpec& mask, const Shape4& scores) {
  if (!IsMaskKind(mask.kind)) {
    Fail(who, "mask kind " + std::to_string(static_cast<int>(mask.kind)) +
                  " is not a MaskKind");
  }
  switch (mask.kind) {
    case MaskKind::kNone:
    case MaskKind::kCausal:
    case MaskKind::kSlidingWindow:
      break;
    case MaskKind::kDecode:
      if (mask.past > mask.upper) {
        Fail(who, "decode mask past " + std::to_string(mask.past) +
                      " exceeds upper " + std::to_string(mask.upper));
      }
      if (mask.upper >= scores.k_len || mask.upper + 1 != scores.k_len) {
        Fail(who, "decode mask upper " + std::to_string(mask.upper) +
                      " needs k_len upper + 1, but k_len is " +
                      std::to_string(scores.k_len));
      }
      break;
    case MaskKind::kKeepF32:
    case MaskKind::kKeepU8:
    case MaskKind::kBias:
    case MaskKind::kKeepBits:
      if (mask.dense != DenseKind::kNone) {
        Fail(who, std::string("a dense mask kind cannot take a second dense "
                              "part (") +
                      DenseName(mask.dense) + "): a mask has at most one");
      }
      break;
  }
  // Before the fields' own checks, so that the message names both parts.
  if (mask.key_indices != nullptr && !fields::Absent(mask.block_list)) {
    Fail(who,
         "a mask with both a key list (key_indices) and a block list "
         "(block_list) is not supported: use one of them");
  }
  // Every kExtent field of the list (src/mask/mask_field_list.h).
#define RLX_CHECK_kKind(field)
#define RLX_CHECK_kKindArg(field)
#define RLX_CHECK_kDense(field)
#define RLX_CHECK_kDenseKind(field)
#define RLX_CHECK_kPosition(field)
#define RLX_CHECK_kRule(field)
#define RLX_CHECK_kExtent(field) CheckRuleExtent(who, #field, mask.field);
// kList fields: checked by hand below (CheckKeyList, CheckBlockList).
#define RLX_CHECK_kList(field)
#define RLX_CHECK(field, role, extent) RLX_CHECK_##role(field)
  RLX_MASK_FIELD_LIST(RLX_CHECK, RLX_MASK_FIELD_NOTHING)
#undef RLX_CHECK
#undef RLX_CHECK_kKind
#undef RLX_CHECK_kKindArg
#undef RLX_CHECK_kDense
#undef RLX_CHECK_kDenseKind
#undef RLX_CHECK_kPosition
#undef RLX_CHECK_kRule
#undef RLX_CHECK_kExtent
#undef RLX_CHECK_kList
  detail::CheckKeyList(who, mask, scores);
  if ((mask.q_segment == nullptr) != (mask.k_segment == nullptr)) {
    Fail(who, std::string("segments need both sides, but ") +
                  (mask.q_segment == nullptr ? "q_segment" : "k_segment") +
                  " is null");
  }
  detail::CheckBlockList(who, mask, scores);
  if ((mask.q_group == nullptr) != (mask.k_group == nullptr)) {
    Fail(who, std::string("groups need both sides, but ") +
                  (mask.q_group == nullptr ? "q_group" : "k_group") +
                  " is null");
  }
  const DenseKind dense = mask.dense_part();
  switch (dense) {
    case DenseKind::kNone:
      return;
    case DenseKind::kKeepF32:
    case DenseKind::kKeepU8:
    case DenseKind::kKeepBits:
    case DenseKind::kBias:
      CheckDense(who, mask, dense, scores);
      return;
  }
  Fail(who, "dense part " + std::to_string(static_cast<int>(dense)) +
                " is not a DenseKind");
}

// A per-head option array: every head's value must be a number, and finite
// except for a -inf sink logit (no sink). Checked for every head up front, so
// that nothing is written when one is bad.
void CheckPerHead(const char* who, const char* name, const float* values,
                  std::size_t heads, bool allow_neg_inf) {
  if (values == nullptr) return;
  for (std::size_t h = 0; h < heads; ++h) {
    const float v = values[h];
    const bool ok =
        std::isfinite(v) ||
        (allow_neg_inf && v == -std::numeric_limits<float>::infinity());
    if (!ok) {
      Fail(who, std::string(name) + "[" + std::to_string(h) + "] (head " +
                    std::to_string(h) + ") is " + std::to_string(v) + ": " +
                    (allow_neg_inf ? "must be finite or -inf (no sink)"
                                   : "must be finite"));
    }
  }
}

}  // namespace

KeptKeys kept_keys(const MaskSpec& mask, std::size_t batch_index, std::size_t q,
                   std::size_t q_len, std::size_t k_len) {
  constexpr const char* kWho = "kept_keys";
  if (k_len == 0) Fail(kWho, "k_len is 0");
  if (q >= q_len) {
    Fail(kWho, "query row " + std::to_string(q) + " is not below q_len " +
                   std::to_string(q_len));
  }
  // The row's tensor, batch_index + 1 batches of q_len rows of k_len keys,
  // must be able to exist, as in the kernels.
  if (batch_index >= detail::kMaxSize ||
      !detail::CheckedProduct({batch_index + 1, q_len, k_len})) {
    Fail(kWho, "batch_index " + std::to_string(batch_index) + ", q_len " +
                   std::to_string(q_len) + " and k_len " +
                   std::to_string(k_len) + " describe a tensor of more than " +
                   MaxSizeString() + " elements");
  }
  const bool dense = mask.dense_part() != DenseKind::kNone;
  const bool listed = mask.key_indices != nullptr;
  const bool blocks = detail::HasBlockList(mask);
  const Shape4& ls = mask.key_indices_shape;
  // Only the row's own batch is known: a dense part, a key list and a block
  // list must hold that batch (or broadcast over batches); any head count is
  // fine (kept_keys names no head: it covers them all).
  std::size_t batches = batch_index + 1;
  if (dense && mask.shape.batch > batch_index) batches = mask.shape.batch;
  if (listed && ls.batch > batch_index && ls.batch != 1) {
    batches = std::max(batches, ls.batch);
  }
  if (blocks && mask.block_list.batch > batch_index) {
    batches = std::max(batches, mask.block_list.batch);
  }
  std::size_t heads = dense ? mask.shape.heads : 1;
  if (listed && ls.heads != 1) heads = std::max(heads, ls.heads);
  if (blocks) heads = std::max(heads, mask.block_list.heads);
  const Shape4 shape{batches, heads, q_len, k_len};
  CheckMask(kWho, mask, shape);
  // A block list: every entry (kept_keys is often the first call to see a
  // list). A key list: the slots of every head's list of the row (a list
  // broadcast over queries: its one row).
  detail::CheckBlockListRows(kWho, mask, shape, RowRange::all(shape));
  const std::size_t first = (batch_index * heads) * q_len + q;
  for (std::size_t h = 0; h < heads; ++h) {
    detail::CheckKeyListSlots(kWho, mask, shape,
                              {first + h * q_len, first + h * q_len + 1});
  }
  const detail::Rules rules = detail::RulesOf(mask);
  if (blocks) {
    return detail::BlockListKeptKeys(mask, rules, batch_index, q, q_len, k_len);
  }
  const KeptKeys cover =
      detail::KeptKeysOf(mask, rules, batch_index, q, q_len, k_len);
  if (!listed) return cover;
  return detail::KeyListKeptKeys(mask, cover, batch_index, q);
}

void apply_mask(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                float fill) {
  constexpr const char* kWho = "apply_mask";
  CheckScores(kWho, "scores", scores);
  CheckMask(kWho, mask, scores.shape);
  CheckRows(kWho, scores.shape, rows);
  detail::CheckKeyListSlots(kWho, mask, scores.shape, rows);
  detail::CheckBlockListRows(kWho, mask, scores.shape, rows);
  if (rows.begin == rows.end) return;
  if (mask.key_indices != nullptr) {
    // Had before any row is written: a failed allocation writes nothing.
    const detail::KeyListScratch scratch = detail::ThreadKeyListScratch(
        mask.key_indices_shape.k_len, scores.shape.k_len);
    return RLX_DYNAMIC_DISPATCH(ApplyKeyList)(scores, mask, rows, fill,
                                              scratch);
  }
  RLX_DYNAMIC_DISPATCH(ApplyMask)(scores, mask, rows, fill);
}

void apply_mask(const ScoreView& scores, const MaskSpec& mask, float fill) {
  apply_mask(scores, mask, RowRange::all(scores.shape), fill);
}

void detail::CheckSoftmaxCall(const char* who, const ScoreView& in,
                              const ScoreView* out, const MaskSpec& mask,
                              const SoftmaxOptions& options, RowRange rows) {
  if (out == nullptr) {
    CheckScores(who, "scores", in);  // in place: name the caller's one view
    out = &in;
  } else {
    CheckScores(who, "in", in);
    CheckScores(who, "out", *out);
  }
  if (in.type != out->type) {
    Fail(who, "in and out differ in type (" +
                  std::to_string(static_cast<int>(in.type)) + " vs " +
                  std::to_string(static_cast<int>(out->type)) + ")");
  }
  const Shape4& o = out->shape;
  if (in.shape.batch != o.batch || in.shape.heads != o.heads ||
      in.shape.q_len != o.q_len || in.shape.k_len != o.k_len) {
    Fail(who, "in shape " + ShapeString(in.shape) + " differs from out shape " +
                  ShapeString(o));
  }
  if (!std::isfinite(options.scale)) {
    Fail(who, "scale " + std::to_string(options.scale) + " is not finite");
  }
  if (!(options.softcap >= 0.0f) || !std::isfinite(options.softcap)) {
    Fail(who, "softcap " + std::to_string(options.softcap) +
                  " must be finite and >= 0 (0 = none)");
  }
  CheckMask(who, mask, in.shape);
  CheckRows(who, in.shape, rows);
  detail::CheckKeyListSlots(who, mask, in.shape, rows);
  detail::CheckBlockListRows(who, mask, in.shape, rows);
  CheckPerHead(who, "sink_logits", options.sink_logits, in.shape.heads,
               /*allow_neg_inf=*/true);
  CheckPerHead(who, "alibi_slopes", options.alibi_slopes, in.shape.heads,
               /*allow_neg_inf=*/false);
}

void detail::ReserveExpBuffer(const ScoreView& in) {
  if (in.type != ScoreType::kF32 && in.shape.k_len > detail::kStackExpKeys &&
      detail::ThreadExpBuffer(detail::ExpWorkFloats(in.shape.k_len)) ==
          nullptr) {
    throw std::bad_alloc();
  }
}

void masked_softmax(const ScoreView& in, const ScoreView& out,
                    const MaskSpec& mask, const SoftmaxOptions& options,
                    RowRange rows) {
  detail::CheckSoftmaxCall("masked_softmax", in, &out, mask, options, rows);
  if (rows.begin == rows.end) return;
  // 16-bit rows longer than the stack scratch keep their exp values in the
  // thread's buffer: had now, so that a failed allocation writes nothing.
  detail::ReserveExpBuffer(in);
  detail::SoftmaxRows(in, out, mask, options, rows, /*part=*/nullptr);
}

void masked_softmax(const ScoreView& scores, const MaskSpec& mask,
                    const SoftmaxOptions& options, RowRange rows) {
  // In place: errors name the one view the caller passed.
  detail::CheckSoftmaxCall("masked_softmax", scores, /*out=*/nullptr, mask,
                           options, rows);
  if (rows.begin == rows.end) return;
  detail::ReserveExpBuffer(scores);
  detail::SoftmaxRows(scores, scores, mask, options, rows, /*part=*/nullptr);
}

void masked_softmax(const ScoreView& scores, const MaskSpec& mask,
                    const SoftmaxOptions& options) {
  masked_softmax(scores, mask, options, RowRange::all(scores.shape));
}

}  // namespace rlx
#endif  // HWY_ONCE
