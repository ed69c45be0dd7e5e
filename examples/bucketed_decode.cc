// SPDX-License-Identifier: MIT OR Apache-2.0
// What a graph executor's CPU backend does with rlx-attn-mask, end to end,
// on a toy decoder attention layer:
//
//  * a BucketLadder routes each decode step to a bucket, and a
//    BucketedCache holds one "compiled plan" per bucket, built the first
//    time a step lands there: the plan is everything a graph compiled at the
//    bucket's extent `upper` owns (padded K/V of upper + 1 rows, score and
//    mask buffers);
//  * each step pads the KV cache up to `upper` (K = [past keys | padding |
//    the new key at upper]), builds the step's decode mask, computes QK^T
//    over all upper + 1 keys as the compiled graph would, runs
//    rlx::masked_softmax, and P x V over the kept keys only
//    (rlx::kept_keys);
//  * every step is checked against an unpadded double-precision reference
//    computed without buckets: attention over the real keys only.
//
// The padding is never zero here: a plan's padded rows start as large
// random values and, from the second sequence on, hold the keys and values
// a longer earlier sequence left there, which is what a real executor's
// reused buffers hold. A mask that attended to padding would fail the check.
//
//   bucketed_decode [--tokens=N] [--sequences=S] [--heads=H] [--head-dim=D]
//                   [--ladder=pow2|geometric] [--min-bucket=M]
//                   [--mask=decode|dense] [--window=W] [--target=NAME]
//                   [--seed=X] [--tolerance=T] [--quiet]
//
// Exit status 0 when every step matched the reference within the tolerance.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/attn_mask.h"
#include "rlx/bucket_ladder.h"
#include "rlx/bucketed_cache.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/targets.h"

namespace {

struct Options {
  std::size_t tokens = 256;   // decode steps of the first sequence
  std::size_t sequences = 2;  // each next one is shorter: stale padding
  std::size_t heads = 4;
  std::size_t head_dim = 64;
  std::string ladder = "pow2";  // or "geometric"
  std::uint64_t min_bucket = 8;
  std::string mask = "decode";  // structured MaskSpec::decode, or "dense"
                                // (fill_bucket_decode_mask + a keep mask)
  std::size_t window = 0;       // sliding window in keys; 0 = causal
  std::string target;           // force a SIMD target ("" = automatic)
  std::uint64_t seed = 1;
  double tolerance = 1e-4;  // max |attention - reference|
  bool quiet = false;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr,
               "bucketed_decode: %s\n"
               "usage: bucketed_decode [--tokens=N] [--sequences=S] "
               "[--heads=H] [--head-dim=D] [--ladder=pow2|geometric] "
               "[--min-bucket=M] [--mask=decode|dense] [--window=W] "
               "[--target=NAME] [--seed=X] [--tolerance=T] [--quiet]\n",
               problem.c_str());
  std::exit(2);
}

std::uint64_t ParseCount(std::string_view flag, const std::string& value,
                         std::uint64_t min) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min) {
    Usage(std::string(flag) + " needs an integer >= " + std::to_string(min) +
          ", got \"" + value + "\"");
  }
  return v;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (flag == "--tokens") {
      o.tokens = ParseCount(flag, value, 1);
    } else if (flag == "--sequences") {
      o.sequences = ParseCount(flag, value, 1);
    } else if (flag == "--heads") {
      o.heads = ParseCount(flag, value, 1);
    } else if (flag == "--head-dim") {
      o.head_dim = ParseCount(flag, value, 1);
    } else if (flag == "--min-bucket") {
      o.min_bucket = ParseCount(flag, value, 1);
    } else if (flag == "--window") {
      o.window = ParseCount(flag, value, 0);
    } else if (flag == "--seed") {
      o.seed = ParseCount(flag, value, 0);
    } else if (flag == "--ladder" &&
               (value == "pow2" || value == "geometric")) {
      o.ladder = value;
    } else if (flag == "--mask" && (value == "decode" || value == "dense")) {
      o.mask = value;
    } else if (flag == "--target") {
      o.target = value;
    } else if (flag == "--tolerance") {
      char* end = nullptr;
      o.tolerance = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(o.tolerance > 0)) {
        Usage("--tolerance needs a positive number, got \"" + value + "\"");
      }
    } else if (arg == "--quiet") {
      o.quiet = true;
    } else {
      Usage("unknown argument \"" + arg + "\"");
    }
  }
  return o;
}

