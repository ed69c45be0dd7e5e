// SPDX-License-Identifier: MIT OR Apache-2.0
// libFuzzer target: decodes a shape, strides, a mask kind drawn from the one
// list (src/mask/mask_kind_list.h) with its parameters, any combination of the
// rules (query offsets, window_keys, chunk, sinks, prefix, segments,
// explicit positions with empty slots, a dense part of every dense kind on
// top, two-sided windows, groups), softmax options and score values from the
// input, then runs apply_mask, masked_softmax and kept_keys on every supported
// target and compares each with the scalar oracle (tests/common/score_check.h).
// Also feeds bad arguments, among them extents and strides whose element count
// or byte span exceeds PTRDIFF_MAX (no such tensor exists; offsets into it
// would wrap), and checks they throw std::invalid_argument and touch no memory:
// nothing is written, and a read far outside the buffer would fault under the
// sanitizers. Any mismatch aborts with a description. Built with clang
// (-fsanitize=fuzzer) when RLX_ATTN_MASK_FUZZ is ON.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/targets.h"
#include "src/mask/mask_field_list.h"
#include "src/mask/mask_kind_list.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using testing::MakeTensor;
using testing::SameViewIn;
using testing::Tensor;

// NaNs whose payloads a conversion to bf16 or f16 could mangle: signalling
// and quiet, both signs, low payload bits set (rounding them as numbers
// carries into the exponent or past the sign).
float NaNOf(std::uint32_t which) {
  const std::uint32_t bits[] = {0x7F800001u, 0x7FBFFFFFu, 0x7FFFFFFFu,
                                0xFFFFFFFFu};
  float f;
  std::memcpy(&f, &bits[which % 4], sizeof(f));
  return f;
}

// Reads the fuzzer's bytes; past the end it reads zeros, so every input
// decodes to some case.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size)
      : data_(data), size_(size) {}
  std::uint32_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [0, n).
  std::size_t Pick(std::size_t n) {
    const std::uint32_t v = Byte() | (Byte() << 8);
    return n == 0 ? 0 : v % n;
  }
  bool Bit() { return Byte() & 1; }
  float Score() {
    const std::uint32_t tag = Byte();
    if (tag == 255) {
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                3.0e38f,
                                -3.0e38f,
                                0.0f,
                                -0.0f,
                                1e-40f};
      // The quiet NaN, or (3 in 4) one of NaNOf's.
      const std::uint32_t pick = Byte();
      if (pick % 8 == 0 && (pick >> 3) % 4 != 0) return NaNOf(pick >> 3);
      return specials[pick % 8];
    }
    const std::int16_t v = static_cast<std::int16_t>(Byte() | (Byte() << 8));
    return v / 1024.0f;  // [-32, 32)
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

struct Case {
  ScoreType type;
  Shape4 shape;
  std::size_t gap, misalign;
  MaskSpec mask;
  SoftmaxOptions options;
  float fill;
  // What the mask points to.
  std::vector<float> dense;            // keep_f32 / bias values
  std::vector<std::uint8_t> dense_u8;  // keep_u8 values
  std::vector<std::uint64_t> bits;     // keep_bits words
  std::vector<std::int64_t> offsets, prefix_end, q_position, k_position;
  std::vector<std::int32_t> q_segment, k_segment;
  // The block list's num_blocks, indices and the full pair.
  std::vector<std::int32_t> block_num, block_indices, block_full_num,
      block_full_indices;
  std::vector<std::int32_t> q_group, k_group;
  std::vector<std::int32_t> key_indices;  // a key list's slots
  std::vector<float> sinks, slopes;       // options.sink_logits / alibi_slopes
  bool row_lse = false;                   // whether options.row_lse is checked
  std::vector<float> scores;              // contiguous [b, h, q, k]
  bool rounding_scores = false;           // the pattern of Decode's last byte
};

// A broadcast of the dense part `mask` (whose data has the extents of
// mask.shape) given instead by zero strides at the scores' extents, on
// every broadcast axis, when k_len % 3 == 0: a third of the cases, chosen
// from what was drawn already, so that the corpus's inputs decode as before.
void BroadcastByZeroStrides(const Case& c, bool bits, MaskSpec& mask) {
  if (c.shape.k_len % 3 != 0) return;
  Shape4& m = mask.shape;
  const std::size_t row = bits ? (m.k_len + 63) / 64 : m.k_len;
  Strides3 s{m.heads * m.q_len * row, m.q_len * row, row};
  if (m.batch == 1) {
    s.batch = 0;
    m.batch = c.shape.batch;
  }
  if (m.heads == 1) {
    s.head = 0;
    m.heads = c.shape.heads;
  }
  if (m.q_len == 1) {
    s.row = 0;
    m.q_len = c.shape.q_len;
  }
  mask.strides = s;
}

