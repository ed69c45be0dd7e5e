// SPDX-License-Identifier: MIT OR Apache-2.0
// Random combinations of every mask rule (rlx/scores.h), with the arrays
// they point to: shared by the tests of the kernels and of the block masks.
#ifndef RLX_TESTS_RULE_MASKS_H_
#define RLX_TESTS_RULE_MASKS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rlx/scores.h"

namespace rlx::testing {

// A MaskSpec with every array it points to.
struct RuleMask {
  MaskSpec mask;
  std::vector<std::int64_t> query_offsets, prefix_end, q_position, k_position;
  std::vector<std::int32_t> q_segment, k_segment;
  std::vector<float> keep_f32, bias;
  std::vector<std::uint8_t> keep_u8;
  std::vector<std::uint64_t> keep_bits;
  std::string name;
};

// A dense part's extents: each of the scores' or 1 (broadcast).
inline Shape4 DenseShape(std::mt19937_64& rng, const Shape4& s) {
  const auto pick = [&](std::size_t extent) {
    return rng() % 2 ? extent : std::size_t{1};
  };
  return {pick(s.batch), pick(s.heads), pick(s.q_len), s.k_len};
}

// A random combination of the rules (and of the kinds they sit on) for
// scores of shape `s`. `rm` must not move afterwards (the mask points into
// it).
inline void RandomRules(std::mt19937_64& rng, const Shape4& s, RuleMask& rm) {
  const auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  const auto below = [&](std::size_t n) { return n == 0 ? 0 : rng() % n; };
  const std::int64_t n = static_cast<std::int64_t>(s.k_len);
  const auto position = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % (hi - lo + 1));
  };
  std::string& name = rm.name;
  MaskSpec& m = rm.mask;
  switch (rng() % 8) {
    case 0:
      m = MaskSpec::none(), name = "none";
      break;
    case 1:
    case 2:
      m = MaskSpec::causal(), name = "causal";
      break;
    case 3: {
      const std::size_t w = below(s.k_len + 2);
      m = MaskSpec::sliding_window(w),
      name = "sliding_window(" + std::to_string(w) + ")";
      break;
    }
    case 4: {
      const std::size_t upper = s.k_len - 1, past = below(upper + 1);
      const std::size_t w = chance(50) ? 0 : below(s.k_len + 1);
      m = MaskSpec::decode(past, upper, w);
      name = "decode(" + std::to_string(past) + "," + std::to_string(upper) +
             "," + std::to_string(w) + ")";
      break;
    }
    case 5:
      rm.keep_u8.resize(s.batch * s.heads * s.q_len * s.k_len);
      for (auto& v : rm.keep_u8) v = chance(70) ? 1 : 0;
      m = MaskSpec::keep(rm.keep_u8.data(), s), name = "keep_u8";
      break;
    case 6: {
      const Shape4 ds = DenseShape(rng, s);
      rm.bias.resize(ds.batch * ds.heads * ds.q_len * ds.k_len);
      for (auto& v : rm.bias) {
        v = chance(15) ? -std::numeric_limits<float>::infinity()
                       : static_cast<float>(rng() % 9) - 4.0f;
      }
      m = MaskSpec::bias(rm.bias.data(), ds), name = "bias";
      break;
    }
    default: {
      const Shape4 ds = DenseShape(rng, s);
      const std::size_t words = (s.k_len + 63) / 64;
      rm.keep_bits.resize(ds.batch * ds.heads * ds.q_len * words);
      for (auto& v : rm.keep_bits) v = rng() & rng();
      m = MaskSpec::keep_bits(rm.keep_bits.data(), ds), name = "keep_bits";
    }
  }
  if (chance(30)) {
    rm.query_offsets.resize(s.batch);
    for (auto& v : rm.query_offsets) v = position(-n, n);
    m = m.with_query_offsets(rm.query_offsets.data());
    name += "+query_offsets";
  }
  if (chance(35)) {
    const std::size_t w = 1 + below(s.k_len + 1);
    m = m.with_window_keys(w),
    name += "+window_keys(" + std::to_string(w) + ")";
  }
  if (chance(35)) {
    const std::size_t c = 1 + below(s.k_len + 1);
    m = m.with_chunk(c), name += "+chunk(" + std::to_string(c) + ")";
  }
  if (chance(30)) {
    const std::size_t sk = 1 + below(4);
    m = m.with_sink_keys(sk), name += "+sink_keys(" + std::to_string(sk) + ")";
  }
  if (chance(25)) {
    rm.prefix_end.resize(s.batch);
    for (auto& v : rm.prefix_end) v = position(-2, n + 2);
    m = m.with_prefix(rm.prefix_end.data()), name += "+prefix";
  }
  if (chance(30)) {
    rm.q_segment.resize(s.batch * s.q_len);
    rm.k_segment.resize(s.batch * s.k_len);
    for (auto& v : rm.q_segment) v = static_cast<std::int32_t>(rng() % 3);
    for (auto& v : rm.k_segment) v = static_cast<std::int32_t>(rng() % 3);
    m = m.with_segments(rm.q_segment.data(), rm.k_segment.data());
    name += "+segments";
  }
  const bool q_pos = chance(25), k_pos = chance(25);
  if (q_pos) {
    rm.q_position.resize(s.batch * s.q_len);
    for (auto& v : rm.q_position) v = position(-3, n + 3);
  }
  if (k_pos) {
    rm.k_position.resize(s.batch * s.k_len);
    for (auto& v : rm.k_position) v = chance(15) ? -1 : position(0, n + 3);
  }
  if (q_pos || k_pos) {
    m = m.with_positions(q_pos ? rm.q_position.data() : nullptr,
                         k_pos ? rm.k_position.data() : nullptr);
    name += std::string("+positions(") + (q_pos ? "q" : "") +
            (k_pos ? "k" : "") + ")";
  }
  // A dense part on top of a structured kind.
  const bool dense_kind = m.kind == MaskKind::kKeepU8 ||
                          m.kind == MaskKind::kBias ||
                          m.kind == MaskKind::kKeepBits;
  if (!dense_kind && chance(35)) {
    const Shape4 ds = DenseShape(rng, s);
    const std::size_t elems = ds.batch * ds.heads * ds.q_len * ds.k_len;
    switch (rng() % 4) {
      case 0:
        rm.keep_f32.resize(elems);
        for (auto& v : rm.keep_f32) {
          v = chance(5) ? std::nanf("") : chance(70) ? 1.0f : 0.0f;
        }
        m = m.with_keep(rm.keep_f32.data(), ds), name += "+keep_f32";
        break;
      case 1:
        rm.keep_u8.resize(elems);
        for (auto& v : rm.keep_u8) v = chance(70) ? 3 : 0;
        m = m.with_keep(rm.keep_u8.data(), ds), name += "+keep_u8";
        break;
      case 2: {
        const std::size_t words = (s.k_len + 63) / 64;
        rm.keep_bits.resize(ds.batch * ds.heads * ds.q_len * words);
        for (auto& v : rm.keep_bits) v = rng() | rng();
        m = m.with_keep_bits(rm.keep_bits.data(), ds), name += "+keep_bits";
        break;
      }
      default:
        rm.bias.resize(elems);
        for (auto& v : rm.bias) {
          v = chance(10) ? -std::numeric_limits<float>::infinity()
                         : static_cast<float>(rng() % 7) - 3.0f;
        }
        m = m.with_bias(rm.bias.data(), ds), name += "+bias";
    }
  }
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_RULE_MASKS_H_