// Row-major [rows x cols] weights with N(0, 1/cols) entries, so that a
// projection of a unit-variance vector has unit variance.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<float> w;

  Matrix(std::size_t r, std::size_t c, std::mt19937_64& rng)
      : rows(r), cols(c), w(r * c) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(c)));
    for (float& x : w) x = normal(rng);
  }
  void Apply(std::span<const float> x, std::span<float> y) const {
    for (std::size_t r = 0; r < rows; ++r) {
      float acc = 0.0f;
      for (std::size_t c = 0; c < cols; ++c) acc += w[r * cols + c] * x[c];
      y[r] = acc;
    }
  }
};

float Dot(const float* a, const float* b, std::size_t n) {
  float acc = 0.0f;
  for (std::size_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// What a graph compiled for one bucket owns. Invariant between steps of one
// sequence: rows [0, synced) of k/v hold that sequence's cached keys and
// values; every other row holds padding (garbage or an older sequence's
// rows), which only the mask keeps out of the result.
struct Plan {
  std::uint64_t upper = 0;
  std::size_t heads = 0, head_dim = 0;
  std::vector<float> k, v;    // [heads][upper + 1][head_dim]
  std::vector<float> scores;  // [heads][upper + 1]
  std::vector<float> keep;    // [upper + 1], the dense mask form
  std::size_t sequence = SIZE_MAX;
  std::size_t synced = 0;
  std::size_t steps = 0;

  float* K(std::size_t h, std::size_t row) {
    return &k[(h * (upper + 1) + row) * head_dim];
  }
  float* V(std::size_t h, std::size_t row) {
    return &v[(h * (upper + 1) + row) * head_dim];
  }
};

// The real (unpadded) KV cache of the sequence being decoded.
struct KvCache {
  std::size_t heads, head_dim;
  std::vector<std::vector<float>> k, v;  // per head, rows of head_dim
  std::size_t size() const { return k.empty() ? 0 : k[0].size() / head_dim; }
};

struct Model {
  std::size_t heads, head_dim, d_model;
  Matrix wq, wk, wv, wo;
  Model(const Options& o, std::mt19937_64& rng)
      : heads(o.heads),
        head_dim(o.head_dim),
        d_model(o.heads * o.head_dim),
        wq(d_model, d_model, rng),
        wk(d_model, d_model, rng),
        wv(d_model, d_model, rng),
        wo(d_model, d_model, rng) {}
};

// Attention of one query over the real keys [lo, past) of `cache` and the
// new key/value, in double, with no bucket, padding or mask: what the
// padded, masked computation must reproduce.
void ReferenceAttention(const KvCache& cache, std::size_t lo, std::size_t past,
                        const float* q, const float* k_new, const float* v_new,
                        std::size_t h, double scale, std::vector<double>& out) {
  const std::size_t d = cache.head_dim;
  std::vector<double> s;
  for (std::size_t j = lo; j <= past; ++j) {
    const float* kj = j < past ? &cache.k[h][j * d] : k_new;
    double acc = 0;
    for (std::size_t i = 0; i < d; ++i) acc += double(q[i]) * kj[i];
    s.push_back(acc * scale);
  }
  const double max = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - max));
  out.assign(d, 0.0);
  for (std::size_t j = lo; j <= past; ++j) {
    const float* vj = j < past ? &cache.v[h][j * d] : v_new;
    const double p = s[j - lo] / sum;
    for (std::size_t i = 0; i < d; ++i) out[i] += p * vj[i];
  }
}

