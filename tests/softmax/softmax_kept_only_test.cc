// SPDX-License-Identifier: MIT OR Apache-2.0
// Kept-only writes (SoftmaxOptions::zero_masked = false): keys outside a
// row's kept_keys keep their bits, in place and out of place, and every key
// inside it is bit for bit the default mode's, on random masks with sinks
// and ALiBi, on every compiled target and row type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/softmax/softmax_ext_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::ExtMask;
using ::rlx::testing::kTypes;
using ::rlx::testing::RandomMask;
using ::rlx::testing::RandomScores;
using ::rlx::testing::RandomSinks;
using ::rlx::testing::ShapeName;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// zero_masked = false: keys outside the row's kept_keys keep their bits (in
// place: the scores; out of place: whatever out held), every key inside it,
// masked ones included (kept_keys is a superset for explicit positions,
// segments, dense parts and biases), is bit for bit the default mode's; on
// random masks (dense, bit, bias, positions, segments) with sinks and
// ALiBi, every row type.
TEST_P(SoftmaxExtTest, KeptOnlyWritesMatchTheDefaultInsideKeptKeys) {
  std::mt19937_64 rng(555);
  const int iterations = testing::ScaledIterations(300);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    SoftmaxOptions def;
    def.scale = 0.5f;
    def.softcap = rng() % 3 == 0 ? 4.0f : 0.0f;
    if (rng() % 2) def.sink_logits = sinks.data();
    if (rng() % 2) def.alibi_slopes = slopes.data();
    SoftmaxOptions kept_only = def;
    kept_only.zero_masked = false;
    for (ScoreType type : kTypes) {
      testing::Tensor t = RandomScores(rng, type, s);
      const std::size_t es = testing::ElemSize(type);
      // Each mode runs on the same buffer (the same alignment: on AVX-512
      // the head before the first aligned vector sums apart, so rows at
      // other alignments may round their sums differently).
      std::vector<std::uint8_t> bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      const ScoreView in_place = testing::SameViewIn(t, bytes);
      masked_softmax(in_place, em.mask, def);
      const std::vector<std::uint8_t> full_bytes = bytes;
      std::copy(t.bytes.begin(), t.bytes.end(), bytes.begin());
      masked_softmax(in_place, em.mask, kept_only);
      // Out of place into a tensor of sentinels, likewise.
      testing::Tensor sentinel = testing::MakeTensor(type, s, 0, 0);
      std::vector<std::uint8_t> out_bytes = sentinel.bytes;
      ScoreView out = sentinel.view;
      out.data =
          out_bytes.data() + (static_cast<std::uint8_t*>(sentinel.view.data) -
                              sentinel.bytes.data());
      masked_softmax(before, out, em.mask, def, RowRange::all(s));
      const std::vector<std::uint8_t> full_out_bytes = out_bytes;
      std::copy(sentinel.bytes.begin(), sentinel.bytes.end(),
                out_bytes.begin());
      masked_softmax(before, out, em.mask, kept_only, RowRange::all(s));
      const std::string where = std::string(testing::TypeName(type)) + " " +
                                em.name + " " + ShapeName(s) + " iteration " +
                                std::to_string(it);
      const auto at =
          [](const std::vector<std::uint8_t>& v, const ScoreView& view,
             const std::vector<std::uint8_t>& view_bytes, std::size_t off) {
            return v.data() +
                   (static_cast<const std::uint8_t*>(view.data) -
                    view_bytes.data()) +
                   off;
          };
      for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
          for (std::size_t q = 0; q < s.q_len; ++q) {
            const KeptKeys written = kept_keys(em.mask, b, q, s.q_len, s.k_len);
            for (std::size_t k = 0; k < s.k_len; ++k) {
              const std::size_t off = testing::Offset(before, b, h, q, k) * es;
              const std::size_t out_off = testing::Offset(out, b, h, q, k) * es;
              const bool kept = testing::Contains(written, k);
              const std::uint8_t* got = at(bytes, in_place, bytes, off);
              const std::uint8_t* expected =
                  kept ? at(full_bytes, in_place, bytes, off)
                       : at(before_bytes, before, before_bytes, off);
              ASSERT_EQ(std::memcmp(got, expected, es), 0)
                  << where << " in place, key " << k
                  << (kept ? " inside" : " outside") << " kept_keys";
              const std::uint8_t* got_out =
                  at(out_bytes, out, out_bytes, out_off);
              if (kept) {
                ASSERT_EQ(std::memcmp(
                              got_out,
                              at(full_out_bytes, out, out_bytes, out_off), es),
                          0)
                    << where << " out of place, key " << k
                    << " inside kept_keys";
              } else {
                for (std::size_t i = 0; i < es; ++i) {
                  ASSERT_EQ(got_out[i], testing::kSentinel)
                      << where << " out of place, key " << k
                      << " outside kept_keys";
                }
              }
            }
          }
    }
  }
}

}  // namespace
}  // namespace rlx
