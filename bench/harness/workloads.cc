// SPDX-License-Identifier: MIT OR Apache-2.0
// Builds the inputs of the standard workloads (bench/harness/workloads.h).
#include "bench/harness/workloads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "src/util/half_codec.h"
#include "tests/reference/reference.h"

namespace rlx::bench {
namespace {

// SplitMix64: a fixed, fast stream, so that every run sees the same scores.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) {
    const float unit = static_cast<float>(Next() >> 40) * 0x1.0p-24f;
    return lo + (hi - lo) * unit;
  }

 private:
  std::uint64_t state_;
};

// Pristine scores, shared by workloads of the same shape and type: uniform
// in [-8, 8), as attention logits after the 1/sqrt(d) scale roughly are.
const void* PristineScores(const Workload& w) {
  static std::map<std::string, hwy::AlignedFreeUniquePtr<std::uint8_t[]>> cache;
  const std::string key = std::to_string(w.shape.rows()) + "x" +
                          std::to_string(w.shape.k_len) + TypeSuffix(w.type);
  auto& buffer = cache[key];
  if (buffer) return buffer.get();
  buffer = hwy::AllocateAligned<std::uint8_t>(w.bytes());
  Random random(w.elements());
  const std::size_t n = w.elements();
  if (w.type == ScoreType::kF32) {
    float* out = reinterpret_cast<float*>(buffer.get());
    for (std::size_t i = 0; i < n; ++i) out[i] = random.Uniform(-8.0f, 8.0f);
  } else if (w.type == ScoreType::kBF16) {
    bf16* out = reinterpret_cast<bf16*>(buffer.get());
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = ToBF16(random.Uniform(-8.0f, 8.0f));
    }
  } else {
    f16* out = reinterpret_cast<f16*>(buffer.get());
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = ToF16(random.Uniform(-8.0f, 8.0f));
    }
  }
  return buffer.get();
}

struct Storage {
  WorkloadData data;
  std::vector<float> keep_f32;        // P3 mask; rlx rows of dense keep masks
  std::vector<std::uint8_t> keep_u8;  // P3u8 mask
  std::vector<std::uint64_t> keep_bits;
  std::vector<float> bias;  // P4 bias
  std::vector<float> rlx;   // materialised structured masks
  // A problem's rule inputs and options.
  std::vector<std::int64_t> q_position, k_position, prefix_end, offsets;
  std::vector<std::int32_t> q_segment, k_segment;
  std::vector<float> sink_logits, alibi_slopes, row_lse;
};

// P3's keep mask [batches, k_len]: padding masks of decreasing length per
// batch (18% shorter each, at least one key), with ~10% of the keys before
// the padding dropped too; key 0 is always kept.
std::vector<float> PaddingKeepMask(std::size_t batches, std::size_t k_len) {
  std::vector<float> keep(batches * k_len, 0.0f);
  Random random(12345);
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t cut = b * (k_len * 18 / 100);
    const std::size_t len = cut < k_len ? k_len - cut : 1;
    for (std::size_t k = 0; k < len; ++k) {
      const bool dropped = k != 0 && random.Next() % 10 == 0;
      keep[b * k_len + k] = dropped ? 0.0f : 1.0f;
    }
  }
  return keep;
}

// P4's bias over `mask_rows` rows [.., heads, q_len, k_len]: ALiBi-like,
// head h adds -2^-(h+1) * distance; -inf above the diagonal (a causal bias).
std::vector<float> AlibiCausalBias(std::size_t mask_rows, std::size_t heads,
                                   std::size_t q_len, std::size_t k_len) {
  std::vector<float> bias(mask_rows * k_len);
  const std::size_t q_off = k_len - q_len;
  for (std::size_t r = 0; r < mask_rows; ++r) {
    const std::size_t h = (r / q_len) % heads;
    const std::size_t abs_q = q_off + r % q_len;
    const float slope = std::ldexp(1.0f, -static_cast<int>(h + 1));
    for (std::size_t k = 0; k < k_len; ++k) {
      bias[r * k_len + k] =
          k <= abs_q ? -slope * static_cast<float>(abs_q - k) : kNegInf;
    }
  }
  return bias;
}

