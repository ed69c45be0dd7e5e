// SPDX-License-Identifier: MIT OR Apache-2.0
// Attention-score views and mask descriptions: what the score kernels
// (rlx/score_kernels.h) read and write. Plain data, no Highway.
//
// Scores are a 4-D tensor [batch, heads, q_len, k_len] of f32, bf16 or f16,
// keys contiguous within a row, rows, heads and batches at element strides.
// Query row q of batch b sits at absolute position
//   abs_q = query_offset(b) + q,  query_offset(b) = k_len - q_len by default
// (decode: q_len = 1, so the one query sits after every key), or an explicit
// per-batch offset (chunked prefill, decode against a cache).
#ifndef RLX_SCORES_H_
#define RLX_SCORES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace rlx {

// 16-bit float storage types, bit-compatible with hwy::bfloat16_t and
// hwy::float16_t (and with Rust's half::bf16 / half::f16).
struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};

enum class ScoreType : std::uint8_t { kF32, kBF16, kF16 };

// The extents of a score tensor (and, with 1 = broadcast, of a dense mask).
struct Shape4 {
  std::size_t batch = 1, heads = 1, q_len = 1, k_len = 1;
  std::size_t rows() const { return batch * heads * q_len; }
};

// Element strides of a 4-D tensor whose last (key) stride is 1.
struct Strides3 {
  std::size_t batch = 0, head = 0, row = 0;
  // The contiguous layout of `shape`.
  static Strides3 contiguous(const Shape4& shape) {
    return {shape.heads * shape.q_len * shape.k_len, shape.q_len * shape.k_len,
            shape.k_len};
  }
};

// A mutable view of attention scores. Requires row >= k_len; rows of a view
// must not overlap (results are unspecified if they do). Pointers need no
// alignment beyond their element type's.
struct ScoreView {
  void* data = nullptr;
  ScoreType type = ScoreType::kF32;
  Shape4 shape;
  Strides3 strides;

  static ScoreView f32(float* data, const Shape4& shape) {
    return {data, ScoreType::kF32, shape, Strides3::contiguous(shape)};
  }
  static ScoreView f32(float* data, const Shape4& shape,
                       const Strides3& strides) {
    return {data, ScoreType::kF32, shape, strides};
  }
  static ScoreView bf16s(bf16* data, const Shape4& shape) {
    return {data, ScoreType::kBF16, shape, Strides3::contiguous(shape)};
  }
  static ScoreView f16s(f16* data, const Shape4& shape) {
    return {data, ScoreType::kF16, shape, Strides3::contiguous(shape)};
  }
};

enum class MaskKind : std::uint8_t {
  kNone,           // every key kept
  kCausal,         // keep k <= abs_q
  kSlidingWindow,  // keep abs_q - window <= k <= abs_q (window 0 = causal)
  kDecode,         // keep [lo, past) and {upper}: the seed's decode mask
  kKeepF32,        // dense keep mask, kept iff m >= 0.5f (NaN: masked)
  kKeepU8,         // dense keep mask, kept iff m != 0
  kBias,           // dense additive f32 bias (-inf masks a key)
};

// How scores are masked. Structured kinds (Causal, SlidingWindow, Decode) are
// computed per row as at most two kept key intervals, never materialised;
// dense kinds (Keep*, Bias) read a tensor whose extents are each either the
// score tensor's or 1 (broadcast; its stride is then ignored), with k_len
// always the scores' k_len. RLX passes keep masks as [batch, 1, 1, k_len].
//
// SlidingWindow(w) keeps the w keys before the query and the query itself
// (w + 1 keys): RLX's convention. llama.cpp, gemma.cpp and ONNX Runtime count
// the query in their window W; pass w = W - 1 for theirs.
struct MaskSpec {
  MaskKind kind = MaskKind::kNone;
  std::size_t window = 0;           // kSlidingWindow, kDecode
  std::size_t past = 0, upper = 0;  // kDecode: requires k_len == upper + 1
  const void* data = nullptr;       // dense kinds
  Shape4 shape;                     // dense kinds: extents, 1 = broadcast
  Strides3 strides;                 // dense kinds: element strides
  // Optional per-batch absolute position of query row 0 (batch entries);
  // nullptr means k_len - q_len for every batch. Used by Causal and
  // SlidingWindow; may be negative (rows before key 0 keep nothing).
  const std::int64_t* query_offsets = nullptr;

  static MaskSpec none() { return {}; }
  static MaskSpec causal() { return of(MaskKind::kCausal); }
  static MaskSpec sliding_window(std::size_t window) {
    MaskSpec m = of(MaskKind::kSlidingWindow);
    m.window = window;
    return m;
  }
  static MaskSpec decode(std::size_t past, std::size_t upper,
                         std::size_t window = 0) {
    MaskSpec m = of(MaskKind::kDecode);
    m.window = window;
    m.past = past;
    m.upper = upper;
    return m;
  }
  // Contiguous dense masks of the given extents (1 = broadcast).
  static MaskSpec keep(const float* m, const Shape4& shape) {
    return dense(MaskKind::kKeepF32, m, shape);
  }
  static MaskSpec keep(const std::uint8_t* m, const Shape4& shape) {
    return dense(MaskKind::kKeepU8, m, shape);
  }
  static MaskSpec bias(const float* b, const Shape4& shape) {
    return dense(MaskKind::kBias, b, shape);
  }
  // Same as above with explicit strides.
  MaskSpec with_strides(const Strides3& s) const {
    MaskSpec copy = *this;
    copy.strides = s;
    return copy;
  }
  MaskSpec with_query_offsets(const std::int64_t* offsets) const {
    MaskSpec copy = *this;
    copy.query_offsets = offsets;
    return copy;
  }

 private:
  static MaskSpec of(MaskKind kind) {
    MaskSpec m;
    m.kind = kind;
    return m;
  }
  static MaskSpec dense(MaskKind kind, const void* data, const Shape4& shape) {
    MaskSpec m = of(kind);
    m.data = data;
    m.shape = shape;
    m.strides = Strides3::contiguous(shape);
    return m;
  }
};

// A half-open interval of key indices.
struct KeyInterval {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
  friend bool operator==(const KeyInterval&, const KeyInterval&) = default;
};

// The keys a row may attend to: at most two sorted, disjoint, non-empty
// intervals (Decode keeps [lo, past) and {upper}); count 0 = fully masked.
struct KeptKeys {
  std::array<KeyInterval, 2> intervals{};
  std::size_t count = 0;
  std::size_t size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i) n += intervals[i].size();
    return n;
  }
  friend bool operator==(const KeptKeys&, const KeptKeys&) = default;
};

// Flattened row indices [begin, end) over batch * heads * q_len, row r being
// (b, h, q) with r = (b * heads + h) * q_len + q.
struct RowRange {
  std::size_t begin = 0, end = 0;
  static RowRange all(const Shape4& shape) { return {0, shape.rows()}; }
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace rlx

#endif  // RLX_SCORES_H_