// The values of a dense part of kind `dense` and extents `m`, and c.mask
// with it (DrawDense).
void DrawDenseValues(Reader& r, Case& c, DenseKind dense, bool as_kind,
                     const Shape4& m) {
  const std::size_t rows = m.batch * m.heads * m.q_len;
  const std::size_t n = rows * m.k_len;
  switch (dense) {
    case DenseKind::kNone:
      return;
    case DenseKind::kKeepF32: {
      const float values[] = {0.0f,
                              1.0f,
                              0.5f,
                              0.49999997f,
                              std::numeric_limits<float>::quiet_NaN(),
                              -3.0f,
                              2.0f,
                              1.0f};
      for (std::size_t i = 0; i < n; ++i)
        c.dense.push_back(values[r.Byte() % 8]);
      c.mask = as_kind ? MaskSpec::keep(c.dense.data(), m)
                       : c.mask.with_keep(c.dense.data(), m);
      return;
    }
    case DenseKind::kKeepU8:
      for (std::size_t i = 0; i < n; ++i) {
        c.dense_u8.push_back(r.Bit() ? static_cast<std::uint8_t>(r.Byte()) : 0);
      }
      c.mask = as_kind ? MaskSpec::keep(c.dense_u8.data(), m)
                       : c.mask.with_keep(c.dense_u8.data(), m);
      return;
    case DenseKind::kKeepBits: {
      // Words of random bytes, or all ones / all zeros; bits past k_len are
      // set too (they must be ignored).
      const std::size_t words = (m.k_len + 63) / 64;
      for (std::size_t i = 0; i < rows * words; ++i) {
        const std::uint32_t tag = r.Byte() % 4;
        std::uint64_t w = tag == 0 ? 0 : ~std::uint64_t{0};
        if (tag >= 2) {
          for (int byte = 0; byte < 8; ++byte) {
            w = (w << 8) | r.Byte();
          }
        }
        c.bits.push_back(w);
      }
      c.mask = as_kind ? MaskSpec::keep_bits(c.bits.data(), m)
                       : c.mask.with_keep_bits(c.bits.data(), m);
      return;
    }
    case DenseKind::kBias:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t b = r.Byte();
        c.dense.push_back(b % 5 == 0 ? -std::numeric_limits<float>::infinity()
                          : b == 1   ? NaNOf(static_cast<std::uint32_t>(i))
                                     : (static_cast<float>(b) - 128) / 16);
      }
      c.mask = as_kind ? MaskSpec::bias(c.dense.data(), m)
                       : c.mask.with_bias(c.dense.data(), m);
      return;
  }
}

// Sets a dense part of kind `dense` (any but kNone) with values drawn from
// `r`: the mask's own kind when `as_kind`, else on top of c.mask's rules.
// Each of batch, heads and q is the scores' extent or 1 (broadcast), or the
// same broadcast by a zero stride (BroadcastByZeroStrides).
void DrawDense(Reader& r, Case& c, DenseKind dense, bool as_kind) {
  const Shape4 m{r.Bit() ? c.shape.batch : 1, r.Bit() ? c.shape.heads : 1,
                 r.Bit() ? c.shape.q_len : 1, c.shape.k_len};
  DrawDenseValues(r, c, dense, as_kind, m);
  BroadcastByZeroStrides(c, dense == DenseKind::kKeepBits, c.mask);
}

// A logical position near the keys: [-3, k_len + 3).
std::int64_t Position(Reader& r, std::size_t k_len) {
  return static_cast<std::int64_t>(r.Pick(k_len + 6)) - 3;
}

// The flag bit that draws each field of the list (src/mask/mask_field_list.h),
// 0 for the fields the kind or the dense part draws: a field added to the
// list fails to compile here (-Werror=switch) until the fuzzer draws it.
constexpr std::uint32_t FlagOf(fields::MaskField f) {
  using F = fields::MaskField;
  switch (f) {
    case F::kind:
    case F::window:
    case F::past:
    case F::upper:
    case F::data:
    case F::shape:
    case F::strides:
      return 0;
    case F::query_offsets:
      return 1;
    case F::window_keys:
      return 2;
    case F::chunk:
      return 4;
    case F::sink_keys:
      return 8;
    case F::prefix_end:
      return 16;
    case F::q_segment:
    case F::k_segment:
      return 32;
    case F::q_position:
    case F::k_position:
      return 64;
    case F::dense:
      return 128;
    // The second rule byte (MoreRules), drawn last: bit i is 256 << i.
    case F::window_keys_after:
      return 256;
    case F::q_group:
    case F::k_group:
      return 512;
    // Bit 0 of the byte after the rounding scores' in Decode (inputs that
    // end before it decode as before; a quarter of the committed corpus has
    // bytes there and draws a list).
    case F::key_indices:
    case F::key_indices_shape:
      return 2048;
    case F::block_list:
      return 1024;
  }
  return 0;
}
constexpr bool EveryRuleFieldHasAFlag() {
  for (const fields::MaskField f : fields::kAllMaskFields) {
    if (fields::IsRuleField(f) && FlagOf(f) == 0) return false;
  }
  return true;
}
static_assert(
    EveryRuleFieldHasAFlag(),
    "a rule field of src/mask/mask_field_list.h the fuzzer does not draw");