std::unique_ptr<Storage> BuildProblem(const Workload& w);

std::unique_ptr<Storage> Build(const Workload& w) {
  if (w.problem != nullptr) return BuildProblem(w);
  auto s = std::make_unique<Storage>();
  WorkloadData& d = s->data;
  const Shape4& shape = w.shape;
  const std::size_t k_len = shape.k_len;
  d.scores = PristineScores(w);
  switch (w.kind) {
    case MaskKind::kNone:
      d.mask = MaskSpec::none();
      break;
    case MaskKind::kDecode:
      d.mask = MaskSpec::decode(w.past, w.upper, w.window);
      // The executor's decode mask: one [k_len] row for every head.
      s->rlx.resize(k_len);
      reference::decode_mask(s->rlx.data(), w.past, w.upper, w.window);
      break;
    case MaskKind::kCausal:
    case MaskKind::kSlidingWindow: {
      d.mask = w.kind == MaskKind::kCausal ? MaskSpec::causal()
                                           : MaskSpec::sliding_window(w.window);
      // [q_len, k_len], broadcast over batch and heads.
      s->rlx.assign(shape.q_len * k_len, 0.0f);
      const std::size_t q_off = k_len - shape.q_len;
      for (std::size_t q = 0; q < shape.q_len; ++q) {
        const std::size_t abs_q = q_off + q;
        const std::size_t lo =
            w.window == 0 ? 0 : abs_q - std::min(w.window, abs_q);
        for (std::size_t k = lo; k <= abs_q && k < k_len; ++k) {
          s->rlx[q * k_len + k] = 1.0f;
        }
      }
      d.rlx.mod = shape.q_len;
      break;
    }
    case MaskKind::kKeepF32:
    case MaskKind::kKeepU8: {
      // Padding masks of decreasing length per batch, with ~10% of the keys
      // before the padding dropped too; key 0 is always kept.
      const std::size_t batches = w.mask_shape.batch;
      s->keep_f32 = PaddingKeepMask(batches, k_len);
      if (w.kind == MaskKind::kKeepF32) {
        d.mask = MaskSpec::keep(s->keep_f32.data(), w.mask_shape);
      } else {
        s->keep_u8.resize(s->keep_f32.size());
        for (std::size_t i = 0; i < s->keep_u8.size(); ++i) {
          s->keep_u8[i] = s->keep_f32[i] != 0.0f ? 1 : 0;
        }
        d.mask = MaskSpec::keep(s->keep_u8.data(), w.mask_shape);
      }
      d.rlx.rows = s->keep_f32.data();
      d.rlx.div = shape.heads * shape.q_len;
      d.rlx.mod = batches;
      break;
    }
    case MaskKind::kKeepBits:
      // No workload of the bit-packed kind yet.
      throw std::invalid_argument("Build: no kKeepBits workload");
    case MaskKind::kBias: {
      // ALiBi-like: head h adds -2^-(h+1) * distance; -inf above the
      // diagonal (a causal bias).
      s->bias =
          AlibiCausalBias(w.mask_shape.rows(), shape.heads, shape.q_len, k_len);
      d.mask = MaskSpec::bias(s->bias.data(), w.mask_shape);
      d.rlx.rows = s->bias.data();
      d.rlx.bias = true;
      d.rlx.mod = w.mask_shape.rows();
      break;
    }
  }
  if (!s->rlx.empty()) d.rlx.rows = s->rlx.data();

  // Kept elements: per mask row, then weighted by the rows that use it.
  if (d.rlx.rows == nullptr) {
    d.kept = w.elements();
  } else {
    std::vector<std::size_t> per_row(d.rlx.mod);
    for (std::size_t m = 0; m < d.rlx.mod; ++m) {
      const float* row = d.rlx.rows + m * k_len;
      per_row[m] = static_cast<std::size_t>(std::count_if(
          row, row + k_len, [&](float v) { return RlxKeeps(d.rlx, v); }));
    }
    for (std::size_t r = 0; r < shape.rows(); ++r) {
      d.kept += per_row[(r / d.rlx.div) % d.rlx.mod];
    }
  }
  return s;
}

