// SPDX-License-Identifier: MIT OR Apache-2.0
// A tiled prefill driven by a block mask (rlx/block_mask.h), as a
// flash-attention style executor runs it: one head of `tokens` queries over
// the same `tokens` keys under causal + a sliding window of W keys (the
// query counted, MaskSpec::causal().with_window_keys(W)):
//
//  * rlx::classify_blocks sorts the [tq x tk] tiles of Q K^T into empty,
//    full and partial ones, in FlexAttention's compact form;
//  * per query block, only the non-empty key blocks are computed: S = scale
//    * Q K^T of the tile; a partial tile is masked with rlx::apply_mask on
//    the tile's view (its -inf fill), a full one not at all; the online
//    softmax (running max and sum per row) folds the tile's P V into the
//    rows' accumulators;
//  * the result is compared with an unpadded, untiled reference in double:
//    every element of Q K^T, the rule evaluated per element (k <= q and
//    q - k < W), softmax and P V. The classification is also checked tile
//    by tile against the per-element rule.
//
// A tile's view starts at key k0 and query q0, so its mask puts query row 0
// at position q0 - k0 relative to its first key (with_query_offsets): the
// causal and window rules depend on p_q - p_k alone.
//
//   tiled_prefill [--tokens=N] [--window=W] [--tq=T] [--tk=T]
//                 [--head-dim=D] [--seed=X] [--tolerance=T]
//
// Exit status 0 when the tiled result matches the reference within the
// tolerance and the block mask agrees with the rule; 1 otherwise; 2 for bad
// flags.
#include <rlx/block_mask.h>
#include <rlx/score_kernels.h>
#include <rlx/scores.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

struct Options {
  std::size_t tokens = 2048;
  std::size_t window = 300;  // W keys, counting the query
  std::size_t tq = 64, tk = 64;
  std::size_t head_dim = 64;
  std::uint64_t seed = 1;
  // max |tiled - reference| over the outputs. The tiled path is f32
  // throughout (64-term dot products, exp, sums over at most W keys): its
  // error is a few f32 roundings of outputs of magnitude about 1 (8e-7 in
  // the default run). A key wrongly kept or dropped moves an output by
  // about its weight times |v - out|, some 1/W (3e-3 at W = 300) for a
  // typical key: far above this.
  double tolerance = 1e-5;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr,
               "tiled_prefill: %s\n"
               "usage: tiled_prefill [--tokens=N] [--window=W] [--tq=T] "
               "[--tk=T] [--head-dim=D] [--seed=X] [--tolerance=T]\n",
               problem.c_str());
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      Usage("unknown argument " + arg);
    }
    const std::string name = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    char* end = nullptr;
    if (name == "tolerance") {
      o.tolerance = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(o.tolerance >= 0.0)) {
        Usage("--tolerance needs a number >= 0, not " + value);
      }
      continue;
    }
    const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || *end != '\0') {
      Usage("--" + name + " needs a count, not " + value);
    }
    if (name == "tokens") {
      o.tokens = n;
    } else if (name == "window") {
      o.window = n;
    } else if (name == "tq") {
      o.tq = n;
    } else if (name == "tk") {
      o.tk = n;
    } else if (name == "head-dim") {
      o.head_dim = n;
    } else if (name == "seed") {
      o.seed = n;
    } else {
      Usage("unknown flag --" + name);
    }
  }
  if (o.tokens == 0 || o.head_dim == 0) {
    Usage("--tokens and --head-dim must be at least 1");
  }
  return o;
}

// The rule, per element: what the reference and the tile check use.
bool Kept(std::size_t q, std::size_t k, std::size_t window) {
  return k <= q && (window == 0 || q - k < window);
}

struct Tiles {
  std::size_t q_blocks = 0, k_blocks = 0;
  std::vector<std::uint32_t> kv_num, kv_indices, full_num, full_indices;

  rlx::BlockMaskView view() {
    return {q_blocks,          k_blocks,        kv_num.data(),
            kv_indices.data(), full_num.data(), full_indices.data()};
  }
};

// The tiled attention: out [tokens x d].
struct Counts {
  std::size_t full = 0, partial = 0;
};