// A block list over c's shape: q_block and k_block, batch and heads (each 1
// or the extent), then for each query block row each key block unlisted,
// partial or full (ascending or descending); the full pair null in a
// quarter of the lists.
void DrawBlockList(Reader& r, Case& c) {
  const Shape4& s = c.shape;
  BlockList l;
  l.q_block = 1 + r.Pick(s.q_len + 1);
  l.k_block = 1 + r.Pick(r.Bit() ? s.k_len + 1 : 8);
  l.batch = r.Bit() ? s.batch : 1;
  l.heads = r.Bit() ? s.heads : 1;
  l.q_blocks = (s.q_len + l.q_block - 1) / l.q_block;
  const std::size_t k_blocks = (s.k_len + l.k_block - 1) / l.k_block;
  l.max_blocks = k_blocks + r.Pick(2);
  const bool with_full = r.Pick(4) != 0;
  const bool descending = r.Bit();
  const std::size_t rows = l.batch * l.heads * l.q_blocks;
  c.block_num.assign(rows, 0);
  c.block_full_num.assign(rows, 0);
  c.block_indices.assign(rows * l.max_blocks, -1);
  c.block_full_indices.assign(rows * l.max_blocks, -1);
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t e = 0; e < k_blocks; ++e) {
      const auto j =
          static_cast<std::int32_t>(descending ? k_blocks - 1 - e : e);
      const std::uint32_t how = r.Byte() % 3;  // unlisted, partial, full
      if (how == 2 && with_full) {
        c.block_full_indices[row * l.max_blocks + c.block_full_num[row]++] = j;
      } else if (how != 0) {
        c.block_indices[row * l.max_blocks + c.block_num[row]++] = j;
      }
    }
  }
  l.num_blocks = c.block_num.data();
  l.indices = c.block_indices.data();
  if (with_full) {
    l.full_num_blocks = c.block_full_num.data();
    l.full_indices = c.block_full_indices.data();
  }
  c.mask = c.mask.with_block_list(l);
}

// The rules of the second rule byte, drawn after everything else, the row
// split included (inputs written before they existed decode as before up
// to their split; only trailing bytes beyond it, unread then, can draw
// them now): bit 0 a two-sided window's window_keys_after, bit 1 groups (0
// = no group, about a third of the entries, two groups otherwise), bit 2 a
// block list (DrawBlockList).
void MoreRules(Reader& r, Case& c) {
  const std::uint32_t more = r.Byte();
  const std::size_t k_len = c.shape.k_len;
  if (more & 1) {
    c.mask = c.mask.with_window_keys_after(1 + r.Pick(k_len + 2));
  }
  if (more & 2) {
    for (std::size_t i = 0; i < c.shape.batch * c.shape.q_len; ++i) {
      c.q_group.push_back(static_cast<std::int32_t>(r.Pick(3)));
    }
    for (std::size_t i = 0; i < c.shape.batch * k_len; ++i) {
      c.k_group.push_back(static_cast<std::int32_t>(r.Pick(3)));
    }
    c.mask = c.mask.with_groups(c.q_group.data(), c.k_group.data());
  }
  // A mask has at most one list part: no block list on a key list.
  if ((more & 4) && c.key_indices.empty()) DrawBlockList(r, c);
}

