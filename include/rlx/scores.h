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

// The kinds are listed once more in src/mask/mask_kind_list.h, from which the C
// API's mapping and static_asserts, the fuzzer's and the tests' draws are
// generated: a kind added here must get its row there (and its RLX_MASK_ /
// RLX_DENSE_ constant in rlx/rlx_attn_mask_scores.h); the library, tests and
// fuzzer build with -Werror=switch, so every switch over the list that does not
// handle it yet (NameOf's, generated from the list, among them) is a build
// error.
enum class MaskKind : std::uint8_t {
  kNone,           // every key kept
  kCausal,         // keep k <= abs_q
  kSlidingWindow,  // keep abs_q - window <= k <= abs_q (window 0 = causal)
  kDecode,         // keep [lo, past) and {upper}: the seed's decode mask
  kKeepF32,        // dense keep mask, kept iff m >= 0.5f (NaN: masked)
  kKeepU8,         // dense keep mask, kept iff m != 0
  kBias,           // dense additive f32 bias (-inf masks a key)
  kKeepBits,       // dense bit-packed keep mask: bit k % 64 of word k / 64
};

// The dense part of a mask: the dense kinds above, or a dense part added on
// top of a structured kind's rules (with_keep, with_keep_bits, with_bias).
enum class DenseKind : std::uint8_t {
  kNone,
  kKeepF32,
  kKeepU8,
  kKeepBits,
  kBias
};

// How scores are masked (docs/SEMANTICS.md, "Mask rules over logical
// positions").
//
// Every query row and key slot has a logical position: by default
// p_q = query_offset(b) + q and p_k = k; with_positions overrides either
// (k_position < 0 marks an empty slot). Decode is the layout p_k = k for
// k < past, the new token at slot upper with p_k = past, slots [past, upper)
// empty, p_q = past. A key is kept iff
//   valid AND same_segment AND (base OR sink OR group) AND dense,
//   base = (causal OR prefix) AND window AND window_after AND chunk,
// causal (Causal, SlidingWindow, Decode): p_k <= p_q; prefix: p_q < P and
// p_k < P; window (W > 0): p_q - p_k < W; window_after (A > 0): p_k - p_q <
// A; chunk (C > 0): floor(p_k / C) == floor(p_q / C); sink (S > 0): p_k < S
// and p_k <= p_q; group: q_group == k_group != 0 (Gemma 3's images);
// same_segment: equal segment ids; dense: the keep mask keeps it (a bias
// adds to kept scores).
// An absent rule constrains nothing (an absent sink or prefix adds nothing).
//
// SlidingWindow(w) keeps the w keys before the query and the query itself:
// it is causal with window_keys W = w + 1 (llama.cpp, gemma.cpp, vLLM and
// ONNX Runtime count the query in their window W: with_window_keys(W) is
// theirs). The Decode window w is W = w + 1 likewise. Without causal,
// with_window_keys(w + 1).with_window_keys_after(w + 1) is the two-sided
// window |p_q - p_k| <= w (EmbeddingGemma, ModernBERT).
//
// Dense parts read a tensor whose extents are each either the score
// tensor's or 1 (broadcast; its stride is then ignored), with k_len always
// the scores' k_len. A zero stride broadcasts too, on any axis; any other
// row stride must hold a row when the part's q_len is above 1. RLX passes
// keep masks as [batch, 1, 1, k_len]. A mask has at most one dense part.
//
// Rows whose kept set is a few key intervals (implicit key positions, no
// segments, no groups, no dense part) are computed from those intervals
// alone; explicit key positions, segments, groups and dense parts are
// evaluated per element.
// A block list: FlexAttention's BlockMask (docs/SEMANTICS.md, "Block
// lists"). Query row q is in query block q / q_block; key block j
// holds keys [j * k_block, (j + 1) * k_block). For query block i of (b, h),
// num_blocks[(b * heads + h) * q_blocks + i] partial key blocks are listed in
// indices[((b * heads + h) * q_blocks + i) * max_blocks + slot], and likewise
// full_num_blocks / full_indices the full ones (both null: none). batch and
// heads are the scores' extents or 1 (broadcast). Keys of a full block are
// kept without the position rules or a dense keep part (valid and
// same_segment still apply; a bias and ALiBi still add); keys of a partial
// block go through them; keys of no listed block are masked and never read.
// Blocks may be listed in any order; a block listed twice for a query block
// (or both full and partial) is an error, as are bad extents, counts and
// indices (std::invalid_argument, nothing written).
struct BlockList {
  const std::int32_t* num_blocks = nullptr;       // [batch, heads, q_blocks]
  const std::int32_t* indices = nullptr;          // [..., q_blocks, max_blocks]
  const std::int32_t* full_num_blocks = nullptr;  // as num_blocks, or null
  const std::int32_t* full_indices = nullptr;     // as indices, or null
  std::size_t batch = 0, heads = 0, q_blocks = 0, max_blocks = 0;
  std::size_t q_block = 0, k_block = 0;
};