Counts TiledAttention(const Options& o, const rlx::MaskSpec& mask,
                      const Tiles& t, const std::vector<float>& q,
                      const std::vector<float>& k, const std::vector<float>& v,
                      std::vector<float>& out) {
  const std::size_t n = o.tokens, d = o.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(o.tq * o.tk), m(o.tq), l(o.tq), acc(o.tq * d);
  Counts counts;
  for (std::size_t qb = 0; qb < t.q_blocks; ++qb) {
    const std::size_t q0 = qb * o.tq, rows = std::min(o.tq, n - q0);
    std::fill(m.begin(), m.end(), kNegInf);
    std::fill(l.begin(), l.end(), 0.0f);
    std::fill(acc.begin(), acc.end(), 0.0f);
    // The query block's non-empty key blocks, in ascending order: its
    // partial and full lists merged.
    const std::uint32_t* partial = &t.kv_indices[qb * t.k_blocks];
    const std::uint32_t* full = &t.full_indices[qb * t.k_blocks];
    std::size_t ip = 0, jf = 0;
    const std::size_t np = t.kv_num[qb], nf = t.full_num[qb];
    while (ip < np || jf < nf) {
      const bool is_partial = jf == nf || (ip < np && partial[ip] < full[jf]);
      const std::size_t kb = is_partial ? partial[ip++] : full[jf++];
      const std::size_t k0 = kb * o.tk, cols = std::min(o.tk, n - k0);
      for (std::size_t r = 0; r < rows; ++r) {
        const float* qr = &q[(q0 + r) * d];
        for (std::size_t c = 0; c < cols; ++c) {
          const float* kc = &k[(k0 + c) * d];
          float dot = 0.0f;
          for (std::size_t e = 0; e < d; ++e) dot += qr[e] * kc[e];
          s[r * o.tk + c] = scale * dot;
        }
      }
      if (is_partial) {
        // The tile as a [rows x cols] view of row stride tk, its query row 0
        // at q0 - k0 relative to its key 0.
        const std::int64_t offset[] = {static_cast<std::int64_t>(q0) -
                                       static_cast<std::int64_t>(k0)};
        rlx::apply_mask(
            rlx::ScoreView::f32(s.data(), {1, 1, rows, cols}, {0, 0, o.tk}),
            mask.with_query_offsets(offset));
        ++counts.partial;
      } else {
        ++counts.full;
      }
      // Online softmax: rescale what the row has so far when its maximum
      // grows; a row with no kept key in this tile is left as it is.
      for (std::size_t r = 0; r < rows; ++r) {
        const float* sr = &s[r * o.tk];
        const float tile_max = *std::max_element(sr, sr + cols);
        if (tile_max == kNegInf) continue;
        const float new_m = std::max(m[r], tile_max);
        const float correction = std::exp(m[r] - new_m);  // 0 for -inf
        float* ar = &acc[r * d];
        l[r] *= correction;
        for (std::size_t e = 0; e < d; ++e) ar[e] *= correction;
        for (std::size_t c = 0; c < cols; ++c) {
          const float p = std::exp(sr[c] - new_m);  // 0 where masked
          if (p == 0.0f) continue;
          l[r] += p;
          const float* vc = &v[(k0 + c) * d];
          for (std::size_t e = 0; e < d; ++e) ar[e] += p * vc[e];
        }
        m[r] = new_m;
      }
    }
    for (std::size_t r = 0; r < rows; ++r) {
      // Every row keeps at least itself; a row with none would be zeros.
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      for (std::size_t e = 0; e < d; ++e) {
        out[(q0 + r) * d + e] = acc[r * d + e] * inv;
      }
    }
  }
  return counts;
}

// The reference: every element of Q K^T in double, the rule per element,
// softmax and P V in double.
std::vector<double> Reference(const Options& o, const std::vector<float>& q,
                              const std::vector<float>& k,
                              const std::vector<float>& v) {
  const std::size_t n = o.tokens, d = o.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> out(n * d, 0.0), row(n);
  for (std::size_t i = 0; i < n; ++i) {
    double max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (std::size_t e = 0; e < d; ++e) {
        dot += static_cast<double>(q[i * d + e]) * k[j * d + e];
      }
      row[j] = scale * dot;
      if (Kept(i, j, o.window)) max = std::max(max, row[j]);
    }
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      row[j] = Kept(i, j, o.window) ? std::exp(row[j] - max) : 0.0;
      sum += row[j];
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (row[j] == 0.0) continue;
      for (std::size_t e = 0; e < d; ++e) {
        out[i * d + e] += row[j] / sum * v[j * d + e];
      }
    }
  }
  return out;
}

