// SPDX-License-Identifier: MIT OR Apache-2.0
// The mask rules over logical positions (docs/SEMANTICS.md, "Mask rules over
// logical positions"): every kernel and kept_keys against the per-element
// oracle on random combinations of every rule, and cases written from the
// peers' own definitions (llama.cpp's SWA and chunked SWA, Llama 4 chunks,
// Gemma 3 prefixes, StreamingLLM, ring and paged KV caches, packed documents).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/mask/mask_rows.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/mask/bad_mask_cases.h"
#include "tests/mask/rule_masks.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::rlx::testing::RandomRules;
using ::rlx::testing::RuleMask;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

bool RulesOnlyImplicit(const MaskSpec& m) {
  return m.block_list.num_blocks == nullptr && m.k_position == nullptr &&
         m.q_segment == nullptr && m.q_group == nullptr &&
         m.dense == DenseKind::kNone && m.key_indices == nullptr &&
         (m.kind == MaskKind::kNone || m.kind == MaskKind::kCausal ||
          m.kind == MaskKind::kSlidingWindow || m.kind == MaskKind::kDecode);
}

// kept_keys of every row: sorted, disjoint, non-empty intervals holding
// every kept key, and nothing else where the rules are interval-exact.
std::string KeptKeysMismatch(const MaskSpec& mask, const Shape4& s) {
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t q = 0; q < s.q_len; ++q) {
      const KeptKeys kept = kept_keys(mask, b, q, s.q_len, s.k_len);
      const std::string row =
          "row (" + std::to_string(b) + "," + std::to_string(q) + ")";
      if (kept.count > KeptKeys::kMaxIntervals) return row + ": count";
      std::vector<bool> in(s.k_len, false);
      for (std::size_t i = 0; i < kept.count; ++i) {
        const KeyInterval& iv = kept.intervals[i];
        if (iv.begin >= iv.end || iv.end > s.k_len ||
            (i > 0 && kept.intervals[i - 1].end >= iv.begin)) {
          return row + ": interval " + std::to_string(i) + " is [" +
                 std::to_string(iv.begin) + ", " + std::to_string(iv.end) + ")";
        }
        for (std::size_t k = iv.begin; k < iv.end; ++k) in[k] = true;
      }
      for (std::size_t h = 0; h < s.heads; ++h) {
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const bool kept_here = reference::is_kept(mask, s, b, h, q, k);
          if (kept_here && !in[k]) {
            return row + ": kept key " + std::to_string(k) +
                   " outside the intervals";
          }
          if (!kept_here && in[k] && RulesOnlyImplicit(mask)) {
            return row + ": masked key " + std::to_string(k) +
                   " inside exact intervals";
          }
        }
      }
    }
  }
  return "";
}

// apply_mask and masked_softmax (in place, full and partial row ranges) on
// strided, misaligned views of every row type, against the oracle.
// Kept-only writes (zero_masked = false) of `options` on the buffer that
// `bytes` / `view` hold the default mode's result in (so at the same
// alignment): every key inside its row's kept_keys equals the default
// mode's, bit for bit; every key outside it keeps its score from `t`.
std::string KeptOnlyMismatch(const testing::Tensor& t,
                             std::vector<std::uint8_t>& bytes,
                             const ScoreView& view, const MaskSpec& mask,
                             SoftmaxOptions options) {
  const std::vector<std::uint8_t> full = bytes;
  std::copy(t.bytes.begin(), t.bytes.end(), bytes.begin());
  options.zero_masked = false;
  masked_softmax(view, mask, options);
  const Shape4& s = view.shape;
  const std::size_t es = testing::ElemSize(view.type);
  const std::size_t base = static_cast<std::size_t>(
      static_cast<const std::uint8_t*>(view.data) - bytes.data());
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q) {
        const KeptKeys written = kept_keys(mask, b, q, s.q_len, s.k_len);
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const std::size_t off = base + testing::Offset(view, b, h, q, k) * es;
          // With a key list or a block list, only the row's listed keys
          // inside kept_keys.
          const bool inside = testing::Contains(written, k) &&
                              reference::is_listed(mask, b, h, q, k);
          const std::vector<std::uint8_t>& want = inside ? full : t.bytes;
          if (std::memcmp(bytes.data() + off, want.data() + off, es) != 0) {
            return "row (" + std::to_string(b) + "," + std::to_string(h) + "," +
                   std::to_string(q) + ") key " + std::to_string(k) +
                   (inside ? " inside kept_keys differs from the default mode"
                           : " outside kept_keys was written");
          }
        }
      }
  return "";
}

