// SPDX-License-Identifier: MIT OR Apache-2.0
// What the tests of apply_mask and masked_softmax
// (tests/scores/score_kernels_*_test.cc) share: configurations of one checked
// run (row type, shape, mask, options, gaps between rows that hold a
// sentinel, misalignment, scores), run whole or over row ranges split at odd
// places, in place or out of place, against the scalar oracle
// (tests/reference/reference.h); dense masks, structured masks and
// reproducible scores to run them on.
#ifndef RLX_TESTS_SCORES_SCORE_KERNELS_CASES_H_
#define RLX_TESTS_SCORES_SCORE_KERNELS_CASES_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"

namespace rlx::testing {

// Sets every element (not the gaps) of `v` to f(b, h, q, k).
inline void FillScores(
    const ScoreView& v,
    const std::function<float(std::size_t, std::size_t, std::size_t,
                              std::size_t)>& f) {
  const Shape4& s = v.shape;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k)
          testing::Set(v, Offset(v, b, h, q, k), f(b, h, q, k));
}

// A dense mask buffer of `shape` (1 = broadcast), contiguous.
struct DenseMask {
  std::vector<float> f32;
  std::vector<std::uint8_t> u8;
  MaskSpec spec;
};

inline DenseMask MakeDense(MaskKind kind, const Shape4& shape,
                           std::mt19937& rng, double keep_probability) {
  DenseMask d;
  const std::size_t n = shape.batch * shape.heads * shape.q_len * shape.k_len;
  std::bernoulli_distribution keep(keep_probability);
  std::uniform_real_distribution<float> bias(-4.0f, 4.0f);
  if (kind == MaskKind::kKeepU8) {
    d.u8.resize(n);
    for (auto& m : d.u8)
      m = keep(rng) ? static_cast<std::uint8_t>(1 + rng() % 255) : 0;
    d.spec = MaskSpec::keep(d.u8.data(), shape);
  } else {
    d.f32.resize(n);
    for (auto& m : d.f32) {
      if (kind == MaskKind::kKeepF32) {
        // Values on both sides of 0.5, and NaN (masked: fails closed).
        const float kept[] = {1.0f, 0.5f, 7.0f};
        const float masked[] = {0.0f, 0.49999997f, -1.0f, NAN};
        m = keep(rng) ? kept[rng() % 3] : masked[rng() % 4];
      } else {
        m = keep(rng) ? bias(rng) : -kInf;
      }
    }
    d.spec = kind == MaskKind::kKeepF32 ? MaskSpec::keep(d.f32.data(), shape)
                                        : MaskSpec::bias(d.f32.data(), shape);
  }
  return d;
}

// One checked run of apply_mask and masked_softmax on one configuration.
struct Config {
  ScoreType type = ScoreType::kF32;
  Shape4 shape;
  MaskSpec mask;
  SoftmaxOptions options;
  std::size_t gap = 3, misalign = 1;
  float fill = -kInf;
  std::function<float(std::size_t, std::size_t, std::size_t, std::size_t)>
      scores;
  std::string name;
};

inline std::string Describe(const Config& c) {
  const Shape4& s = c.shape;
  return c.name + " type=" + TypeName(c.type) + " shape=[" +
         std::to_string(s.batch) + "," + std::to_string(s.heads) + "," +
         std::to_string(s.q_len) + "," + std::to_string(s.k_len) +
         "] kind=" + std::to_string(static_cast<int>(c.mask.kind)) +
         " window=" + std::to_string(c.mask.window) +
         " gap=" + std::to_string(c.gap) +
         " misalign=" + std::to_string(c.misalign);
}

// Splits the rows at odd places and runs `run` on each piece.
inline void ForSplitRows(std::size_t rows,
                         const std::function<void(RowRange)>& run) {
  const std::size_t cut1 = rows / 3, cut2 = std::max(cut1, rows - rows / 5);
  run({0, cut1});
  run({cut1, cut2});
  run({cut2, rows});
}

inline void CheckApply(const Config& c, bool split) {
  Tensor got = MakeTensor(c.type, c.shape, c.gap, c.misalign);
  FillScores(got.view, c.scores);
  std::vector<std::uint8_t> want_bytes;
  const ScoreView want = testing::SameViewIn(got, want_bytes);
  if (split) {
    ForSplitRows(c.shape.rows(),
                 [&](RowRange r) { apply_mask(got.view, c.mask, r, c.fill); });
  } else {
    apply_mask(got.view, c.mask, c.fill);
  }
  reference::apply_mask(want, c.mask, RowRange::all(c.shape), c.fill);
  ASSERT_EQ("", testing::ApplyMismatch(got.view, want, c.mask)) << Describe(c);
  ASSERT_EQ("", UntouchedOutside(got, got.view)) << Describe(c);
}

inline void CheckSoftmax(const Config& c, bool split, bool out_of_place) {
  Tensor in = MakeTensor(c.type, c.shape, c.gap, c.misalign);
  FillScores(in.view, c.scores);
  std::vector<std::uint8_t> before_bytes, want_bytes;
  const ScoreView before = testing::SameViewIn(in, before_bytes);
  const ScoreView want = testing::SameViewIn(in, want_bytes);
  reference::masked_softmax(want, want, c.mask, c.options,
                            RowRange::all(c.shape));
  Tensor out_storage = MakeTensor(c.type, c.shape, c.gap + 1, c.misalign + 2);
  const ScoreView out = out_of_place ? out_storage.view : in.view;
  const auto run = [&](RowRange r) {
    masked_softmax(in.view, out, c.mask, c.options, r);
  };
  if (split) {
    ForSplitRows(c.shape.rows(), run);
  } else {
    run(RowRange::all(c.shape));
  }
  if (out_of_place) {
    ASSERT_EQ(in.bytes, before_bytes) << "out-of-place softmax wrote its input";
  }
  ASSERT_EQ("", SoftmaxMismatch(before, out, want, c.mask, c.options))
      << Describe(c);
  ASSERT_EQ("", UntouchedOutside(out_of_place ? out_storage : in, out))
      << Describe(c);
}

inline std::vector<MaskSpec> StructuredMasks(std::size_t k_len) {
  std::vector<MaskSpec> masks = {MaskSpec::none(),
                                 MaskSpec::causal(),
                                 MaskSpec::sliding_window(0),
                                 MaskSpec::sliding_window(1),
                                 MaskSpec::sliding_window(3),
                                 MaskSpec::sliding_window(k_len)};
  const std::size_t upper = k_len - 1;
  for (std::size_t past : {std::size_t{0}, upper / 2, upper}) {
    for (std::size_t window : {std::size_t{0}, std::size_t{2}, upper + 1}) {
      masks.push_back(MaskSpec::decode(past, upper, window));
    }
  }
  return masks;
}

// A reproducible score in [-8, 8) from a key (splitmix64).
inline float RandomScore(std::uint64_t seed) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (16.0f / (1 << 24)) - 8.0f;
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_SCORES_SCORE_KERNELS_CASES_H_