int Run(const Options& o) {
  if (!o.target.empty()) rlx::force_target(o.target);
  std::mt19937_64 rng(o.seed);
  const Model model(o, rng);
  const std::size_t d = o.head_dim, dm = model.d_model;
  const float scale = 1.0f / std::sqrt(float(d));

  // Keys run are the past length, at least 1 (the seed's convention), so
  // the ladder must reach tokens - 1.
  const std::uint64_t max_key = std::max<std::uint64_t>(1, o.tokens - 1);
  rlx::BucketLadder ladder = o.ladder == "pow2"
                                 ? rlx::BucketLadder::power_of_two(
                                       std::min(o.min_bucket, max_key), max_key)
                                 : rlx::BucketLadder::geometric(max_key, 4);

  std::uniform_real_distribution<float> garbage(-8.0f, 8.0f);
  std::vector<std::uint64_t> compile_order;
  rlx::BucketedCache<Plan> plans(std::move(ladder), [&](std::uint64_t upper) {
    // "Compiling" the bucket's graph: buffers at its extent. Padding starts
    // as large garbage so that attending to it would show.
    compile_order.push_back(upper);
    Plan p;
    p.upper = upper;
    p.heads = o.heads;
    p.head_dim = d;
    p.k.resize(o.heads * (upper + 1) * d);
    p.v.resize(p.k.size());
    for (float& x : p.k) x = garbage(rng);
    for (float& x : p.v) x = garbage(rng);
    p.scores.resize(o.heads * (upper + 1));
    p.keep.resize(upper + 1);
    return p;
  });

  std::vector<float> x(dm), q(dm), k(dm), v(dm), attn(dm), y(dm);
  std::vector<double> ref;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  double worst = 0.0, attention_seconds = 0.0, softmax_seconds = 0.0;
  std::size_t steps = 0, failures = 0;

  for (std::size_t seq = 0; seq < o.sequences; ++seq) {
    // Each later sequence is shorter, so it decodes into plans whose
    // padding holds the longer sequence's keys.
    const std::size_t tokens =
        std::max<std::size_t>(1, o.tokens * (o.sequences - seq) / o.sequences);
    KvCache cache{o.heads, d, std::vector<std::vector<float>>(o.heads),
                  std::vector<std::vector<float>>(o.heads)};
    for (float& e : x) e = normal(rng);

    for (std::size_t t = 0; t < tokens; ++t, ++steps) {
      const std::size_t past = cache.size();
      model.wq.Apply(x, q);
      model.wk.Apply(x, k);
      model.wv.Apply(x, v);

      const auto start = std::chrono::steady_clock::now();
      auto [upper64, plan] = plans.get(std::max<std::uint64_t>(past, 1));
      const std::size_t upper = upper64, k_len = upper + 1;
      if (plan.sequence != seq) {  // a new sequence: nothing synced yet
        plan.sequence = seq;
        plan.synced = 0;
      }
      ++plan.steps;
      // Pad the cache up to the bucket: copy the rows this plan has not
      // seen yet, and the new token's key/value into slot `upper`.
      for (std::size_t h = 0; h < o.heads; ++h) {
        for (std::size_t j = plan.synced; j < past; ++j) {
          std::copy_n(&cache.k[h][j * d], d, plan.K(h, j));
          std::copy_n(&cache.v[h][j * d], d, plan.V(h, j));
        }
        std::copy_n(&k[h * d], d, plan.K(h, upper));
        std::copy_n(&v[h * d], d, plan.V(h, upper));
      }
      plan.synced = past;

      // The step's mask: the structured decode mask, or the seed's dense
      // keep mask built by the SIMD fill.
      rlx::MaskSpec mask;
      if (o.mask == "decode") {
        mask = rlx::MaskSpec::decode(past, upper, o.window);
      } else {
        rlx::fill_bucket_decode_mask(plan.keep, past, upper, o.window);
        mask = rlx::MaskSpec::keep(plan.keep.data(), {1, 1, 1, k_len});
      }

      // QK^T over every key of the bucket, as the compiled graph does.
      for (std::size_t h = 0; h < o.heads; ++h) {
        for (std::size_t j = 0; j < k_len; ++j) {
          plan.scores[h * k_len + j] = Dot(&q[h * d], plan.K(h, j), d);
        }
      }
      const rlx::ScoreView view =
          rlx::ScoreView::f32(plan.scores.data(), {1, o.heads, 1, k_len});
      const auto softmax_start = std::chrono::steady_clock::now();
      rlx::masked_softmax(view, mask, {.scale = scale});
      softmax_seconds += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - softmax_start)
                             .count();

      // P x V over the kept keys only.
      const rlx::KeptKeys kept = rlx::kept_keys(mask, 0, 0, 1, k_len);
      std::fill(attn.begin(), attn.end(), 0.0f);
      for (std::size_t h = 0; h < o.heads; ++h) {
        const float* p = &plan.scores[h * k_len];
        float* out = &attn[h * d];
        for (std::size_t i = 0; i < kept.count; ++i) {
          for (std::size_t j = kept.intervals[i].begin;
               j < kept.intervals[i].end; ++j) {
            const float* vj = plan.V(h, j);
            for (std::size_t e = 0; e < d; ++e) out[e] += p[j] * vj[e];
          }
        }
      }
      attention_seconds += std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();

      // Check: probabilities on padding are exactly 0, and the result is
      // the unpadded reference's.
      const std::size_t lo =
          o.window == 0 ? 0 : past - std::min(o.window, past);
      double step_worst = 0.0;
      bool padding_attended = false;
      for (std::size_t h = 0; h < o.heads; ++h) {
        for (std::size_t j = 0; j < k_len; ++j) {
          const bool real = (j >= lo && j < past) || j == upper;
          if (!real && plan.scores[h * k_len + j] != 0.0f) {
            padding_attended = true;
          }
        }
        ReferenceAttention(cache, lo, past, &q[h * d], &k[h * d], &v[h * d], h,
                           scale, ref);
        for (std::size_t e = 0; e < d; ++e) {
          step_worst = std::max(step_worst, std::abs(attn[h * d + e] - ref[e]));
        }
      }
      worst = std::max(worst, step_worst);
      if (padding_attended || !(step_worst <= o.tolerance)) {
        ++failures;
        std::fprintf(stderr,
                     "step %zu (sequence %zu, past %zu, bucket upper %zu): "
                     "max |diff| %.3g%s\n",
                     t, seq, past, upper, step_worst,
                     padding_attended ? ", padding attended" : "");
      }

      // Append the token to the real cache, and feed the layer's output
      // (plus noise, so that tokens differ) to the next step.
      for (std::size_t h = 0; h < o.heads; ++h) {
        cache.k[h].insert(cache.k[h].end(), &k[h * d], &k[h * d] + d);
        cache.v[h].insert(cache.v[h].end(), &v[h * d], &v[h * d] + d);
      }
      model.wo.Apply(attn, y);
      for (std::size_t e = 0; e < dm; ++e) x[e] = std::tanh(y[e]) + normal(rng);
    }
  }

  const std::string window =
      o.window == 0 ? "" : ", window " + std::to_string(o.window);
  std::printf(
      "bucketed_decode: %zu steps over %zu sequence(s), %zu heads x %zu, "
      "%s ladder, %s mask%s, target %s\n",
      steps, o.sequences, o.heads, d, o.ladder.c_str(), o.mask.c_str(),
      window.c_str(), rlx::active_target().c_str());
  std::printf(
      "  attention path: %.0f tokens/s (%.2f us/token, of which "
      "masked_softmax %.2f us; QK^T and P x V here are plain loops)\n",
      steps / attention_seconds, 1e6 * attention_seconds / steps,
      1e6 * softmax_seconds / steps);
  std::printf("  compiled %zu of %zu buckets:", plans.built_count(),
              plans.ladder().size());
  for (std::uint64_t upper : compile_order)
    std::printf(" %llu", static_cast<unsigned long long>(upper));
  std::printf("\n");
  if (!o.quiet) {
    for (std::size_t i = 0; i < plans.ladder().size(); ++i) {
      const rlx::Bucket& b = plans.ladder()[i];
      if (!plans.is_built(i)) continue;
      std::printf("    bucket [%llu, %llu) upper %llu: %zu steps\n",
                  static_cast<unsigned long long>(b.start),
                  static_cast<unsigned long long>(b.end),
                  static_cast<unsigned long long>(b.upper()),
                  plans.get(b.start).second.steps);
    }
  }
  std::printf(
      "  max |attention - unpadded reference| = %.3g (bound %.3g): %s\n", worst,
      o.tolerance, failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  try {
    return Run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bucketed_decode: %s\n", e.what());
    return 1;
  }
}