std::string KernelMismatch(const RuleMask& rm, const Shape4& s,
                           std::mt19937_64& rng) {
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    testing::Tensor t = testing::MakeTensor(type, s, rng() % 3, rng() % 3);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q)
          for (std::size_t k = 0; k < s.k_len; ++k) {
            testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                         static_cast<float>(rng() % 2001) / 100.0f - 10.0f);
          }
    const std::string where =
        std::string(testing::TypeName(type)) + " " + rm.name + ": ";
    const RowRange all = RowRange::all(s);
    const std::size_t first = rng() % (all.end + 1);
    const RowRange part{first, first + rng() % (all.end - first + 1)};
    for (const RowRange rows : {all, part}) {
      std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      // apply_mask with a finite fill, so that bits compare exactly.
      ScoreView got = testing::SameViewIn(t, got_bytes);
      ScoreView want = testing::SameViewIn(t, want_bytes);
      apply_mask(got, rm.mask, rows, -1e9f);
      reference::apply_mask(want, rm.mask, rows, -1e9f);
      std::string e = testing::ApplyMismatch(got, want, rm.mask);
      if (!e.empty()) return where + "apply_mask " + e;
      // masked_softmax with scale and (sometimes) softcap.
      const SoftmaxOptions options{.scale = 0.5f,
                                   .softcap = rng() % 2 ? 0.0f : 5.0f};
      got = testing::SameViewIn(t, got_bytes);
      want = testing::SameViewIn(t, want_bytes);
      masked_softmax(got, rm.mask, options, rows);
      reference::masked_softmax(want, want, rm.mask, options, rows);
      if (rows.begin == all.begin && rows.end == all.end) {
        e = testing::SoftmaxMismatch(before, got, want, rm.mask, options);
        if (!e.empty()) return where + "masked_softmax " + e;
        e = KeptOnlyMismatch(t, got_bytes, got, rm.mask, options);
        if (!e.empty()) return where + "kept-only masked_softmax " + e;
      } else {
        // Rows outside the range keep their scores, bit for bit.
        const std::size_t es = testing::ElemSize(type);
        for (std::size_t r = 0; r < all.end; ++r) {
          if (r >= rows.begin && r < rows.end) continue;
          const std::size_t b = r / (s.heads * s.q_len),
                            h = (r / s.q_len) % s.heads, q = r % s.q_len;
          const std::size_t off = testing::Offset(got, b, h, q, 0) * es;
          if (std::memcmp(static_cast<const std::uint8_t*>(got.data) + off,
                          static_cast<const std::uint8_t*>(before.data) + off,
                          s.k_len * es) != 0) {
            return where + "masked_softmax wrote row " + std::to_string(r) +
                   " outside rows [" + std::to_string(rows.begin) + ", " +
                   std::to_string(rows.end) + ")";
          }
        }
      }
      // Gaps and the bytes around the view keep their sentinel.
      testing::Tensor g;
      g.bytes = got_bytes;
      g.view = got;
      g.view.data =
          g.bytes.data() +
          (static_cast<const std::uint8_t*>(got.data) - got_bytes.data());
      e = testing::UntouchedOutside(g, g.view);
      if (!e.empty()) return where + e;
    }
  }
  return "";
}

