// SPDX-License-Identifier: MIT OR Apache-2.0
// The scalar oracle. Written from docs/SEMANTICS.md's words, element by
// element, and deliberately sharing no code with the kernels (not even
// src/mask/mask_rows.h): a mistake in the interval logic must show up as a
// difference.
#include "tests/reference/reference.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "src/util/half_codec.h"

namespace rlx::reference {
namespace {

// Element offset of (b, h, q, k); extents of 1 broadcast.
std::size_t Offset(const Shape4& shape, const Strides3& strides, std::size_t b,
                   std::size_t h, std::size_t q, std::size_t k) {
  std::size_t off = k;
  if (shape.batch != 1) off += b * strides.batch;
  if (shape.heads != 1) off += h * strides.head;
  if (shape.q_len != 1) off += q * strides.row;
  return off;
}

void Store(const ScoreView& v, std::size_t off, double x) {
  switch (v.type) {
    case ScoreType::kF32:
      static_cast<float*>(v.data)[off] = static_cast<float>(x);
      return;
    case ScoreType::kBF16:
      // Through f32, as the kernels round an f32 result; the double
      // rounding this allows is within the tests' bounds.
      static_cast<std::uint16_t*>(v.data)[off] =
          rlx_bf16_from_f32(static_cast<float>(x));
      return;
    case ScoreType::kF16:
      // Once, from double.
      static_cast<std::uint16_t*>(v.data)[off] = rlx_f16_from_f64(x);
      return;
  }
}

// The fill as the row type: an f32 row takes its bits as they are (a
// signalling NaN stays signalling: no arithmetic touches it), 16-bit rows
// their conversion of it (Store).
void StoreFill(const ScoreView& v, std::size_t off, float fill) {
  if (v.type == ScoreType::kF32) {
    std::memcpy(static_cast<float*>(v.data) + off, &fill, sizeof(fill));
  } else {
    Store(v, off, fill);
  }
}

}  // namespace

double element_at(const ScoreView& v, std::size_t off) {
  switch (v.type) {
    case ScoreType::kF32:
      return static_cast<const float*>(v.data)[off];
    case ScoreType::kBF16:
      return rlx_f32_from_bf16(static_cast<const std::uint16_t*>(v.data)[off]);
    case ScoreType::kF16:
      return rlx_f32_from_f16(static_cast<const std::uint16_t*>(v.data)[off]);
  }
  return 0;
}

void decode_mask(float* out, std::size_t past_seq, std::size_t upper,
                 std::size_t window) {
  const std::size_t lo =
      window == 0 ? 0 : (past_seq > window ? past_seq - window : 0);
  for (std::size_t i = 0; i <= upper; ++i) {
    const bool real_past_in_window = i >= lo && i < past_seq;
    out[i] = (real_past_in_window || i == upper) ? 1.0f : 0.0f;
  }
}

namespace {

// floor(a / c), c > 0.
__int128 FloorDiv(__int128 a, __int128 c) {
  __int128 q = a / c;
  if (a % c != 0 && a < 0) --q;
  return q;
}

}  // namespace

namespace {

// Logical positions (docs/SEMANTICS.md): explicit arrays, else the Decode
// layout, else p_q = query_offset(b) + q and p_k = k (-1: an empty slot).
__int128 QueryPos(const MaskSpec& mask, const Shape4& scores, std::size_t b,
                  std::size_t q) {
  if (mask.q_position != nullptr) return mask.q_position[b * scores.q_len + q];
  if (mask.kind == MaskKind::kDecode) return mask.past;
  const std::int64_t offset = mask.query_offsets
                                  ? mask.query_offsets[b]
                                  : static_cast<std::int64_t>(scores.k_len) -
                                        static_cast<std::int64_t>(scores.q_len);
  return __int128{offset} + static_cast<__int128>(q);
}

__int128 KeyPos(const MaskSpec& mask, const Shape4& scores, std::size_t b,
                std::size_t k) {
  if (mask.k_position != nullptr) return mask.k_position[b * scores.k_len + k];
  if (mask.kind == MaskKind::kDecode) {
    return k < mask.past     ? static_cast<__int128>(k)
           : k == mask.upper ? static_cast<__int128>(mask.past)
                             : -1;
  }
  return k;
}

}  // namespace

namespace {

// docs/SEMANTICS.md, "Block lists": how row (b, h, q)'s query block lists
// key k's block: 0 not at all, 1 partial, 2 full; -1 without a block list.
// A plain search of the row's two lists.
int ListedAs(const MaskSpec& mask, std::size_t b, std::size_t h, std::size_t q,
             std::size_t k) {
  const BlockList& l = mask.block_list;
  if (l.num_blocks == nullptr) return -1;
  const std::size_t row =
      ((l.batch == 1 ? 0 : b) * l.heads + (l.heads == 1 ? 0 : h)) * l.q_blocks +
      q / l.q_block;
  const auto block = static_cast<std::int32_t>(k / l.k_block);
  for (std::int32_t s = 0; s < l.num_blocks[row]; ++s) {
    if (l.indices[row * l.max_blocks + s] == block) return 1;
  }
  if (l.full_num_blocks != nullptr) {
    for (std::int32_t s = 0; s < l.full_num_blocks[row]; ++s) {
      if (l.full_indices[row * l.max_blocks + s] == block) return 2;
    }
  }
  return 0;
}

// docs/SEMANTICS.md, "Key lists": whether row (b, h, q)'s key list names
// key k (true without a key list).
bool KeyListed(const MaskSpec& mask, std::size_t b, std::size_t h,
               std::size_t q, std::size_t k) {
  if (mask.key_indices == nullptr) return true;
  const Shape4& ls = mask.key_indices_shape;
  // Contiguous [batch or 1, heads or 1, q_len or 1, n]: extents of 1
  // broadcast.
  const std::size_t row =
      ((ls.batch == 1 ? 0 : b) * ls.heads + (ls.heads == 1 ? 0 : h)) *
          ls.q_len +
      (ls.q_len == 1 ? 0 : q);
  for (std::size_t s = 0; s < ls.k_len; ++s) {
    if (mask.key_indices[row * ls.k_len + s] == static_cast<std::int64_t>(k)) {
      return true;
    }
  }
  return false;
}

}  // namespace

// docs/SEMANTICS.md, "Mask rules over logical positions", term by term. 128-bit
// arithmetic: no position difference can overflow.
bool is_kept(const MaskSpec& mask, const Shape4& scores, std::size_t b,
             std::size_t h, std::size_t q, std::size_t k) {
  const bool decode = mask.kind == MaskKind::kDecode;
  const __int128 p_q = QueryPos(mask, scores, b, q);
  const __int128 p_k = KeyPos(mask, scores, b, k);
  const bool valid = p_k >= 0;
  const bool same_segment =
      mask.q_segment == nullptr || mask.q_segment[b * scores.q_len + q] ==
                                       mask.k_segment[b * scores.k_len + k];
  // listed(q, k), and a full block's keys: valid AND same_segment alone (a
  // -inf bias still masks, as it adds -inf to the score).
  if (!KeyListed(mask, b, h, q, k)) return false;
  const int listed = ListedAs(mask, b, h, q, k);
  if (listed == 0) return false;
  if (listed == 2) {
    return valid && same_segment &&
           bias_at(mask, scores, b, h, q, k) !=
               -std::numeric_limits<float>::infinity();
  }
  const bool has_causal = mask.kind == MaskKind::kCausal ||
                          mask.kind == MaskKind::kSlidingWindow || decode;
  const bool causal = !has_causal || p_k <= p_q;
  const bool prefix = mask.prefix_end != nullptr && p_q < mask.prefix_end[b] &&
                      p_k < mask.prefix_end[b];
  // window_keys W, and the kinds' own window w, which is W = w + 1.
  bool window = mask.window_keys == 0 ||
                p_q - p_k < static_cast<__int128>(mask.window_keys);
  if ((mask.kind == MaskKind::kSlidingWindow || decode) && mask.window != 0) {
    window = window && p_q - p_k < static_cast<__int128>(mask.window) + 1;
  }
  // window_keys_after A: keys less than A positions after the query.
  const bool window_after =
      mask.window_keys_after == 0 ||
      p_k - p_q < static_cast<__int128>(mask.window_keys_after);
  const __int128 c = mask.chunk;
  const bool chunk = c == 0 || FloorDiv(p_k, c) == FloorDiv(p_q, c);
  const bool sink = mask.sink_keys != 0 &&
                    p_k < static_cast<__int128>(mask.sink_keys) && p_k <= p_q;
  const bool base = (causal || prefix) && window && window_after && chunk;
  // A query and a key of the same nonzero group.
  const bool group =
      mask.q_group != nullptr && mask.q_group[b * scores.q_len + q] != 0 &&
      mask.q_group[b * scores.q_len + q] == mask.k_group[b * scores.k_len + k];
  bool dense = true;
  switch (mask.dense_part()) {
    case DenseKind::kNone:
      break;
    case DenseKind::kKeepF32:
      dense = static_cast<const float*>(
                  mask.data)[Offset(mask.shape, mask.strides, b, h, q, k)] >=
              0.5f;  // NaN: masked
      break;
    case DenseKind::kKeepU8:
      dense = static_cast<const std::uint8_t*>(
                  mask.data)[Offset(mask.shape, mask.strides, b, h, q, k)] != 0;
      break;
    case DenseKind::kKeepBits: {
      // Word k / 64 of the row (strides count words), bit k % 64.
      const std::uint64_t word = static_cast<const std::uint64_t*>(
          mask.data)[Offset(mask.shape, mask.strides, b, h, q, 0) + k / 64];
      dense = ((word >> (k % 64)) & 1) != 0;
      break;
    }
    case DenseKind::kBias:
      dense = bias_at(mask, scores, b, h, q, k) !=
              -std::numeric_limits<float>::infinity();
      break;
  }
  return valid && same_segment && (base || sink || group) && dense;
}

bool is_listed(const MaskSpec& mask, std::size_t b, std::size_t h,
               std::size_t q, std::size_t k) {
  return KeyListed(mask, b, h, q, k) && ListedAs(mask, b, h, q, k) != 0;
}

float bias_at(const MaskSpec& mask, const Shape4& scores, std::size_t b,
              std::size_t h, std::size_t q, std::size_t k) {
  (void)scores;
  if (mask.dense_part() != DenseKind::kBias) return 0.0f;
  return static_cast<const float*>(
      mask.data)[Offset(mask.shape, mask.strides, b, h, q, k)];
}

void apply_mask(const ScoreView& scores, const MaskSpec& mask, RowRange rows,
                float fill) {
  const Shape4& s = scores.shape;
  // A key the rules mask gets the fill; one they keep gets its bias added
  // (a -inf bias gives -inf).
  const bool has_bias = mask.dense_part() == DenseKind::kBias;
  MaskSpec rules = mask;
  if (has_bias) {
    if (rules.kind == MaskKind::kBias) rules.kind = MaskKind::kNone;
    rules.dense = DenseKind::kNone;
  }
  for (std::size_t r = rows.begin; r < rows.end; ++r) {
    const std::size_t b = r / (s.heads * s.q_len), h = (r / s.q_len) % s.heads,
                      q = r % s.q_len;
    for (std::size_t k = 0; k < s.k_len; ++k) {
      const std::size_t off = Offset(s, scores.strides, b, h, q, k);
      if (!is_kept(rules, s, b, h, q, k)) {
        StoreFill(scores, off, fill);
      } else if (has_bias) {
        // A -inf bias masks the key whatever the score (no inf - inf NaN).
        const float bias = bias_at(mask, s, b, h, q, k);
        Store(scores, off,
              bias == -std::numeric_limits<float>::infinity()
                  ? bias
                  : static_cast<float>(element_at(scores, off)) + bias);
      }
    }
  }
}

double alibi_at(const MaskSpec& mask, const Shape4& scores,
                const SoftmaxOptions& options, std::size_t b, std::size_t h,
                std::size_t q, std::size_t k) {
  if (options.alibi_slopes == nullptr) return 0.0;
  const __int128 d = QueryPos(mask, scores, b, q) - KeyPos(mask, scores, b, k);
  const double distance = static_cast<double>(d < 0 ? -d : d);
  return -static_cast<double>(options.alibi_slopes[h]) * distance;
}

// docs/SEMANTICS.md, "Softmax extensions": z = softcap(scale * s) + ALiBi +
// bias over the kept keys; M = max(max_k z_k, sink); p_k = exp(z_k - M) /
// (sum_k exp(z_k - M) + exp(sink - M)); lse = M + log(denominator).
void masked_softmax(const ScoreView& in, const ScoreView& out,
                    const MaskSpec& mask, const SoftmaxOptions& options,
                    RowRange rows) {
  const Shape4& s = in.shape;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> t(s.k_len);
  std::vector<bool> kept(s.k_len);
  for (std::size_t r = rows.begin; r < rows.end; ++r) {
    const std::size_t b = r / (s.heads * s.q_len), h = (r / s.q_len) % s.heads,
                      q = r % s.q_len;
    double max = -kInf;
    bool any_nan = false;
    for (std::size_t k = 0; k < s.k_len; ++k) {
      double x = element_at(in, Offset(s, in.strides, b, h, q, k));
      // The kernel computes scale * x in f32; the oracle does too, so the
      // bound below measures the exp and the sum, not this rounding.
      x = static_cast<float>(x * options.scale);
      if (options.softcap > 0.0f) {
        x = options.softcap * std::tanh(x / options.softcap);
      }
      x += alibi_at(mask, s, options, b, h, q, k);
      x += bias_at(mask, s, b, h, q, k);
      kept[k] = is_kept(mask, s, b, h, q, k);
      t[k] = x;
      if (kept[k]) {
        if (std::isnan(x)) any_nan = true;
        max = std::max(max, x);
      }
    }
    // No kept key (or every kept score -inf): zeros, sinks or not.
    const bool fully_masked = max == -kInf;
    const double sink =
        options.sink_logits != nullptr ? options.sink_logits[h] : -kInf;
    const double m = std::max(max, sink);
    double sum = 0.0;
    for (std::size_t k = 0; k < s.k_len; ++k) {
      t[k] = (kept[k] && !fully_masked) ? std::exp(t[k] - m) : 0.0;
      sum += t[k];
    }
    if (!fully_masked && sink != -kInf) sum += std::exp(sink - m);
    for (std::size_t k = 0; k < s.k_len; ++k) {
      // A kept NaN makes the whole row NaN (its kept keys), even when every
      // other kept score is -inf.
      double p = 0.0;
      if (kept[k] && any_nan) {
        p = std::numeric_limits<double>::quiet_NaN();
      } else if (kept[k] && !fully_masked) {
        p = t[k] / sum;
      }
      if (kept[k] || options.zero_masked) {
        Store(out, Offset(s, out.strides, b, h, q, k), p);
      }
    }
    if (options.row_lse != nullptr) {
      options.row_lse[r] = any_nan ? std::numeric_limits<float>::quiet_NaN()
                           : fully_masked
                               ? -std::numeric_limits<float>::infinity()
                               : static_cast<float>(m + std::log(sum));
    }
  }
}

}  // namespace rlx::reference