// A problem's mask and options from its rules (bench/harness/problem.h), and
// its kept elements counted from the library's own apply_mask on zeros: a key
// is kept iff its score stays finite. The rlx mask holds that per row.
std::unique_ptr<Storage> BuildProblem(const Workload& w) {
  auto s = std::make_unique<Storage>();
  WorkloadData& d = s->data;
  const Problem& p = *w.problem;
  const Shape4& shape = w.shape;
  const std::size_t B = shape.batch, H = shape.heads, Q = shape.q_len,
                    K = shape.k_len;
  d.scores = PristineScores(w);
  // The kind: None, Causal, SlidingWindow or Decode (the parser's), with
  // its dense part, if any, added on top below.
  if (p.kind == MaskKind::kCausal) {
    d.mask = MaskSpec::causal();
  } else if (p.kind == MaskKind::kSlidingWindow) {
    d.mask = MaskSpec::sliding_window(p.window);
  } else if (p.kind == MaskKind::kDecode) {
    d.mask = MaskSpec::decode(p.past, K - 1, p.window);
  }
  const bool structured = p.kind != MaskKind::kNone;
  const Shape4 keep_shape{.batch = B, .heads = 1, .q_len = 1, .k_len = K};
  switch (p.dense) {
    case DenseKind::kNone:
      break;
    case DenseKind::kKeepF32:
      s->keep_f32 = PaddingKeepMask(B, K);
      d.mask = structured ? d.mask.with_keep(s->keep_f32.data(), keep_shape)
                          : MaskSpec::keep(s->keep_f32.data(), keep_shape);
      break;
    case DenseKind::kKeepU8: {
      const std::vector<float> keep = PaddingKeepMask(B, K);
      s->keep_u8.resize(keep.size());
      for (std::size_t i = 0; i < keep.size(); ++i) {
        s->keep_u8[i] = keep[i] != 0.0f ? 1 : 0;
      }
      d.mask = structured ? d.mask.with_keep(s->keep_u8.data(), keep_shape)
                          : MaskSpec::keep(s->keep_u8.data(), keep_shape);
      break;
    }
    case DenseKind::kKeepBits: {
      const std::vector<float> keep = PaddingKeepMask(B, K);
      const std::size_t words = (K + 63) / 64;
      s->keep_bits.assign(B * words, 0);
      for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t k = 0; k < K; ++k) {
          if (keep[b * K + k] != 0.0f) {
            s->keep_bits[b * words + k / 64] |= std::uint64_t{1} << (k % 64);
          }
        }
      }
      d.mask = structured
                   ? d.mask.with_keep_bits(s->keep_bits.data(), keep_shape)
                   : MaskSpec::keep_bits(s->keep_bits.data(), keep_shape);
      break;
    }
    case DenseKind::kBias: {
      const Shape4 bias_shape{.batch = 1, .heads = H, .q_len = Q, .k_len = K};
      s->bias = AlibiCausalBias(bias_shape.rows(), H, Q, K);
      d.mask = structured ? d.mask.with_bias(s->bias.data(), bias_shape)
                          : MaskSpec::bias(s->bias.data(), bias_shape);
      break;
    }
  }
  if (p.window_keys != 0) d.mask = d.mask.with_window_keys(p.window_keys);
  if (p.chunk != 0) d.mask = d.mask.with_chunk(p.chunk);
  if (p.sink_keys != 0) d.mask = d.mask.with_sink_keys(p.sink_keys);
  std::int64_t q_off = static_cast<std::int64_t>(K - std::min(K, Q));
  if (p.query_offset != INT64_MIN) {
    q_off = p.query_offset;
    s->offsets.assign(B, p.query_offset);
    d.mask = d.mask.with_query_offsets(s->offsets.data());
  }
  if (p.prefix >= 0) {
    s->prefix_end.assign(B, p.prefix);
    d.mask = d.mask.with_prefix(s->prefix_end.data());
  }
  if (p.segments != 0) {
    // N documents of equal length (the last one shorter), by position.
    const std::size_t len = (K + p.segments - 1) / p.segments;
    s->k_segment.resize(B * K);
    s->q_segment.resize(B * Q);
    for (std::size_t i = 0; i < B * K; ++i) {
      s->k_segment[i] = static_cast<std::int32_t>(i % K / len);
    }
    for (std::size_t i = 0; i < B * Q; ++i) {
      const std::int64_t pos = q_off + static_cast<std::int64_t>(i % Q);
      s->q_segment[i] = static_cast<std::int32_t>(
          pos < 0 ? -1 : static_cast<std::int64_t>(pos / len));
    }
    d.mask = d.mask.with_segments(s->q_segment.data(), s->k_segment.data());
  }
  if (p.paged_block != 0) {
    // Blocks of a paged cache in a shuffled order (PG's layout): positions
    // 0..valid-1 fill the blocks in that order; the queries are the newest
    // q_len of them.
    const std::size_t block = p.paged_block;
    std::vector<std::size_t> order((K + block - 1) / block);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(K));
    s->k_position.assign(B * K, -1);
    for (std::size_t i = 0; i < order.size(); ++i) {
      for (std::size_t j = 0; j < block; ++j) {
        const std::size_t pos = i * block + j, slot = order[i] * block + j;
        if (pos < p.valid && slot < K) {
          for (std::size_t b = 0; b < B; ++b) {
            s->k_position[b * K + slot] = static_cast<std::int64_t>(pos);
          }
        }
      }
    }
    s->q_position.resize(B * Q);
    for (std::size_t i = 0; i < B * Q; ++i) {
      s->q_position[i] = static_cast<std::int64_t>(p.valid - Q + i % Q);
    }
    d.mask = d.mask.with_positions(s->q_position.data(), s->k_position.data());
  }
  d.options.scale = p.scale;
  d.options.softcap = p.softcap;
  if (p.has_sink_logits) {
    s->sink_logits.assign(H, p.sink_logit);
    d.options.sink_logits = s->sink_logits.data();
  }
  if (p.has_alibi) {
    s->alibi_slopes = alibi_slopes(H, p.alibi_max_bias);
    d.options.alibi_slopes = s->alibi_slopes.data();
  }
  if (p.lse) {
    s->row_lse.assign(shape.rows(), 0.0f);
    d.options.row_lse = s->row_lse.data();
  }
  d.options.zero_masked = p.zero_masked;

  // Which keys each row keeps: the library's apply_mask on zeros.
  s->rlx.assign(shape.rows() * K, 0.0f);
  apply_mask(
      {s->rlx.data(), ScoreType::kF32, shape, Strides3::contiguous(shape)},
      d.mask);
  for (float& v : s->rlx) {
    const bool kept = std::isfinite(v);
    d.kept += kept;
    v = kept ? 1.0f : 0.0f;
  }
  d.rlx.rows = s->rlx.data();
  d.rlx.div = 1;
  d.rlx.mod = shape.rows();
  return s;
}

}  // namespace