// detail::CallKeptKeys, the softmax row loops' per-call KeptKeysOf: the
// same intervals for every row of every shape, its inline moving interval
// taken for exactly the calls it claims (causal, sliding windows and
// window_keys at the ends of their range: one key, the whole span, and
// beyond it; query lengths above and below the key length), and
// KeptKeysOf itself for every other rule. Plain C++, so one test, not one
// per target: the kernels' results go through the per-target tests below.
TEST(CallKeptKeysTest, EveryRowMatchesKeptKeysOf) {
  const std::int64_t offsets[] = {-3, 5};
  const std::int64_t prefix[] = {2, 4};
  const std::int32_t segments[128] = {};
  const std::size_t huge = static_cast<std::size_t>(INT64_MAX);
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1}, {1, 7}, {7, 1}, {5, 9}, {9, 5}, {16, 16}, {3, 40}};
  std::size_t moving_calls = 0;
  for (const auto& [q_len, k_len] : shapes) {
    const std::size_t span = q_len + k_len;
    std::vector<std::pair<MaskSpec, bool>> cases = {
        {MaskSpec::none(), true},
        {MaskSpec::causal(), true},
        {MaskSpec::decode(k_len / 2, k_len - 1), false},
        {MaskSpec::causal().with_chunk(3), false},
        {MaskSpec::causal().with_sink_keys(2), false},
        {MaskSpec::causal().with_query_offsets(offsets), false},
        {MaskSpec::causal().with_prefix(prefix), false},
        {MaskSpec::causal().with_segments(segments, segments), false},
    };
    for (const std::size_t w :
         {std::size_t{1}, std::size_t{2}, k_len - 1, k_len, span - 1, span,
          span + 1, huge - 1, huge}) {
      cases.push_back({MaskSpec::sliding_window(w), true});
      cases.push_back({MaskSpec::none().with_window_keys(w), true});
      cases.push_back({MaskSpec::causal().with_window_keys(w), true});
      cases.push_back({MaskSpec::sliding_window(w).with_window_keys(3), true});
    }
    for (const auto& [mask, moving] : cases) {
      const detail::Rules rules = detail::RulesOf(mask);
      const detail::CallKeptKeys call(mask, rules, q_len, k_len);
      const std::string name = "q_len " + std::to_string(q_len) + ", k_len " +
                               std::to_string(k_len) + ", kind " +
                               std::to_string(static_cast<int>(mask.kind)) +
                               ", window " + std::to_string(mask.window) +
                               ", window_keys " +
                               std::to_string(mask.window_keys);
      EXPECT_EQ(call.moving(), moving) << name;
      moving_calls += call.moving();
      for (std::size_t b = 0; b < 2; ++b) {
        for (std::size_t q = 0; q < q_len; ++q) {
          EXPECT_EQ(call.Of(b, q),
                    detail::KeptKeysOf(mask, rules, b, q, q_len, k_len))
              << name << ", row (" << b << ", " << q << ")";
        }
      }
    }
  }
  EXPECT_GT(moving_calls, 0u);
}

class MaskRulesTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(MaskRulesTest);

// Small shapes, every rule and combination drawn at random, every kernel
// and row type against the oracle; kept_keys against it too.
TEST_P(MaskRulesTest, EveryCombinationMatchesTheOracleOnSmallShapes) {
  std::mt19937_64 rng(20261130);
  const int iterations = testing::ScaledIterations(1500);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 2, 1 + rng() % 4, 1 + rng() % 12};
    RuleMask rm;
    RandomRules(rng, s, rm);
    const std::string shape =
        " shape [" + std::to_string(s.batch) + "," + std::to_string(s.heads) +
        "," + std::to_string(s.q_len) + "," + std::to_string(s.k_len) +
        "] iteration " + std::to_string(it);
    ASSERT_EQ(KeptKeysMismatch(rm.mask, s), "") << rm.name << shape;
    ASSERT_EQ(KernelMismatch(rm, s, rng), "") << shape;
  }
}

// Every combination of the one list's kinds, the rules and the dense parts
// (testing::EveryRuleCombination: today 8 kinds x 1024 rule sets, the 4
// structured kinds with each of the 5 dense parts, each with none, a key
// list or a block list in turn: 24576), each with random
// values, on one small shape with two batches and two heads: every kernel
// and row type against the oracle, and kept_keys.
TEST_P(MaskRulesTest, EveryCombinationMatchesTheOracleExhaustively) {
  std::mt19937_64 rng(20261201);
  const Shape4 s{2, 2, 2, 7};
  const std::vector<testing::RuleCombination> all =
      testing::EveryRuleCombination();
  ASSERT_GE(all.size(), kinds::kMaskKindCount * testing::kRuleSets);
  // Every combination at full scale (the native legs); the legs that scale
  // their tests down (sanitizers, qemu) take every k-th, k = 1 / scale.
  const std::size_t stride =
      static_cast<std::size_t>(1.0 / testing::TestScale() + 0.5);
  std::size_t tested = 0;
  for (std::size_t i = 0; i < all.size(); i += stride < 1 ? 1 : stride) {
    RuleMask rm;
    testing::RulesOf(rng, s, all[i], rm);
    ASSERT_EQ(KeptKeysMismatch(rm.mask, s), "") << rm.name << " #" << i;
    ASSERT_EQ(KernelMismatch(rm, s, rng), "") << " #" << i;
    ++tested;
  }
  EXPECT_GE(tested, all.size() / 4);
}