// Tiles whose class disagrees with the rule per element: an empty tile with
// a kept element, a full one with a masked element, a partial one without
// both.
std::size_t Disagreements(const Options& o, const Tiles& t) {
  std::size_t bad = 0;
  for (std::size_t qb = 0; qb < t.q_blocks; ++qb) {
    std::vector<char> kind(t.k_blocks, 'e');
    for (std::size_t i = 0; i < t.kv_num[qb]; ++i) {
      kind[t.kv_indices[qb * t.k_blocks + i]] = 'p';
    }
    for (std::size_t i = 0; i < t.full_num[qb]; ++i) {
      kind[t.full_indices[qb * t.k_blocks + i]] = 'f';
    }
    for (std::size_t kb = 0; kb < t.k_blocks; ++kb) {
      std::size_t kept = 0, all = 0;
      for (std::size_t i = qb * o.tq; i < std::min(o.tokens, (qb + 1) * o.tq);
           ++i) {
        for (std::size_t j = kb * o.tk; j < std::min(o.tokens, (kb + 1) * o.tk);
             ++j) {
          kept += Kept(i, j, o.window);
          ++all;
        }
      }
      const char want = kept == 0 ? 'e' : kept == all ? 'f' : 'p';
      bad += kind[kb] != want;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const std::size_t n = o.tokens, d = o.head_dim;
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(n * d), k(n * d), v(n * d);
  for (std::vector<float>* x : {&q, &k, &v}) {
    for (float& e : *x) e = normal(rng);
  }
  // No window (W = 0) is plain causal.
  const rlx::MaskSpec mask = rlx::MaskSpec::causal().with_window_keys(o.window);
  Tiles t;
  std::vector<float> out(n * d);
  Counts counts;
  try {
    t.q_blocks = o.tq == 0 ? 0 : n / o.tq + (n % o.tq != 0);
    t.k_blocks = o.tk == 0 ? 0 : n / o.tk + (n % o.tk != 0);
    t.kv_num.resize(t.q_blocks);
    t.full_num.resize(t.q_blocks);
    t.kv_indices.resize(t.q_blocks * t.k_blocks);
    t.full_indices.resize(t.q_blocks * t.k_blocks);
    rlx::classify_blocks(mask, {1, 1, n, n}, 0, 0, o.tq, o.tk, t.view());
    counts = TiledAttention(o, mask, t, q, k, v, out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiled_prefill: %s\n", e.what());
    return 2;
  }
  const std::vector<double> want = Reference(o, q, k, v);
  double worst = 0.0;
  for (std::size_t i = 0; i < n * d; ++i) {
    worst = std::max(worst, std::fabs(out[i] - want[i]));
  }
  const std::size_t tiles = t.q_blocks * t.k_blocks;
  const std::size_t computed = counts.full + counts.partial;
  const std::size_t disagreements = Disagreements(o, t);
  std::printf(
      "tiled_prefill: %zu tokens, head_dim %zu, causal + window of %zu keys, "
      "%zu x %zu tiles\n",
      n, d, o.window, o.tq, o.tk);
  std::printf(
      "  block mask: %zu tiles: %zu full, %zu partial, %zu empty; %zu "
      "disagree with the per-element rule\n",
      tiles, counts.full, counts.partial, tiles - computed, disagreements);
  std::printf(
      "  skipped %zu of %zu block products of Q K^T (and as many of P V, "
      "%.1f%%); masked %zu partial tiles only\n",
      tiles - computed, tiles,
      tiles == 0 ? 0.0 : 100.0 * (tiles - computed) / tiles, counts.partial);
  const bool ok = worst <= o.tolerance && disagreements == 0;
  std::printf("  max |tiled - reference| = %.3g (tolerance %.3g): %s\n", worst,
              o.tolerance, ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
