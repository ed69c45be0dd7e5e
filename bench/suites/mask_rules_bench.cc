// SPDX-License-Identifier: MIT OR Apache-2.0
// The mask rules of today's models, each against the host-built
// alternative that backends use today:
//   masked_softmax/<w>/<target>  the rules, evaluated in the kernel
//   host_mask/<w>/<target>       an f32 additive mask filled per element on
//       the host from the same positions and segments (0 kept, -inf masked),
//       then masked_softmax with that bias: both steps every iteration, as a
//       backend builds its mask before every softmax
// and, for the decode rules, masked_softmax/<w>kept/<target>: a plain Decode
// workload of the same width keeping as many keys per row (the interval
// path's cost for that many keys). Workloads (f32, one thread):
//   L4   Llama 4 chunked decode: 32 rows x 16385 keys, chunk 8192, past 12000
//   SL   StreamingLLM decode: 32 x 8193, sinks 4, window 1024, past 6000
//   DOC  packed prefill: 8 heads x 2048 x 2048, 4 documents of uneven
//        length, causal + segments
//   PG   paged decode: 32 x 4096 slots, 16-slot blocks in shuffled order,
//        explicit key positions, 3000 valid
//   G3   Gemma 3 prefill: 8 x 1024 x 1024, causal + a 256-token prefix
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "hwy/aligned_allocator.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// One rule workload and everything its mask points to.
struct RuleWorkload {
  std::string name;
  Shape4 shape;
  MaskSpec mask;  // the rules
  std::vector<std::int64_t> q_position, k_position, prefix_end;
  std::vector<std::int32_t> q_segment, k_segment;
  // Host alternative: the bias the backend fills, [1, 1, q_len, k_len]
  // broadcast over heads (and batch), and the per-element rule it fills
  // it from.
  std::vector<float> host_bias;
  bool (*host_kept)(const RuleWorkload& w, std::size_t q,
                    std::size_t k) = nullptr;
  std::size_t kept_past = 0;  // decode: the Decode past with as many kept keys
  std::vector<float> scores;  // pristine, uniform in [-8, 8]
};

std::int64_t DecodeKeyPosition(std::size_t past, std::size_t upper,
                               std::size_t k) {
  if (k < past) return static_cast<std::int64_t>(k);
  return k == upper ? static_cast<std::int64_t>(past) : -1;
}

std::vector<RuleWorkload>& RuleWorkloads() {
  static std::vector<RuleWorkload> all = [] {
    const std::size_t s = SmokeMode() ? 16 : 1;
    std::vector<RuleWorkload> w;
    {
      // L4: the new token at position past sees its chunk's keys only.
      RuleWorkload l4;
      l4.name = "L4";
      const std::size_t upper = 16384 / s, past = 12000 / s, chunk = 8192 / s;
      l4.shape = {1, 32, 1, upper + 1};
      l4.mask = MaskSpec::decode(past, upper).with_chunk(chunk);
      l4.host_kept = [](const RuleWorkload& w, std::size_t, std::size_t k) {
        const std::int64_t p_q = static_cast<std::int64_t>(w.mask.past);
        const std::int64_t p_k =
            DecodeKeyPosition(w.mask.past, w.mask.upper, k);
        const auto c = static_cast<std::int64_t>(w.mask.chunk);
        return p_k >= 0 && p_k <= p_q && p_k / c == p_q / c;
      };
      l4.kept_past = past - past / chunk * chunk;  // keys of the chunk so far
      w.push_back(std::move(l4));
    }
    {
      // SL: 4 sink tokens and the 1024-key window (the seed's window 1023).
      RuleWorkload sl;
      sl.name = "SL";
      const std::size_t upper = 8192 / s, past = 6000 / s, window = 1024 / s;
      sl.shape = {1, 32, 1, upper + 1};
      sl.mask = MaskSpec::decode(past, upper)
                    .with_window_keys(window)
                    .with_sink_keys(4);
      sl.host_kept = [](const RuleWorkload& w, std::size_t, std::size_t k) {
        const std::int64_t p_q = static_cast<std::int64_t>(w.mask.past);
        const std::int64_t p_k =
            DecodeKeyPosition(w.mask.past, w.mask.upper, k);
        return p_k >= 0 && p_k <= p_q &&
               (p_k < 4 ||
                p_q - p_k < static_cast<std::int64_t>(w.mask.window_keys));
      };
      sl.kept_past = 4 + (window - 1);  // sinks + the window's past keys
      w.push_back(std::move(sl));
    }
    {
      // DOC: documents of 300, 900, 548 and 300 tokens packed in one row.
      RuleWorkload doc;
      doc.name = "DOC";
      const std::size_t n = 2048 / s;
      doc.shape = {1, 8, n, n};
      const std::size_t lengths[] = {300 / s, 900 / s, 548 / s, n};
      std::size_t begin = 0;
      doc.k_segment.resize(n);
      for (std::int32_t d = 0; d < 4; ++d) {
        const std::size_t end = std::min(n, begin + lengths[d]);
        for (std::size_t k = begin; k < end; ++k) doc.k_segment[k] = d;
        begin = end;
      }
      doc.q_segment = doc.k_segment;
      doc.host_kept = [](const RuleWorkload& w, std::size_t q, std::size_t k) {
        return k <= q && w.q_segment[q] == w.k_segment[k];
      };
      w.push_back(std::move(doc));
    }
    {
      // PG: 16-slot blocks of a paged cache in shuffled order; positions
      // 0..2999 are valid (the new token is position 2999), the rest of the
      // slots are empty.
      RuleWorkload pg;
      pg.name = "PG";
      const std::size_t slots = 4096 / s, valid = 3000 / s, block = 16;
      pg.shape = {1, 32, 1, slots};
      std::vector<std::size_t> order(slots / block);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(4096));
      pg.k_position.assign(slots, -1);
      for (std::size_t b = 0; b < order.size(); ++b) {
        for (std::size_t i = 0; i < block; ++i) {
          const std::size_t pos = b * block + i;
          if (pos < valid) {
            pg.k_position[order[b] * block + i] =
                static_cast<std::int64_t>(pos);
          }
        }
      }
      pg.q_position = {static_cast<std::int64_t>(valid - 1)};
      // PGkept: a Decode row keeping as many keys (2999 past and the
      // token), the bar's "Decode row with the same kept count".
      pg.kept_past = valid - 1;
      pg.host_kept = [](const RuleWorkload& w, std::size_t, std::size_t k) {
        return w.k_position[k] >= 0 && w.k_position[k] <= w.q_position[0];
      };
      w.push_back(std::move(pg));
    }
    {
      // G3: a 256-token image prefix, bidirectional, then causal text.
      RuleWorkload g3;
      g3.name = "G3";
      const std::size_t n = 1024 / s;
      g3.shape = {1, 8, n, n};
      g3.prefix_end = {static_cast<std::int64_t>(256 / s)};
      g3.host_kept = [](const RuleWorkload& w, std::size_t q, std::size_t k) {
        const auto p = static_cast<std::size_t>(w.prefix_end[0]);
        return k <= q || (q < p && k < p);
      };
      w.push_back(std::move(g3));
    }
    // Masks that point into the workloads' own vectors, now that they no
    // longer move.
    for (RuleWorkload& r : w) {
      if (r.name == "DOC") {
        r.mask = MaskSpec::causal().with_segments(r.q_segment.data(),
                                                  r.k_segment.data());
      } else if (r.name == "PG") {
        r.mask = MaskSpec::causal().with_positions(r.q_position.data(),
                                                   r.k_position.data());
      } else if (r.name == "G3") {
        r.mask = MaskSpec::causal().with_prefix(r.prefix_end.data());
      }
      r.host_bias.resize(r.shape.q_len * r.shape.k_len);
      std::mt19937_64 random(r.shape.k_len);
      std::uniform_real_distribution<float> uniform(-8.0f, 8.0f);
      r.scores.resize(r.shape.rows() * r.shape.k_len);
      for (float& x : r.scores) x = uniform(random);
    }
    return w;
  }();
  return all;
}