// Positions at the ends of int64 and beyond 2^53 (where a double no longer
// holds every integer): the combinations with explicit positions, query
// offsets or prefixes, their positions moved so that the largest drawn one
// lands on INT64_MAX, or around INT64_MIN (saturated), or around +-2^53.
// Every kernel and row type against the oracle (128-bit arithmetic).
TEST_P(MaskRulesTest, PositionsAtTheEndsOfInt64MatchTheOracle) {
  std::mt19937_64 rng(64);
  const Shape4 s{2, 2, 2, 7};
  const std::int64_t n = static_cast<std::int64_t>(s.k_len);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t k2p53 = std::int64_t{1} << 53;
  const std::int64_t origins[] = {kMax - (n + 3), kMax - (n + 3) / 2, kMin,
                                  kMin + n,       k2p53 - n / 2,      k2p53 + 1,
                                  -k2p53};
  const unsigned positional = testing::kQueryOffsets | testing::kPrefix |
                              testing::kQPositions | testing::kKPositions;
  const std::vector<testing::RuleCombination> all =
      testing::EveryRuleCombination();
  // Every 20th combination, from a start that moves with each origin: about
  // 8,000 masks spread over the kinds, rule sets and dense parts, which the
  // sanitizer and emulated legs run in seconds.
  constexpr std::size_t kStride = 20;
  std::size_t tested = 0;
  for (const std::int64_t origin : origins) {
    for (std::size_t i = tested % kStride; i < all.size(); i += kStride) {
      if ((all[i].rules & positional) == 0) continue;
      RuleMask rm;
      testing::RulesOf(rng, s, all[i], rm, origin);
      ASSERT_EQ(KeptKeysMismatch(rm.mask, s), "")
          << rm.name << " #" << i << " origin " << origin;
      ASSERT_EQ(KernelMismatch(rm, s, rng), "")
          << " #" << i << " origin " << origin;
      ++tested;
    }
  }
  EXPECT_GT(tested, 5000u);
}