Case Decode(Reader& r) {
  Case c;
  c.type = static_cast<ScoreType>(r.Pick(3));
  // Every kind of the one list (src/mask/mask_kind_list.h), never a hard-coded
  // count; the switch below has no default, so -Werror=switch fails
  // the build on a new kind.
  const MaskKind kind = kinds::kAllMaskKinds[r.Pick(kinds::kMaskKindCount)];
  c.shape = {1 + r.Pick(3), 1 + r.Pick(3), 1 + r.Pick(4), 1 + r.Pick(80)};
  if (r.Byte() == 0x80) c.shape.k_len += r.Pick(2000);  // sometimes long
  c.gap = r.Pick(3);
  c.misalign = r.Pick(4);
  const std::size_t k_len = c.shape.k_len;
  switch (kind) {
    case MaskKind::kNone:
      c.mask = MaskSpec::none();
      break;
    case MaskKind::kCausal:
      c.mask = MaskSpec::causal();
      break;
    case MaskKind::kSlidingWindow:
      c.mask = MaskSpec::sliding_window(r.Pick(k_len + 3));
      break;
    case MaskKind::kDecode:
      c.mask = MaskSpec::decode(r.Pick(k_len), k_len - 1, r.Pick(k_len + 2));
      break;
    case MaskKind::kKeepF32:
    case MaskKind::kKeepU8:
    case MaskKind::kBias:
    case MaskKind::kKeepBits:
      DrawDense(r, c, MaskSpec::dense_kind_of(kind), /*as_kind=*/true);
      break;
  }
  // The rules, each present or not, on every kind. One flag byte: bit i
  // draws rule i (FlagOf says which field each bit draws).
  const std::uint32_t rules = r.Byte();
  if (rules & 1) {
    for (std::size_t b = 0; b < c.shape.batch; ++b) {
      c.offsets.push_back(static_cast<std::int64_t>(r.Pick(k_len + 12)) - 6);
    }
    c.mask = c.mask.with_query_offsets(c.offsets.data());
  }
  if (rules & 2) c.mask = c.mask.with_window_keys(1 + r.Pick(k_len + 2));
  if (rules & 4) c.mask = c.mask.with_chunk(1 + r.Pick(k_len + 2));
  if (rules & 8) c.mask = c.mask.with_sink_keys(1 + r.Pick(5));
  if (rules & 16) {
    for (std::size_t b = 0; b < c.shape.batch; ++b) {
      c.prefix_end.push_back(Position(r, k_len));
    }
    c.mask = c.mask.with_prefix(c.prefix_end.data());
  }
  if (rules & 32) {
    for (std::size_t i = 0; i < c.shape.batch * c.shape.q_len; ++i) {
      c.q_segment.push_back(static_cast<std::int32_t>(r.Pick(3)));
    }
    for (std::size_t i = 0; i < c.shape.batch * k_len; ++i) {
      c.k_segment.push_back(static_cast<std::int32_t>(r.Pick(3)));
    }
    c.mask = c.mask.with_segments(c.q_segment.data(), c.k_segment.data());
  }
  if (rules & 64) {  // explicit positions: q, k or both
    const std::uint32_t sides = 1 + r.Pick(3);
    if (sides & 1) {
      for (std::size_t i = 0; i < c.shape.batch * c.shape.q_len; ++i) {
        c.q_position.push_back(Position(r, k_len));
      }
    }
    if (sides & 2) {
      for (std::size_t i = 0; i < c.shape.batch * k_len; ++i) {
        // Empty slots (-1) about one in eight.
        c.k_position.push_back(r.Pick(8) == 0 ? -1 : Position(r, k_len) + 3);
      }
    }
    c.mask = c.mask.with_positions(
        c.q_position.empty() ? nullptr : c.q_position.data(),
        c.k_position.empty() ? nullptr : c.k_position.data());
  }
  if ((rules & 128) && MaskSpec::dense_kind_of(kind) == DenseKind::kNone) {
    // A dense part of any listed kind on top of the structured kind.
    DrawDense(r, c, kinds::kAllDenseKinds[r.Pick(kinds::kDenseKindCount)],
              /*as_kind=*/false);
  }
  const float scales[] = {1.0f, 0.125f, -1.0f, 3.5f};
  const float softcaps[] = {0.0f, 0.0f, 5.0f, 30.0f};
  c.options.scale = scales[r.Pick(4)];
  c.options.softcap = softcaps[r.Pick(4)];
  // -1e9 or -inf by the low bit; one byte in 8 a NaN of NaNOf's instead.
  const std::uint32_t fill = r.Byte();
  c.fill = (fill & 1) ? -1e9f : -std::numeric_limits<float>::infinity();
  if ((fill >> 1) % 8 == 7) c.fill = NaNOf(fill >> 4);
  const std::size_t n = c.shape.rows() * k_len;
  for (std::size_t i = 0; i < n; ++i) c.scores.push_back(r.Score());
  // The other softmax options, each present or not (one flag byte, drawn
  // last: inputs written before they existed decode as before, without
  // them).
  const std::uint32_t extras = r.Byte();
  if (extras & 1) {  // a sink logit per head; -inf is "no sink"
    const float sinks[] = {-std::numeric_limits<float>::infinity(),
                           0.0f,
                           2.5f,
                           -3.0f,
                           30.0f,
                           -1e30f};
    for (std::size_t h = 0; h < c.shape.heads; ++h) {
      c.sinks.push_back(sinks[r.Pick(6)]);
    }
    c.options.sink_logits = c.sinks.data();
  }
  if (extras & 2) {  // ALiBi slopes per head, negative and 0 included
    const float slopes[] = {0.0f, 0.5f, 1.0f / 256, 2.0f, -0.25f, 8.0f};
    for (std::size_t h = 0; h < c.shape.heads; ++h) {
      c.slopes.push_back(slopes[r.Pick(6)]);
    }
    c.options.alibi_slopes = c.slopes.data();
  }
  c.options.zero_masked = !(extras & 4);
  c.row_lse = (extras & 8) != 0;
  // Scores that test the sums' rounding, when the byte after the options
  // is kRoundingScores (one value: few inputs written before it existed
  // have it there, so nearly all decode as before) and the next gives a
  // stride from 2 to 129. Keys one in `stride` get the transformed score 0,
  // every other key one whose exp is 0.9 * 2^-24 of that, below half an
  // ulp of 1. An f32 lane sum that holds a 1 drops each one added after
  // it, so a sum of more than a few values a lane before its widening into
  // f64 (docs/KERNELS.md) shows as a row that misses 1 by over 1e-6.
  constexpr std::uint32_t kRoundingScores = 0x5C;
  if (r.Byte() == kRoundingScores) {
    const std::size_t stride = 2 + r.Byte() % 128;
    const float tiny = std::log(0.9f * std::ldexp(1.0f, -24));
    for (std::size_t i = 0; i < n; ++i) {
      c.scores[i] = (i % k_len) % stride == 0 ? 0.0f : tiny / c.options.scale;
    }
    c.rounding_scores = true;
  }
  // A key list (flag 2048 of FlagOf): extents of the scores or 1, n from 0
  // to past k_len, -1 slots and repeats; one slot more than used, so that
  // the pointer is never null.
  if (r.Byte() & 1) {
    const Shape4 ls{r.Bit() ? c.shape.batch : 1, r.Bit() ? c.shape.heads : 1,
                    r.Bit() ? c.shape.q_len : 1, r.Pick(k_len + 5)};
    c.key_indices.resize(ls.batch * ls.heads * ls.q_len * ls.k_len + 1);
    for (auto& v : c.key_indices) {
      v = static_cast<std::int32_t>(r.Pick(k_len + 1)) - 1;
    }
    c.mask = c.mask.with_key_indices(c.key_indices.data(), ls);
  }
  return c;
}

