// SPDX-License-Identifier: MIT OR Apache-2.0
// Builds the inputs of the standard workloads (bench/workloads.h).
#include "bench/workloads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
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
  std::vector<float> bias;            // P4 bias
  std::vector<float> rlx;             // materialised structured masks
};

std::unique_ptr<Storage> Build(const Workload& w) {
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
      s->keep_f32.assign(batches * k_len, 0.0f);
      Random random(12345);
      for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t len = k_len - b * (k_len * 18 / 100);
        for (std::size_t k = 0; k < len; ++k) {
          const bool dropped = k != 0 && random.Next() % 10 == 0;
          s->keep_f32[b * k_len + k] = dropped ? 0.0f : 1.0f;
        }
      }
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
      s->bias.resize(w.mask_shape.rows() * k_len);
      const std::size_t q_off = k_len - shape.q_len;
      for (std::size_t r = 0; r < w.mask_shape.rows(); ++r) {
        const std::size_t h = (r / shape.q_len) % shape.heads;
        const std::size_t abs_q = q_off + r % shape.q_len;
        const float slope = std::ldexp(1.0f, -static_cast<int>(h + 1));
        for (std::size_t k = 0; k < k_len; ++k) {
          s->bias[r * k_len + k] =
              k <= abs_q ? -slope * static_cast<float>(abs_q - k) : kNegInf;
        }
      }
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

}  // namespace

const WorkloadData& Data(const Workload& w) {
  static std::map<std::string, std::unique_ptr<Storage>> cache;
  auto& entry = cache[w.name];
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