// The two cases an outside oracle found: a key at INT64_MAX is kept (kind
// None keeps every valid key; Causal keeps p_k <= p_q = INT64_MAX), and
// ALiBi keeps the distance of positions beyond 2^53.
TEST_P(MaskRulesTest, KeyAtInt64MaxIsKeptAndAlibiKeepsLargeDistances) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const Shape4 s{1, 1, 1, 2};
  const std::int64_t q_none[] = {5}, k_none[] = {0, kMax};
  const std::int64_t q_causal[] = {kMax}, k_causal[] = {kMax - 1, kMax};
  for (const MaskSpec& mask :
       {MaskSpec::none().with_positions(q_none, k_none),
        MaskSpec::causal().with_positions(q_causal, k_causal)}) {
    float p[2] = {0.0f, 0.0f};
    masked_softmax(ScoreView::f32(p, s), mask);
    EXPECT_EQ(p[0], 0.5f);
    EXPECT_EQ(p[1], 0.5f);
    float a[2] = {0.0f, 0.0f};
    apply_mask(ScoreView::f32(a, s), mask);
    EXPECT_EQ(a[0], 0.0f);
    EXPECT_EQ(a[1], 0.0f);
  }
  const std::int64_t q_far[] = {std::int64_t{1} << 62};
  const std::int64_t k_far[] = {(std::int64_t{1} << 62) + 1,
                                (std::int64_t{1} << 62) + 2};
  const float slope[] = {1.0f};
  SoftmaxOptions options;
  options.alibi_slopes = slope;
  float p[2] = {0.0f, 0.0f};
  masked_softmax(ScoreView::f32(p, s),
                 MaskSpec::none().with_positions(q_far, k_far), options);
  // exp(-1) / (exp(-1) + exp(-2)) = 1 / (1 + e^-1).
  EXPECT_NEAR(p[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(p[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
}

// Longer rows: vector bodies, tails and several intervals per row.
TEST_P(MaskRulesTest, EveryCombinationMatchesTheOracleOnLongRows) {
  std::mt19937_64 rng(7);
  const int iterations = testing::ScaledIterations(60);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 2, 1 + rng() % 3,
                   40 + rng() % 300};
    RuleMask rm;
    RandomRules(rng, s, rm);
    ASSERT_EQ(KeptKeysMismatch(rm.mask, s), "") << rm.name;
    ASSERT_EQ(KernelMismatch(rm, s, rng), "") << "iteration " << it;
  }
}

// The keys each query row keeps under `mask`, read back from apply_mask
// over zero scores (kept stays 0, masked becomes -inf), row q of batch b.
std::vector<std::vector<int>> KeptSets(const MaskSpec& mask, const Shape4& s,
                                       std::size_t b = 0) {
  std::vector<float> scores(s.batch * s.heads * s.q_len * s.k_len, 0.0f);
  apply_mask(ScoreView::f32(scores.data(), s), mask);
  std::vector<std::vector<int>> sets(s.q_len);
  for (std::size_t q = 0; q < s.q_len; ++q) {
    for (std::size_t k = 0; k < s.k_len; ++k) {
      if (scores[(b * s.heads * s.q_len + q) * s.k_len + k] == 0.0f) {
        sets[q].push_back(static_cast<int>(k));
      }
    }
  }
  return sets;
}

// The sets a predicate written from a peer's definition keeps.
std::vector<std::vector<int>> SetsOf(
    std::size_t q_len, std::size_t k_len,
    const std::function<bool(std::size_t q, std::size_t k)>& kept) {
  std::vector<std::vector<int>> sets(q_len);
  for (std::size_t q = 0; q < q_len; ++q) {
    for (std::size_t k = 0; k < k_len; ++k) {
      if (kept(q, k)) sets[q].push_back(static_cast<int>(k));
    }
  }
  return sets;
}

// llama.cpp, LLAMA_SWA_TYPE_STANDARD: is_masked_swa(p0, p1) = p1 - p0 >=
// n_swa (p0 the key's position, p1 the query's), on top of causal.
TEST_P(MaskRulesTest, LlamaCppStandardSlidingWindow) {
  const std::size_t n_swa = 4, n = 11;
  const auto want = SetsOf(n, n, [&](std::size_t p1, std::size_t p0) {
    const bool causal_masked = p0 > p1;
    const bool swa_masked = static_cast<long>(p1) - static_cast<long>(p0) >=
                            static_cast<long>(n_swa);
    return !causal_masked && !swa_masked;
  });
  EXPECT_EQ(KeptSets(MaskSpec::causal().with_window_keys(n_swa), {1, 1, n, n}),
            want);
  // RLX's sliding_window(w) is the same mask with w = n_swa - 1.
  EXPECT_EQ(KeptSets(MaskSpec::sliding_window(n_swa - 1), {1, 1, n, n}), want);
}

// llama.cpp, LLAMA_SWA_TYPE_CHUNKED: masked if p0 < (p1 / n_swa) * n_swa;
// Llama 4's attention_chunk_size the same. A query at the first position
// of a chunk sees itself alone.
TEST_P(MaskRulesTest, LlamaCppChunkedAndLlama4ChunkBoundaries) {
  const std::size_t chunk = 4, n = 13;
  const auto want = SetsOf(n, n, [&](std::size_t p1, std::size_t p0) {
    return p0 <= p1 && p0 >= (p1 / chunk) * chunk;
  });
  const auto got = KeptSets(MaskSpec::causal().with_chunk(chunk), {1, 1, n, n});
  EXPECT_EQ(got, want);
  EXPECT_EQ(got[8], (std::vector<int>{8}));           // first of chunk 2
  EXPECT_EQ(got[7], (std::vector<int>{4, 5, 6, 7}));  // last of chunk 1
  // Decode of a Llama 4 chunked layer: 10 past keys, the new token at
  // position 10 is in chunk [8, 12): it sees 8, 9 and itself (slot upper).
  const auto decode =
      KeptSets(MaskSpec::decode(10, 15).with_chunk(chunk), {1, 1, 1, 16});
  EXPECT_EQ(decode[0], (std::vector<int>{8, 9, 15}));
}

// Gemma 3 / PaliGemma: the image prefix is bidirectional, the text after it
// causal.
TEST_P(MaskRulesTest, Gemma3BidirectionalPrefix) {
  const std::size_t n = 9;
  const std::int64_t prefix = 4;
  const auto want = SetsOf(n, n, [&](std::size_t q, std::size_t k) {
    const bool in_prefix = static_cast<std::int64_t>(q) < prefix &&
                           static_cast<std::int64_t>(k) < prefix;
    return k <= q || in_prefix;
  });
  EXPECT_EQ(KeptSets(MaskSpec::causal().with_prefix(&prefix), {1, 1, n, n}),
            want);
  // Gemma 3's sliding layers: the prefix is still seen within the window.
  const auto windowed =
      KeptSets(MaskSpec::causal().with_prefix(&prefix).with_window_keys(3),
               {1, 1, n, n});
  // Later prefix keys are at negative distance, inside the window.
  EXPECT_EQ(windowed[0], (std::vector<int>{0, 1, 2, 3}));  // p_q - p_k < 3
  EXPECT_EQ(windowed[6], (std::vector<int>{4, 5, 6}));
}

// StreamingLLM: 4 attention-sink tokens plus a window of recent tokens.
TEST_P(MaskRulesTest, StreamingLlmSinksAndWindow) {
  const std::size_t n = 20, sinks = 4, window = 5;
  const auto want = SetsOf(n, n, [&](std::size_t q, std::size_t k) {
    return k <= q && (k < sinks || q - k < window);
  });
  EXPECT_EQ(KeptSets(MaskSpec::causal().with_window_keys(window).with_sink_keys(
                         sinks),
                     {1, 1, n, n}),
            want);
  // Decode with a window w = 4 (W = 5) and sinks: [0, 4), [past - 4, past)
  // and the new token.
  const auto decode =
      KeptSets(MaskSpec::decode(30, 39, window - 1).with_sink_keys(sinks),
               {1, 1, 1, 40});
  EXPECT_EQ(decode[0], (std::vector<int>{0, 1, 2, 3, 26, 27, 28, 29, 39}));
  const KeptKeys kept = kept_keys(
      MaskSpec::decode(30, 39, window - 1).with_sink_keys(sinks), 0, 0, 1, 40);
  EXPECT_EQ(
      kept,
      (KeptKeys{{KeyInterval{0, 4}, KeyInterval{26, 30}, KeyInterval{39, 40}},
                3}));
}

// A ring-buffer KV cache of 8 slots that has wrapped: token p sits in slot
// p % 8; after 12 tokens the slots hold positions 8 9 10 11 4 5 6 7.
TEST_P(MaskRulesTest, RingBufferThatHasWrapped) {
  const std::vector<std::int64_t> k_pos = {8, 9, 10, 11, 4, 5, 6, 7};
  const std::int64_t q_pos = 11;
  const MaskSpec mask = MaskSpec::causal()
                            .with_positions(&q_pos, k_pos.data())
                            .with_window_keys(6);  // positions 6..11
  EXPECT_EQ(KeptSets(mask, {1, 1, 1, 8})[0],
            (std::vector<int>{0, 1, 2, 3, 6, 7}));
}

// A paged cache: blocks of 2 slots in shuffled order, one block empty.
TEST_P(MaskRulesTest, PagedCacheWithShuffledBlocks) {
  const std::vector<std::int64_t> k_pos = {4, 5, -1, -1, 0, 1, 2, 3, 6, -1};
  const std::int64_t q_pos = 6;
  const auto causal = KeptSets(
      MaskSpec::causal().with_positions(&q_pos, k_pos.data()), {1, 1, 1, 10});
  EXPECT_EQ(causal[0], (std::vector<int>{0, 1, 4, 5, 6, 7, 8}));
  const auto windowed = KeptSets(MaskSpec::causal()
                                     .with_positions(&q_pos, k_pos.data())
                                     .with_window_keys(3),
                                 {1, 1, 1, 10});
  EXPECT_EQ(windowed[0], (std::vector<int>{0, 1, 8}));  // positions 4, 5, 6
}

// Two documents packed in one row: causal within each, nothing across.
TEST_P(MaskRulesTest, TwoDocumentsPackedInOneRow) {
  const std::vector<std::int32_t> seg = {0, 0, 0, 1, 1, 1, 1};
  const std::size_t n = seg.size();
  const auto want = SetsOf(n, n, [&](std::size_t q, std::size_t k) {
    return k <= q && seg[k] == seg[q];
  });
  EXPECT_EQ(KeptSets(MaskSpec::causal().with_segments(seg.data(), seg.data()),
                     {1, 1, n, n}),
            want);
}

// The existing kinds are shorthands of the rules.
TEST_P(MaskRulesTest, KindsAreShorthandsOfTheRules) {
  const Shape4 s{1, 1, 6, 10};
  for (std::size_t w = 1; w < 8; ++w) {
    EXPECT_EQ(KeptSets(MaskSpec::sliding_window(w), s),
              KeptSets(MaskSpec::causal().with_window_keys(w + 1), s))
        << "w = " << w;
  }
  // A dense part on top of causal equals causal AND the keep mask.
  std::vector<std::uint8_t> keep(10, 1);
  keep[2] = keep[7] = 0;
  const auto both =
      KeptSets(MaskSpec::causal().with_keep(keep.data(), {1, 1, 1, 10}), s);
  const auto causal = KeptSets(MaskSpec::causal(), s);
  for (std::size_t q = 0; q < s.q_len; ++q) {
    std::vector<int> want;
    for (int k : causal[q]) {
      if (keep[k]) want.push_back(k);
    }
    EXPECT_EQ(both[q], want);
  }
}

// Bit-packed keep masks: bit k % 64 of word k / 64, rows of ceil(k_len / 64)
// words, alone and on top of the rules.
TEST_P(MaskRulesTest, KeepBitsReadBitKOfWordKOver64) {
  const std::size_t n = 130;
  std::vector<std::uint64_t> words(2 * 3, 0);  // 2 rows of 3 words
  for (std::size_t k : {0u, 63u, 64u, 129u}) {
    words[k / 64] |= std::uint64_t{1} << (k % 64);
  }
  words[3 + 1] = ~std::uint64_t{0};  // row 1: keys 64..127
  const auto sets =
      KeptSets(MaskSpec::keep_bits(words.data(), {1, 1, 2, n}), {1, 1, 2, n});
  EXPECT_EQ(sets[0], (std::vector<int>{0, 63, 64, 129}));
  EXPECT_EQ(sets[1].size(), 64u);
  EXPECT_EQ(sets[1].front(), 64);
  const auto causal =
      KeptSets(MaskSpec::causal().with_keep_bits(words.data(), {1, 1, 2, n}),
               {1, 1, 2, n});
  EXPECT_EQ(causal[1].back(), 127);  // row 1 is at position 129
}

TEST_P(MaskRulesTest, BadRulesThrowNamingTheValuesAndWriteNothing) {
  const std::int32_t seg[8] = {};
  const std::vector<std::uint64_t> words(4, 1);
  const std::vector<float> keep(16, 1.0f);
  const testing::BadMask cases[] = {
      {MaskSpec::causal().with_window_keys(std::size_t{1} << 63),
       "window_keys 9223372036854775808 exceeds"},
      {MaskSpec::causal().with_chunk(~std::size_t{0}),
       "chunk 18446744073709551615 exceeds"},
      {MaskSpec::none().with_sink_keys(std::size_t{1} << 63),
       "sink_keys 9223372036854775808 exceeds"},
      {MaskSpec::causal().with_segments(seg, nullptr),
       "segments need both sides, but k_segment is null"},
      {MaskSpec::causal().with_segments(nullptr, seg),
       "segments need both sides, but q_segment is null"},
      {MaskSpec::keep(keep.data(), {1, 1, 2, 8})
           .with_bias(keep.data(), {1, 1, 2, 8}),
       "cannot take a second dense part (bias)"},
      {MaskSpec::causal().with_keep_bits(nullptr, {1, 1, 2, 8}),
       "dense mask data is null (bit keep mask)"},
  };
  for (const auto& c : cases) testing::ExpectRejectedEverywhere(c);
}

}  // namespace
}  // namespace rlx