// A 64-byte aligned copy of the pristine scores, per workload.
ScoreView Fresh(const RuleWorkload& w) {
  static std::map<const RuleWorkload*, hwy::AlignedFreeUniquePtr<float[]>>
      buffers;
  auto& buffer = buffers[&w];
  if (!buffer) buffer = hwy::AllocateAligned<float>(w.scores.size());
  std::memcpy(buffer.get(), w.scores.data(), w.scores.size() * sizeof(float));
  return ScoreView::f32(buffer.get(), w.shape);
}

void CountersOf(benchmark::State& state, const RuleWorkload& w) {
  const double elements = static_cast<double>(w.scores.size());
  SetCounters(state, elements, sizeof(float), 0.0);
}

void BM_Rules(benchmark::State& state, const RuleWorkload* w,
              const std::string& target) {
  TargetScope scope(target);
  const ScoreView view = Fresh(*w);
  for (auto _ : state) {
    masked_softmax(view, w->mask);
    benchmark::ClobberMemory();
  }
  CountersOf(state, *w);
}

void BM_HostMask(benchmark::State& state, RuleWorkload* w,
                 const std::string& target) {
  TargetScope scope(target);
  const ScoreView view = Fresh(*w);
  const Shape4 bias_shape{1, 1, w->shape.q_len, w->shape.k_len};
  float* bias = w->host_bias.data();
  for (auto _ : state) {
    for (std::size_t q = 0; q < w->shape.q_len; ++q) {
      for (std::size_t k = 0; k < w->shape.k_len; ++k) {
        bias[q * w->shape.k_len + k] = w->host_kept(*w, q, k) ? 0.0f : kMasked;
      }
    }
    benchmark::ClobberMemory();
    masked_softmax(view, MaskSpec::bias(bias, bias_shape));
    benchmark::ClobberMemory();
  }
  CountersOf(state, *w);
}

// The plain Decode workload of the same width with as many kept keys.
void BM_SameKept(benchmark::State& state, const RuleWorkload* w,
                 const std::string& target) {
  TargetScope scope(target);
  const ScoreView view = Fresh(*w);
  const MaskSpec decode = MaskSpec::decode(w->kept_past, w->shape.k_len - 1);
  for (auto _ : state) {
    masked_softmax(view, decode);
    benchmark::ClobberMemory();
  }
  CountersOf(state, *w);
}

void RegisterRules() {
  for (RuleWorkload& w : RuleWorkloads()) {
    for (const std::string& target : BenchTargets()) {
      Configure(
          RegisterTracked(BenchName({"masked_softmax", w.name, target}).c_str(),
                          BM_Rules, &w, target));
      Configure(
          RegisterTracked(BenchName({"host_mask", w.name, target}).c_str(),
                          BM_HostMask, &w, target));
      if (w.kept_past != 0) {
        Configure(RegisterTracked(
            BenchName({"masked_softmax", w.name + "kept", target}).c_str(),
            BM_SameKept, &w, target));
      }
    }
  }
}

const bool kAdded = AddSuite({.rank = 40, .once = &RegisterRules});

}  // namespace
}  // namespace rlx::bench