template <class T>
void PrintArray(const char* name, const std::vector<T>& values) {
  if (values.empty()) return;
  std::fprintf(stderr, "\n  %s:", name);
  for (std::size_t i = 0; i < values.size() && i < 64; ++i) {
    std::fprintf(stderr, " %lld", static_cast<long long>(values[i]));
  }
}

void PrintFloats(const char* name, const std::vector<float>& values) {
  if (values.empty()) return;
  std::fprintf(stderr, "\n  %s:", name);
  for (const float v : values) std::fprintf(stderr, " %g", v);
}

[[noreturn]] void Fail(const Case& c, const std::string& what) {
  const Shape4& s = c.shape;
  const MaskSpec& mk = c.mask;
  std::fprintf(stderr,
               "score_kernels_fuzzer: %s (target %s)\n  type %s shape [%zu, "
               "%zu, %zu, %zu] gap %zu misalign %zu kind %s window %zu past "
               "%zu upper %zu window_keys %zu window_keys_after %zu chunk %zu "
               "sink_keys %zu dense %s scale %g softcap %g fill %g zero_masked "
               "%d row_lse %d\n"
               "  scores:",
               what.c_str(), active_target().c_str(), testing::TypeName(c.type),
               s.batch, s.heads, s.q_len, s.k_len, c.gap, c.misalign,
               kinds::NameOf(mk.kind), mk.window, mk.past, mk.upper,
               mk.window_keys, mk.window_keys_after, mk.chunk, mk.sink_keys,
               kinds::NameOf(mk.dense), c.options.scale, c.options.softcap,
               c.fill, c.options.zero_masked, c.row_lse);
  for (std::size_t i = 0; i < c.scores.size() && i < 64; ++i) {
    std::fprintf(stderr, " %g", c.scores[i]);
  }
  PrintFloats("sink_logits", c.sinks);
  PrintFloats("alibi_slopes", c.slopes);
  PrintArray("query_offsets", c.offsets);
  PrintArray("prefix_end", c.prefix_end);
  PrintArray("q_segment", c.q_segment);
  PrintArray("k_segment", c.k_segment);
  PrintArray("q_group", c.q_group);
  PrintArray("k_group", c.k_group);
  PrintArray("q_position", c.q_position);
  PrintArray("k_position", c.k_position);
  if (c.mask.key_indices != nullptr) {
    const Shape4& ls = c.mask.key_indices_shape;
    std::fprintf(stderr, "\n  key_indices shape [%zu, %zu, %zu, %zu]", ls.batch,
                 ls.heads, ls.q_len, ls.k_len);
  }
  PrintArray("key_indices", c.key_indices);
  if (!c.block_num.empty()) {
    const BlockList& l = c.mask.block_list;
    std::fprintf(stderr,
                 "\n  block list q_block %zu k_block %zu batch %zu heads %zu "
                 "max_blocks %zu",
                 l.q_block, l.k_block, l.batch, l.heads, l.max_blocks);
  }
  PrintArray("block num_blocks", c.block_num);
  PrintArray("block indices", c.block_indices);
  PrintArray("block full_num_blocks", c.block_full_num);
  PrintArray("block full_indices", c.block_full_indices);
  const Shape4& m = mk.shape;
  std::fprintf(stderr,
               "\n  dense [%zu, %zu, %zu, %zu] strides {%zu, %zu, %zu}:",
               m.batch, m.heads, m.q_len, m.k_len, mk.strides.batch,
               mk.strides.head, mk.strides.row);
  for (std::size_t i = 0; i < c.dense.size() && i < 64; ++i) {
    std::fprintf(stderr, " %g", c.dense[i]);
  }
  for (std::size_t i = 0; i < c.dense_u8.size() && i < 64; ++i) {
    std::fprintf(stderr, " %u", c.dense_u8[i]);
  }
  for (std::size_t i = 0; i < c.bits.size() && i < 16; ++i) {
    std::fprintf(stderr, " %016llx",
                 static_cast<unsigned long long>(c.bits[i]));
  }
  std::fprintf(stderr, "\n");
  std::abort();
}

Tensor ScoresOf(const Case& c) {
  Tensor t = MakeTensor(c.type, c.shape, c.gap, c.misalign);
  const Shape4& s = c.shape;
  std::size_t i = 0;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                       c.scores[i++]);
        }
  return t;
}

// Whether kept_keys is exact for `mask`: implicit key positions, no
// segments and no dense part (docs/SEMANTICS.md, "Kept keys"; rlx/scores.h
// KeptKeys), in rows without a group (RowInAGroup).
bool KeptKeysExact(const MaskSpec& mask) {
  // A key list's or a block list's kept_keys is a cover: unlisted keys lie
  // inside it.
  return mask.block_list.num_blocks == nullptr && mask.k_position == nullptr &&
         mask.q_segment == nullptr && mask.dense == DenseKind::kNone &&
         mask.key_indices == nullptr &&
         MaskSpec::dense_kind_of(mask.kind) == DenseKind::kNone;
}