std::vector<Workload>& CustomWorkloads() {
  static std::vector<Workload> workloads;
  return workloads;
}

void SetCustomWorkloads(const std::vector<Problem>& problems) {
  static std::vector<Problem> kept;
  kept = problems;
  std::vector<Workload>& all = CustomWorkloads();
  all.clear();
  for (const Problem& p : kept) {
    Workload w;
    w.name = p.name;
    w.shape = p.shape;
    w.type = p.type;
    w.kind = p.dense == DenseKind::kNone ? p.kind : MaskKind::kNone;
    w.problem = &p;
    all.push_back(w);
  }
}

void CheckProblem(const Workload& w) {
  const WorkloadData& data = Data(w);
  const ScoreView view = FreshScores(w);
  masked_softmax(view, data.mask, data.options, RowRange{0, 1});
}

const WorkloadData& Data(const Workload& w) {
  static std::map<std::string, std::unique_ptr<Storage>> cache;
  // A problem's data by its name and descriptor (a test may give two
  // problems one name in turn).
  auto& entry = cache[w.problem == nullptr
                          ? w.name
                          : "problem " + w.name + " " + w.problem->descriptor];
  if (!entry) entry = Build(w);
  return entry->data;
}

void* Scratch(int slot, std::size_t bytes) {
  static hwy::AlignedFreeUniquePtr<std::uint8_t[]> buffers[3];
  static std::size_t sizes[3] = {};
  if (sizes[slot] < bytes) {
    buffers[slot] = hwy::AllocateAligned<std::uint8_t>(bytes);
    std::memset(buffers[slot].get(), 0, bytes);  // fault the pages in now
    sizes[slot] = bytes;
  }
  return buffers[slot].get();
}