struct MaskSpec {
  MaskKind kind = MaskKind::kNone;
  std::size_t window = 0;           // kSlidingWindow, kDecode
  std::size_t past = 0, upper = 0;  // kDecode: requires k_len == upper + 1
  const void* data = nullptr;       // the dense part
  Shape4 shape;                     // dense part: extents, 1 = broadcast
  Strides3 strides;                 // dense part: element (bits: word) strides
  // Optional per-batch absolute position of query row 0 (batch entries);
  // nullptr means k_len - q_len for every batch. May be negative.
  const std::int64_t* query_offsets = nullptr;
  // The rules; 0 / nullptr = absent.
  // W, C and S: 0 = none; a kernel given one above INT64_MAX throws
  // std::invalid_argument (positions are int64).
  std::size_t window_keys = 0;               // W, counting the query
  std::size_t chunk = 0;                     // C
  std::size_t sink_keys = 0;                 // S
  const std::int64_t* prefix_end = nullptr;  // [batch]
  const std::int32_t* q_segment = nullptr;   // [batch, q_len]
  const std::int32_t* k_segment = nullptr;   // [batch, k_len]
  const std::int64_t* q_position = nullptr;  // [batch, q_len]
  const std::int64_t* k_position = nullptr;  // [batch, k_len]
  // The dense part on top of a structured kind (the dense kinds use `kind`).
  DenseKind dense = DenseKind::kNone;
  // Two-sided windows: A > 0 keeps p_k - p_q < A (A counts the query;
  // above INT64_MAX: std::invalid_argument).
  std::size_t window_keys_after = 0;
  // Groups: a query and a key in the same nonzero group are kept whatever
  // causal, window, chunk, prefix or sinks say (still only valid keys of
  // the same segment that the dense part keeps). Both or neither.
  const std::int32_t* q_group = nullptr;  // [batch, q_len], 0 = no group
  const std::int32_t* k_group = nullptr;  // [batch, k_len], 0 = no group
  // A key list: row (b, h, q) keeps only the keys named in its n slots
  // (-1 = unused). key_indices_shape = {batch or 1, heads or 1, q_len or 1, n}.
  const std::int32_t* key_indices = nullptr;
  Shape4 key_indices_shape;
  // A block list; absent while block_list.num_blocks is null.
  BlockList block_list;

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
    return dense_of(MaskKind::kKeepF32, m, shape);
  }
  static MaskSpec keep(const std::uint8_t* m, const Shape4& shape) {
    return dense_of(MaskKind::kKeepU8, m, shape);
  }
  static MaskSpec bias(const float* b, const Shape4& shape) {
    return dense_of(MaskKind::kBias, b, shape);
  }
  // A row is ceil(k_len / 64) words (contiguous layout), key k is bit k % 64
  // of word k / 64; strides, when given, count words.
  static MaskSpec keep_bits(const std::uint64_t* words, const Shape4& shape) {
    return dense_of(MaskKind::kKeepBits, words, shape);
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
  // The rules: each returns a modified copy.
  MaskSpec with_window_keys(std::size_t W) const {
    MaskSpec copy = *this;
    copy.window_keys = W;
    return copy;
  }
  MaskSpec with_chunk(std::size_t C) const {
    MaskSpec copy = *this;
    copy.chunk = C;
    return copy;
  }
  MaskSpec with_sink_keys(std::size_t S) const {
    MaskSpec copy = *this;
    copy.sink_keys = S;
    return copy;
  }
  MaskSpec with_prefix(const std::int64_t* prefix_end_per_batch) const {
    MaskSpec copy = *this;
    copy.prefix_end = prefix_end_per_batch;
    return copy;
  }
  MaskSpec with_segments(const std::int32_t* q_segments,
                         const std::int32_t* k_segments) const {
    MaskSpec copy = *this;
    copy.q_segment = q_segments;
    copy.k_segment = k_segments;
    return copy;
  }
  // Either may be null (that side keeps its implicit positions).
  MaskSpec with_positions(const std::int64_t* q_positions,
                          const std::int64_t* k_positions) const {
    MaskSpec copy = *this;
    copy.q_position = q_positions;
    copy.k_position = k_positions;
    return copy;
  }
  // A dense part on top of the rules (contiguous; with_strides after it sets
  // its strides).
  MaskSpec with_keep(const float* m, const Shape4& shape) const {
    return with_dense(DenseKind::kKeepF32, m, shape);
  }
  MaskSpec with_keep(const std::uint8_t* m, const Shape4& shape) const {
    return with_dense(DenseKind::kKeepU8, m, shape);
  }
  MaskSpec with_keep_bits(const std::uint64_t* words,
                          const Shape4& shape) const {
    return with_dense(DenseKind::kKeepBits, words, shape);
  }
  MaskSpec with_bias(const float* b, const Shape4& shape) const {
    return with_dense(DenseKind::kBias, b, shape);
  }
  MaskSpec with_window_keys_after(std::size_t A) const {
    MaskSpec copy = *this;
    copy.window_keys_after = A;
    return copy;
  }
  MaskSpec with_groups(const std::int32_t* q_groups,
                       const std::int32_t* k_groups) const {
    MaskSpec copy = *this;
    copy.q_group = q_groups;
    copy.k_group = k_groups;
    return copy;
  }
  // A key list (docs/SEMANTICS.md, "Key lists"): row (b, h, q) keeps only
  // the keys named in its n slots, ANDed with every other rule (top-k
  // sparse attention). `indices` is contiguous: slot s of row (b, h, q) is
  // at ((b * shape.heads + h) * shape.q_len + q) * shape.k_len + s,
  // shape.k_len being the slots per row n (indices of broadcast extents,
  // 1, are 0; any other extent must be the scores'). -1 is an unused slot,
  // a key named twice counts once; any other value outside [0, k_len) is
  // std::invalid_argument naming the row, slot and value, nothing written.
  // n = 0 lists no key (every row fully masked). The softmax reads and
  // writes only the listed keys (kept-only: the listed keys inside
  // kept_keys); apply_mask fills every unlisted key. Not with a block list,
  // nor in the split softmax (std::invalid_argument).
  MaskSpec with_key_indices(const std::int32_t* indices, Shape4 shape) const {
    MaskSpec copy = *this;
    copy.key_indices = indices;
    copy.key_indices_shape = shape;
    return copy;
  }
  MaskSpec with_block_list(const BlockList& blocks) const {
    MaskSpec copy = *this;
    copy.block_list = blocks;
    return copy;
  }

  // The dense part a kind reads by itself (kNone: a structured kind, whose
  // dense part, if any, is `dense`).
  static constexpr DenseKind dense_kind_of(MaskKind kind) {
    switch (kind) {
      case MaskKind::kKeepF32:
        return DenseKind::kKeepF32;
      case MaskKind::kKeepU8:
        return DenseKind::kKeepU8;
      case MaskKind::kKeepBits:
        return DenseKind::kKeepBits;
      case MaskKind::kBias:
        return DenseKind::kBias;
      case MaskKind::kNone:
      case MaskKind::kCausal:
      case MaskKind::kSlidingWindow:
      case MaskKind::kDecode:
        return DenseKind::kNone;
    }
    return DenseKind::kNone;
  }
  // The dense part this mask reads: its kind's own, else the one added to
  // the rules (`dense`).
  DenseKind dense_part() const {
    const DenseKind own = dense_kind_of(kind);
    return own != DenseKind::kNone ? own : dense;
  }

  // The contiguous strides of a dense part of `shape`: a keep_bits row is
  // ceil(k_len / 64) words.
  static Strides3 dense_strides(DenseKind kind, const Shape4& shape) {
    if (kind != DenseKind::kKeepBits) return Strides3::contiguous(shape);
    const std::size_t row = shape.k_len / 64 + (shape.k_len % 64 != 0);
    return {shape.heads * shape.q_len * row, shape.q_len * row, row};
  }

 private:
  static MaskSpec of(MaskKind kind) {
    MaskSpec m;
    m.kind = kind;
    return m;
  }
  static MaskSpec dense_of(MaskKind kind, const void* data,
                           const Shape4& shape) {
    MaskSpec m = of(kind);
    m.data = data;
    m.shape = shape;
    m.strides = dense_strides(dense_kind_of(kind), shape);
    return m;
  }
  MaskSpec with_dense(DenseKind kind, const void* data,
                      const Shape4& shape) const {
    MaskSpec copy = *this;
    copy.dense = kind;
    copy.data = data;
    copy.shape = shape;
    copy.strides = dense_strides(kind, shape);
    return copy;
  }
};

// A half-open interval of key indices.
struct KeyInterval {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
  friend bool operator==(const KeyInterval&, const KeyInterval&) = default;
};

// The keys a row may attend to: at most three sorted, disjoint, non-empty
// intervals (the sink keys, the base rules' keys, the Decode token); count 0
// = fully masked. Exact for rows whose keys all have implicit positions and
// no segments or dense part; otherwise a superset that the per-element rules
// narrow.
struct KeptKeys {
  static constexpr std::size_t kMaxIntervals = 3;
  std::array<KeyInterval, kMaxIntervals> intervals{};
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