// Whether row (b, q) is in a nonzero group: its kept_keys then cover its
// group's keys too, not exactly its kept ones.
bool RowInAGroup(const MaskSpec& mask, const Shape4& s, std::size_t b,
                 std::size_t q) {
  return mask.q_group != nullptr && mask.q_group[b * s.q_len + q] != 0;
}

// kept_keys of every row against the oracle: sorted, disjoint, non-empty
// intervals inside the row holding every kept key (of every head), and
// nothing else where they are exact.
void CheckKeptKeys(const Case& c) {
  const Shape4& s = c.shape;
  const bool exact = KeptKeysExact(c.mask);
  std::vector<bool> in(s.k_len);
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t q = 0; q < s.q_len; ++q) {
      const KeptKeys kept = kept_keys(c.mask, b, q, s.q_len, s.k_len);
      const std::string row =
          "kept_keys row (" + std::to_string(b) + "," + std::to_string(q) + ")";
      if (kept.count > KeptKeys::kMaxIntervals) Fail(c, row + ": count");
      std::fill(in.begin(), in.end(), false);
      for (std::size_t i = 0; i < kept.count; ++i) {
        const KeyInterval& iv = kept.intervals[i];
        if (iv.begin >= iv.end || iv.end > s.k_len ||
            (i > 0 && kept.intervals[i - 1].end >= iv.begin)) {
          Fail(c, row + ": interval " + std::to_string(i) + " is [" +
                      std::to_string(iv.begin) + ", " + std::to_string(iv.end) +
                      ")");
        }
        for (std::size_t k = iv.begin; k < iv.end; ++k) in[k] = true;
      }
      for (std::size_t h = 0; h < s.heads; ++h) {
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const bool kept_here = reference::is_kept(c.mask, s, b, h, q, k);
          if (kept_here && !in[k]) {
            Fail(c, row + ": kept key " + std::to_string(k) +
                        " outside the intervals");
          }
          if (!kept_here && in[k] && exact && !RowInAGroup(c.mask, s, b, q)) {
            Fail(c, row + ": masked key " + std::to_string(k) +
                        " inside exact intervals");
          }
        }
      }
    }
  }
}

// The oracle's results for a case, computed once and compared with every
// target's.
struct Oracle {
  Tensor scores;  // the case's scores (never written)
  std::vector<std::uint8_t> applied_bytes, softmax_bytes;
  ScoreView applied, softmax;  // the same view over the copies
  std::vector<float> lse;
};

Oracle OracleOf(const Case& c) {
  Oracle o{ScoresOf(c), {}, {}, {}, {}, {}};
  const RowRange all = RowRange::all(c.shape);
  o.applied = SameViewIn(o.scores, o.applied_bytes);
  reference::apply_mask(o.applied, c.mask, all, c.fill);
  o.softmax = SameViewIn(o.scores, o.softmax_bytes);
  o.lse.assign(all.end, 7.0f);
  // The oracle zero-fills every masked key; kept-only writes are held to
  // it inside kept_keys and to the scores outside (KeptOnlyUnwritten).
  SoftmaxOptions options = c.options;
  options.zero_masked = true;
  options.row_lse = o.lse.data();
  reference::masked_softmax(o.scores.view, o.softmax, c.mask, options, all);
  return o;
}

void CheckOneTarget(const Case& c, const Oracle& want, std::size_t split) {
  const RowRange all = RowRange::all(c.shape);
  const std::size_t cut = split % (all.end + 1);
  {  // apply_mask: bit-exact, rows split at `cut`.
    Tensor got = ScoresOf(c);
    apply_mask(got.view, c.mask, {0, cut}, c.fill);
    apply_mask(got.view, c.mask, {cut, all.end}, c.fill);
    const std::string mismatch =
        testing::ApplyMismatch(got.view, want.applied, c.mask);
    if (!mismatch.empty()) Fail(c, "apply_mask: " + mismatch);
    const std::string outside = testing::UntouchedOutside(got, got.view);
    if (!outside.empty()) Fail(c, "apply_mask: " + outside);
  }
  {  // masked_softmax in place, rows split at `cut`.
    Tensor got = ScoresOf(c);
    std::vector<float> lse(all.end, 7.0f);
    SoftmaxOptions options = c.options;
    if (c.row_lse) options.row_lse = lse.data();
    masked_softmax(got.view, c.mask, options, {0, cut});
    masked_softmax(got.view, c.mask, options, {cut, all.end});
    const ScoreView& before = want.scores.view;
    const std::string mismatch = testing::SoftmaxMismatch(
        before, got.view, want.softmax, c.mask, options,
        c.row_lse ? lse.data() : nullptr, want.lse.data());
    if (!mismatch.empty()) Fail(c, "masked_softmax: " + mismatch);
    if (!options.zero_masked) {
      const std::string wrote =
          testing::KeptOnlyUnwritten(before, got.view, c.mask);
      if (!wrote.empty()) Fail(c, "masked_softmax (kept-only): " + wrote);
    }
    const std::string outside = testing::UntouchedOutside(got, got.view);
    if (!outside.empty()) Fail(c, "masked_softmax: " + outside);
  }
}