ScoreView FreshScores(const Workload& w) {
  void* scores = Scratch(0, w.bytes());
  std::memcpy(scores, Data(w).scores, w.bytes());
  return {scores, w.type, w.shape, Strides3::contiguous(w.shape)};
}

const float* ExpInputs(std::size_t n) {
  static std::vector<float> inputs;
  if (inputs.size() < n) {
    Random random(n);
    inputs.resize(n);
    for (float& x : inputs) x = random.Uniform(-16.0f, 0.0f);
  }
  return inputs.data();
}

const KeptRows& KeptRowsOf(const Workload& w, bool unaligned) {
  static std::map<std::pair<std::string, bool>, KeptRows> cache;
  KeptRows& kept = cache[{w.name, unaligned}];
  if (!kept.begin.empty()) return kept;
  const WorkloadData& data = Data(w);
  const std::size_t n = w.shape.k_len;
  constexpr std::size_t kLine = 64 / sizeof(float);
  for (std::size_t r = 0; r < w.shape.rows(); ++r) {
    const float* mask_row = RlxRow(data.rlx, r, n);
    if (unaligned) {
      std::size_t first = 0;
      while (first < n && mask_row != nullptr &&
             !RlxKeeps(data.rlx, mask_row[first])) {
        ++first;
      }
      kept.pristine.resize(kept.pristine.size() + (r * n + first) % kLine);
    }
    kept.begin.push_back(kept.pristine.size());
    for (std::size_t k = 0; k < n; ++k) {
      if (mask_row != nullptr && !RlxKeeps(data.rlx, mask_row[k])) continue;
      const std::size_t at = r * n + k;
      switch (w.type) {
        case ScoreType::kF32:
          kept.pristine.push_back(static_cast<const float*>(data.scores)[at]);
          break;
        case ScoreType::kBF16:
          kept.pristine.push_back(
              ToF32(static_cast<const bf16*>(data.scores)[at]));
          break;
        case ScoreType::kF16:
          kept.pristine.push_back(
              ToF32(static_cast<const f16*>(data.scores)[at]));
          break;
      }
    }
    kept.len.push_back(kept.pristine.size() - kept.begin.back());
    kept.pristine.resize((kept.pristine.size() + 2 * kLine - 1) / kLine *
                         kLine);
  }
  return kept;
}

float ToF32(bf16 v) { return rlx_f32_from_bf16(v.bits); }

float ToF32(f16 v) { return rlx_f32_from_f16(v.bits); }

bf16 ToBF16(float f) { return {rlx_bf16_from_f32(f)}; }

f16 ToF16(float f) { return {rlx_f16_from_f32(f)}; }

}  // namespace rlx::bench