constexpr std::size_t kMaxSize = PTRDIFF_MAX;

// A size at or beyond what the library accepts: the extremes of size_t and
// ptrdiff_t, powers of two whose products wrap, or `least` (the smallest
// value that is too large in its place) plus a little.
std::size_t Extreme(Reader& r, std::size_t least) {
  const std::size_t values[] = {least,
                                least + 1 + r.Pick(1000),
                                std::size_t{1} << 61,
                                std::size_t{1} << 62,
                                std::size_t{1} << 63,
                                kMaxSize,
                                kMaxSize + 1,
                                std::numeric_limits<std::size_t>::max()};
  return std::max(least, values[r.Pick(8)]);
}

// The index of an axis (0 batch, 1 heads, 2 q) with an extent above 1, or -1.
int WideAxis(const Shape4& s, Reader& r) {
  const std::size_t extents[] = {s.batch, s.heads, s.q_len};
  const int first = static_cast<int>(r.Pick(3));
  for (int i = 0; i < 3; ++i) {
    const int axis = (first + i) % 3;
    if (extents[axis] > 1) return axis;
  }
  return -1;
}

std::size_t& Extent(Shape4& s, int axis) {
  return axis == 0 ? s.batch : axis == 1 ? s.heads : s.q_len;
}

std::size_t& Stride(Strides3& s, int axis) {
  return axis == 0 ? s.batch : axis == 1 ? s.head : s.row;
}

// The smallest stride on an axis of `extent` (> 1) that puts the last
// element of a tensor of `elem_size`-byte elements beyond byte PTRDIFF_MAX.
std::size_t LeastFarStride(std::size_t extent, std::size_t elem_size) {
  return kMaxSize / elem_size / (extent - 1) + 1;
}

// A view or dense mask of the case made impossible: an extent, or an
// axis's stride, so large that its element count or last byte offset
// exceeds PTRDIFF_MAX. Returns false when the case has no axis for it.
bool MakeImpossible(const Case& c, Reader& r, ScoreView& v, MaskSpec& mask,
                    std::vector<float>& mask_values) {
  const std::size_t elem = testing::ElemSize(c.type);
  switch (r.Pick(3)) {
    case 0: {  // an extent: k_len alone, or one whose product wraps
      const int axis = static_cast<int>(r.Pick(4));
      std::size_t& extent = axis == 3 ? v.shape.k_len : Extent(v.shape, axis);
      extent = Extreme(r, kMaxSize / elem + 1);
      return true;
    }
    case 1: {  // a stride of the scores
      const int axis = WideAxis(v.shape, r);
      if (axis < 0) return false;
      Stride(v.strides, axis) =
          Extreme(r, LeastFarStride(Extent(v.shape, axis), elem));
      return true;
    }
    default: {  // a dense f32 mask's stride over valid scores
      const int axis = WideAxis(v.shape, r);
      if (axis < 0) return false;
      Shape4 m{1, 1, 1, v.shape.k_len};
      Extent(m, axis) = Extent(v.shape, axis);
      mask_values.assign(16, 1.0f);  // never read: the mask is rejected
      mask = MaskSpec::keep(mask_values.data(), m);
      Stride(mask.strides, axis) =
          Extreme(r, LeastFarStride(Extent(m, axis), sizeof(float)));
      return true;
    }
  }
}

// A corrupted copy of the case must be rejected without writing.
void CheckRejected(const Case& c, Reader& r) {
  Tensor t = ScoresOf(c);
  const std::vector<std::uint8_t> before = t.bytes;
  ScoreView v = t.view;
  MaskSpec mask = c.mask;
  RowRange rows = RowRange::all(c.shape);
  std::vector<float> mask_values;
  switch (r.Pick(6)) {
    case 0:
      v.shape.k_len = 0;
      break;
    case 1:
      v.strides.row = c.shape.k_len - 1;
      v.shape.q_len = 2;
      break;
    case 2:
      rows.end = c.shape.rows() + 1 + r.Pick(3);
      break;
    case 3:
      mask = MaskSpec::decode(c.shape.k_len, c.shape.k_len - 1);
      break;
    case 4:
      if (MakeImpossible(c, r, v, mask, mask_values)) break;
      [[fallthrough]];
    default:
      v.data = nullptr;
  }
  for (int kernel = 0; kernel < 2; ++kernel) {
    try {
      if (kernel == 0) {
        apply_mask(v, mask, rows);
      } else {
        masked_softmax(v, mask, c.options, rows);
      }
      Fail(c, "bad arguments were accepted");
    } catch (const std::invalid_argument&) {
    }
    if (t.bytes != before) Fail(c, "a rejected call wrote");
  }
  // kept_keys for a row of a tensor that cannot exist.
  try {
    if (r.Bit()) {
      kept_keys(c.mask, 0, 0, 1, Extreme(r, kMaxSize + 1));
    } else {
      kept_keys(c.mask, Extreme(r, kMaxSize), 0, c.shape.q_len, c.shape.k_len);
    }
    Fail(c, "kept_keys accepted a row of more than PTRDIFF_MAX elements");
  } catch (const std::invalid_argument&) {
  }
}

// The corpus census: with RLX_FUZZ_CENSUS set, inputs are only decoded and
// counted by what they draw (row type, kind, dense part, each rule, each
// option); at exit the counts are printed and any feature no input drew
// fails the run. The fuzz leg runs it over the committed corpus (-runs=0),
// so that the corpus keeps a seed for every rule, dense part, option and
// row type however often it is merged.
class Census {
 public:
  // Never destroyed: Report runs from an atexit handler, after the
  // destructors of statics constructed before it was registered.
  static Census& Get() {
    static Census& census = *new Census;
    return census;
  }
  static bool Enabled() { return std::getenv("RLX_FUZZ_CENSUS") != nullptr; }

  void Count(const Case& c) {
    ++inputs_;
    Add(std::string("type ") + testing::TypeName(c.type));
    Add(std::string("kind ") + kinds::NameOf(c.mask.kind));
    if (c.mask.dense != DenseKind::kNone) {
      Add(std::string("dense part ") + kinds::NameOf(c.mask.dense));
    }
    if (c.shape.k_len > 80) Add("k_len > 80");
    if (!c.offsets.empty()) Add("rule query_offsets");
    if (c.mask.window_keys != 0) Add("rule window_keys");
    if (c.mask.chunk != 0) Add("rule chunk");
    if (c.mask.sink_keys != 0) Add("rule sink_keys");
    if (!c.prefix_end.empty()) Add("rule prefix");
    if (!c.q_segment.empty()) Add("rule segments");
    if (!c.q_position.empty()) Add("rule q_position");
    if (!c.k_position.empty()) Add("rule k_position");
    if (!c.key_indices.empty()) Add("rule key_indices");
    if (c.options.scale != 1.0f) Add("option scale");
    if (c.options.scale < 0.0f) Add("option negative scale");
    if (c.options.softcap > 0.0f) Add("option softcap");
    if (std::isnan(c.fill)) {
      Add("NaN fill");
    } else if (c.fill != -std::numeric_limits<float>::infinity()) {
      Add("finite fill");
    }
    if (!c.sinks.empty()) Add("option sink_logits");
    if (!c.slopes.empty()) Add("option alibi_slopes");
    if (!c.options.zero_masked) Add("option zero_masked = false");
    if (c.row_lse) Add("option row_lse");
    if (c.rounding_scores) Add("rounding scores");
    if (!c.block_num.empty()) Add("block list");
    if (c.mask.window_keys_after != 0) Add("rule window_keys_after");
    if (!c.q_group.empty()) Add("rule groups");
  }

  // Prints the counts; exits with 1 if a feature was never drawn.
  void Report() const {
    std::vector<std::string> wanted = {"type f32",
                                       "type bf16",
                                       "type f16",
                                       "k_len > 80",
                                       "rule query_offsets",
                                       "rule window_keys",
                                       "rule chunk",
                                       "rule sink_keys",
                                       "rule prefix",
                                       "rule segments",
                                       "rule q_position",
                                       "rule k_position",
                                       "rule key_indices",
                                       "option scale",
                                       "option negative scale",
                                       "option softcap",
                                       "finite fill",
                                       "NaN fill",
                                       "option sink_logits",
                                       "option alibi_slopes",
                                       "option zero_masked = false",
                                       "option row_lse",
                                       "rounding scores",
                                       "rule window_keys_after",
                                       "rule groups"};
    for (const MaskKind kind : kinds::kAllMaskKinds) {
      wanted.push_back(std::string("kind ") + kinds::NameOf(kind));
    }
    for (const DenseKind dense : kinds::kAllDenseKinds) {
      if (dense == DenseKind::kNone) continue;
      wanted.push_back(std::string("dense part ") + kinds::NameOf(dense));
    }
    std::size_t missing = 0;
    std::fprintf(stderr, "corpus census over %zu inputs:\n", inputs_);
    for (const std::string& feature : wanted) {
      const auto it = counts_.find(feature);
      const std::size_t n = it == counts_.end() ? 0 : it->second;
      std::fprintf(stderr, "  %-28s %zu%s\n", feature.c_str(), n,
                   n == 0 ? "  MISSING" : "");
      missing += n == 0;
    }
    if (missing != 0) {
      std::fprintf(stderr, "corpus census: %zu features without a seed\n",
                   missing);
      std::_Exit(1);
    }
  }

 private:
  void Add(const std::string& name) { ++counts_[name]; }
  std::size_t inputs_ = 0;
  std::map<std::string, std::size_t> counts_;
};

}  // namespace
}  // namespace rlx

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  rlx::Reader r(data, size);
  rlx::Case c = rlx::Decode(r);
  const std::size_t split = r.Pick(64);
  rlx::MoreRules(r, c);
  if (rlx::Census::Enabled()) {
    static const bool report_at_exit =
        std::atexit([] { rlx::Census::Get().Report(); }) == 0;
    (void)report_at_exit;
    rlx::Census::Get().Count(c);
    return 0;
  }
  const rlx::Oracle oracle = rlx::OracleOf(c);
  for (const std::string& target : rlx::supported_targets()) {
    rlx::force_target(target);
    rlx::CheckOneTarget(c, oracle, split);
  }
  rlx::CheckKeptKeys(c);  // scalar: the same on every target
  rlx::force_target("");
  rlx::CheckRejected(c, r);
  return 0;
}
