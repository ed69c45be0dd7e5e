// SPDX-License-Identifier: MIT OR Apache-2.0
// Groups (MaskSpec::with_groups) and two-sided windows
// (MaskSpec::with_window_keys_after) against masks written in this file
// straight from the models' own definitions, as plain loops over (q, k),
// sharing nothing with the library or the oracle's rule logic: Gemma 3's
// sliding layers with images (Hugging Face's or_masks of the sliding causal
// mask and the same-image-group mask), EmbeddingGemma's bidirectional
// sliding window and ModernBERT's local attention. Every kernel and row
// type on every target; kept_keys must cover the kept keys and
// classify_blocks must classify the tiles exactly. The random combinations
// with every other rule are in mask_rules_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "rlx/block_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/mask/bad_mask_cases.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::testing::HasSubstr;

// A keep mask per batch, [batch][q][k], 1 = kept: the expected result.
using Dense = std::vector<std::vector<std::vector<std::uint8_t>>>;

Dense DenseOf(const Shape4& s,
              const std::function<bool(std::size_t b, std::size_t q,
                                       std::size_t k)>& kept) {
  Dense d(s.batch, std::vector<std::vector<std::uint8_t>>(
                       s.q_len, std::vector<std::uint8_t>(s.k_len, 0)));
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t q = 0; q < s.q_len; ++q)
      for (std::size_t k = 0; k < s.k_len; ++k) d[b][q][k] = kept(b, q, k);
  return d;
}

std::string At(std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
  char at[96];
  std::snprintf(at, sizeof(at), "(%zu,%zu,%zu,%zu)", b, h, q, k);
  return at;
}

// `mask` against the expected keep mask `want` on scores of shape `s`:
// kept_keys covers every kept key; apply_mask keeps exactly the kept
// scores (bit for bit) and fills the rest; masked_softmax, default mode,
// equals the oracle's softmax over a dense keep mask of `want` (within the
// stated bound), masked keys +0; kept-only mode writes the same bits for
// the kept keys and leaves every key outside kept_keys alone; every row
// type, on a strided, misaligned view; classify_blocks classifies the
// tiles of `want` exactly.
std::string Mismatch(const MaskSpec& mask, const Dense& want, const Shape4& s,
                     std::mt19937_64& rng) {
  std::vector<std::uint8_t> keep;  // [batch, 1, q_len, k_len]
  for (const auto& rows : want)
    for (const auto& row : rows)
      keep.insert(keep.end(), row.begin(), row.end());
  const MaskSpec dense_mask =
      MaskSpec::keep(keep.data(), {s.batch, 1, s.q_len, s.k_len});
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t q = 0; q < s.q_len; ++q) {
      const KeptKeys kept = kept_keys(mask, b, q, s.q_len, s.k_len);
      for (std::size_t k = 0; k < s.k_len; ++k) {
        if (want[b][q][k] && !testing::Contains(kept, k)) {
          return "kept_keys misses kept key " + At(b, 0, q, k);
        }
      }
    }
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    const std::string where = std::string(testing::TypeName(type)) + ": ";
    testing::Tensor t =
        testing::MakeTensor(type, s, 1 + rng() % 3, 1 + rng() % 3);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q)
          for (std::size_t k = 0; k < s.k_len; ++k) {
            testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                         static_cast<float>(rng() % 2001) / 100.0f - 10.0f);
          }
    std::vector<std::uint8_t> got_bytes, want_bytes, kept_only_bytes;
    // apply_mask: the kept scores as they were, the fill elsewhere.
    ScoreView got = testing::SameViewIn(t, got_bytes);
    ScoreView expected = testing::SameViewIn(t, want_bytes);
    apply_mask(got, mask, RowRange::all(s), -1000.0f);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q)
          for (std::size_t k = 0; k < s.k_len; ++k) {
            if (!want[b][q][k]) {
              testing::Set(expected, testing::Offset(expected, b, h, q, k),
                           -1000.0f);
            }
          }
    std::string e = testing::ApplyMismatch(got, expected, mask);
    if (!e.empty()) return where + "apply_mask " + e;
    // masked_softmax against the oracle's over the dense keep mask.
    const SoftmaxOptions options{.scale = 0.5f};
    got = testing::SameViewIn(t, got_bytes);
    expected = testing::SameViewIn(t, want_bytes);
    masked_softmax(got, mask, options);
    reference::masked_softmax(expected, expected, dense_mask, options,
                              RowRange::all(s));
    e = testing::SoftmaxMismatch(t.view, got, expected, dense_mask, options);
    if (!e.empty()) return where + "masked_softmax " + e;
    // Kept-only mode.
    SoftmaxOptions kept_only = options;
    kept_only.zero_masked = false;
    const ScoreView partial = testing::SameViewIn(t, kept_only_bytes);
    masked_softmax(partial, mask, kept_only);
    const std::size_t es = testing::ElemSize(type);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys written = kept_keys(mask, b, q, s.q_len, s.k_len);
          for (std::size_t k = 0; k < s.k_len; ++k) {
            const std::size_t off = testing::Offset(partial, b, h, q, k) * es;
            const auto* p =
                static_cast<const std::uint8_t*>(partial.data) + off;
            const auto* full = static_cast<const std::uint8_t*>(got.data) + off;
            const auto* before =
                static_cast<const std::uint8_t*>(t.view.data) + off;
            const bool inside = testing::Contains(written, k);
            if (std::memcmp(p, inside ? full : before, es) != 0) {
              return where + "kept-only masked_softmax at " + At(b, h, q, k) +
                     (inside ? " differs from the default mode"
                             : " outside kept_keys was written");
            }
          }
        }
  }
  // classify_blocks: tiles of 4 x 3 (odd ones at the edges).
  const std::size_t tq = 4, tk = 3;
  const std::size_t qbs = (s.q_len + tq - 1) / tq,
                    kbs = (s.k_len + tk - 1) / tk;
  for (std::size_t b = 0; b < s.batch; ++b) {
    std::vector<std::uint32_t> num(qbs), indices(qbs * kbs), full_num(qbs),
        full_indices(qbs * kbs);
    classify_blocks(mask, s, b, 0, tq, tk,
                    {qbs, kbs, num.data(), indices.data(), full_num.data(),
                     full_indices.data()});
    for (std::size_t qb = 0; qb < qbs; ++qb) {
      std::vector<int> got_kind(kbs, 0);
      for (std::uint32_t j = 0; j < num[qb]; ++j) {
        got_kind[indices[qb * kbs + j]] = 1;
      }
      for (std::uint32_t j = 0; j < full_num[qb]; ++j) {
        got_kind[full_indices[qb * kbs + j]] = 2;
      }
      for (std::size_t kb = 0; kb < kbs; ++kb) {
        bool any = false, all = true;
        for (std::size_t q = qb * tq; q < std::min(s.q_len, qb * tq + tq); ++q)
          for (std::size_t k = kb * tk; k < std::min(s.k_len, kb * tk + tk);
               ++k) {
            any = any || want[b][q][k];
            all = all && want[b][q][k];
          }
        const int kind = !any ? 0 : all ? 2 : 1;
        if (got_kind[kb] != kind) {
          return "classify_blocks tile (" + std::to_string(qb) + "," +
                 std::to_string(kb) + ") of batch " + std::to_string(b) +
                 ": got " + std::to_string(got_kind[kb]) + ", want " +
                 std::to_string(kind) + " (0 empty, 1 partial, 2 full)";
        }
      }
    }
  }
  return "";
}

// Gemma 3 images as groups: an image's tokens carry the image's number
// (1, 2, ...), text tokens 0. `spans` are [begin, end) of the images of
// each batch entry, over key positions.
std::vector<std::int32_t> ImageGroups(
    std::size_t batch, std::size_t n,
    const std::vector<std::vector<std::pair<std::size_t, std::size_t>>>&
        spans) {
  std::vector<std::int32_t> group(batch * n, 0);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < spans[b].size(); ++i) {
      for (std::size_t p = spans[b][i].first; p < spans[b][i].second; ++p) {
        group[b * n + p] = static_cast<std::int32_t>(i + 1);
      }
    }
  }
  return group;
}

class MaskGroupsTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(MaskGroupsTest);

// Gemma 3's sliding layers (Hugging Face masking_utils): or_masks(
// sliding_window_causal (kv_idx <= q_idx and kv_idx > q_idx - W), the
// token-type mask (both tokens image tokens of the same image)). W = 5
// keys counting the query; two images per prompt, one longer than the
// window (its first tokens see its last ones, and the reverse); the second
// batch entry starts with an image. Prefill of the whole prompt and a
// chunk of it after a cached prefix (queries at positions k_len - q_len
// on), and the full-attention layers (no window).
TEST_P(MaskGroupsTest, Gemma3SlidingLayerWithImagesMatchesHuggingFace) {
  std::mt19937_64 rng(3);
  const std::size_t n = 27, W = 5;
  const std::vector<std::vector<std::pair<std::size_t, std::size_t>>> spans = {
      {{3, 13}, {16, 19}}, {{0, 4}, {9, 24}}};
  const std::vector<std::int32_t> k_group = ImageGroups(2, n, spans);
  for (const std::size_t q_len : {n, std::size_t{11}}) {
    const std::size_t offset = n - q_len;  // the queries' first position
    std::vector<std::int32_t> q_group(2 * q_len);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t q = 0; q < q_len; ++q)
        q_group[b * q_len + q] = k_group[b * n + offset + q];
    const Shape4 s{2, 2, q_len, n};
    for (const bool sliding : {true, false}) {
      const Dense want =
          DenseOf(s, [&](std::size_t b, std::size_t q, std::size_t k) {
            const std::size_t q_idx = offset + q, kv_idx = k;
            const bool causal = kv_idx <= q_idx;
            const bool window = !sliding || kv_idx + W > q_idx;
            const std::int32_t gq = k_group[b * n + q_idx];
            const std::int32_t gk = k_group[b * n + kv_idx];
            const bool same_image = gq != 0 && gk != 0 && gq == gk;
            return (causal && window) || same_image;
          });
      MaskSpec mask =
          MaskSpec::causal().with_groups(q_group.data(), k_group.data());
      if (sliding) mask = mask.with_window_keys(W);
      ASSERT_EQ(Mismatch(mask, want, s, rng), "")
          << "q_len " << q_len << (sliding ? " sliding" : " full");
      // The kind's own window says the same (w = W - 1).
      if (sliding) {
        const MaskSpec kind = MaskSpec::sliding_window(W - 1).with_groups(
            q_group.data(), k_group.data());
        ASSERT_EQ(Mismatch(kind, want, s, rng), "") << "q_len " << q_len;
      }
    }
  }
}

// Rows longer than the kernels' keep-byte tile: the image's keys reach
// far outside the window.
TEST_P(MaskGroupsTest, Gemma3ImageLongerThanAKeepTile) {
  std::mt19937_64 rng(4);
  const std::size_t n = 9001, q_len = 3, W = 7;
  const std::vector<std::vector<std::pair<std::size_t, std::size_t>>> spans = {
      {{5, 8999}}};
  const std::vector<std::int32_t> k_group = ImageGroups(1, n, spans);
  // Queries at positions 8998 (in the image), 8999 and 9000 (text).
  const std::vector<std::int32_t> q_group = {1, 0, 0};
  const Shape4 s{1, 1, q_len, n};
  const Dense want = DenseOf(s, [&](std::size_t, std::size_t q, std::size_t k) {
    const std::size_t p = n - q_len + q;
    return (k <= p && k + W > p) ||
           (q_group[q] != 0 && k_group[k] == q_group[q]);
  });
  ASSERT_EQ(Mismatch(MaskSpec::causal().with_window_keys(W).with_groups(
                         q_group.data(), k_group.data()),
                     want, s, rng),
            "");
}

// EmbeddingGemma: Gemma 3 with bidirectional attention. Hugging Face sets
// its sliding_window to (sliding_window // 2) + 1 = s and keeps
// abs(q_idx - kv_idx) < s, i.e. |i - j| <= w for w = s - 1: none +
// window_keys(s) + window_keys_after(s). Square and with more keys than
// queries (queries at the last positions), each half-width from 0 (the
// diagonal) past the whole row.
TEST_P(MaskGroupsTest, EmbeddingGemmaTwoSidedWindowMatchesHuggingFace) {
  std::mt19937_64 rng(5);
  for (const std::size_t config_window : {std::size_t{512}, std::size_t{10}}) {
    const std::size_t hf = config_window / 2 + 1;
    ASSERT_EQ(hf, config_window == 512 ? 257u : 6u);
  }
  for (const auto& [q_len, k_len] :
       std::vector<std::pair<std::size_t, std::size_t>>{{37, 37}, {5, 41}}) {
    for (const std::size_t w : {std::size_t{0}, std::size_t{1}, std::size_t{4},
                                std::size_t{5}, std::size_t{40}}) {
      const Shape4 s{1, 2, q_len, k_len};
      const std::size_t offset = k_len - q_len;
      const Dense want =
          DenseOf(s, [&](std::size_t, std::size_t q, std::size_t k) {
            const long i = static_cast<long>(offset + q);
            const long j = static_cast<long>(k);
            return std::labs(i - j) <= static_cast<long>(w);
          });
      const MaskSpec mask =
          MaskSpec::none().with_window_keys(w + 1).with_window_keys_after(w +
                                                                          1);
      ASSERT_EQ(Mismatch(mask, want, s, rng), "")
          << "w " << w << " q_len " << q_len << " k_len " << k_len;
      // kept_keys is exact here: one interval [i - w, i + w] clipped.
      for (std::size_t q = 0; q < q_len; ++q) {
        const std::size_t i = offset + q;
        const KeptKeys kept = kept_keys(mask, 0, q, q_len, k_len);
        ASSERT_EQ(kept.count, 1u);
        EXPECT_EQ(kept.intervals[0].begin, i > w ? i - w : 0);
        EXPECT_EQ(kept.intervals[0].end, std::min(k_len, i + w + 1));
      }
    }
  }
}

// ModernBERT's local attention: window_mask = |i - j| <= local_attention //
// 2 (flash-attn's window_size (L/2, L/2) the same), here L = 8.
TEST_P(MaskGroupsTest, ModernBertLocalAttentionMatchesItsDefinition) {
  std::mt19937_64 rng(6);
  const std::size_t n = 33, local_attention = 8;
  const Shape4 s{2, 1, n, n};
  const Dense want = DenseOf(s, [&](std::size_t, std::size_t i, std::size_t j) {
    const long d = static_cast<long>(i) - static_cast<long>(j);
    return std::labs(d) <= static_cast<long>(local_attention / 2);
  });
  const std::size_t half = local_attention / 2;
  ASSERT_EQ(
      Mismatch(
          MaskSpec::none().with_window_keys(half + 1).with_window_keys_after(
              half + 1),
          want, s, rng),
      "");
}

// A group keeps keys whatever sinks, chunks and prefixes say, but never an
// empty slot (k_position < 0), a key of another segment or one a dense
// part masks; Decode's token is at distance 0 of a two-sided window.
TEST_P(MaskGroupsTest, GroupsStayUnderValidSegmentsAndDenseParts) {
  std::mt19937_64 rng(7);
  const std::size_t n = 12;
  const Shape4 s{1, 1, 2, n};
  const std::vector<std::int64_t> k_pos = {0, 1, -1, 3, 4,  5,
                                           6, 7, 8,  9, 10, 11};
  const std::vector<std::int64_t> q_pos = {2, 9};
  const std::vector<std::int32_t> k_group = {0, 1, 1, 1, 0, 0,
                                             0, 0, 1, 1, 2, 2};
  const std::vector<std::int32_t> q_group = {1, 2};
  const std::vector<std::int32_t> k_seg = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  const std::vector<std::int32_t> q_seg = {0, 0};
  std::vector<std::uint8_t> dense(2 * n, 1);
  dense[n + 11] = 0;  // row 1 masks key 11 (its group's)
  const MaskSpec mask = MaskSpec::causal()
                            .with_positions(q_pos.data(), k_pos.data())
                            .with_chunk(4)
                            .with_groups(q_group.data(), k_group.data())
                            .with_segments(q_seg.data(), k_seg.data())
                            .with_keep(dense.data(), {1, 1, 2, n});
  const Dense want = DenseOf(s, [&](std::size_t, std::size_t q, std::size_t k) {
    const std::int64_t pq = q_pos[q], pk = k_pos[k];
    if (pk < 0 || q_seg[q] != k_seg[k] || !dense[q * n + k]) return false;
    const bool base = pk <= pq && pk / 4 == pq / 4;
    return base || k_group[k] == q_group[q];
  });
  // Row 0 (position 2, group 1): base keeps 0, 1 (slot 2 empty); its group
  // adds 3, 8 (9 is another segment). Row 1 (position 9): base keeps 8;
  // its group adds 10 (11 masked by the dense part).
  EXPECT_EQ(want[0][0],
            (std::vector<std::uint8_t>{1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(want[0][1],
            (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0}));
  ASSERT_EQ(Mismatch(mask, want, s, rng), "");
  // Decode: 9 past keys, the token at slot 11 (position 9); a two-sided
  // window of 3 and sinks; the token and keys 0..2 form group 4.
  const std::vector<std::int32_t> dec_k = {4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4};
  const std::vector<std::int32_t> dec_q = {4};
  const MaskSpec decode = MaskSpec::decode(9, 11)
                              .with_window_keys(3)
                              .with_window_keys_after(3)
                              .with_groups(dec_q.data(), dec_k.data());
  const Shape4 ds{1, 1, 1, n};
  const Dense dec_want =
      DenseOf(ds, [&](std::size_t, std::size_t, std::size_t k) {
        // Slots 9 and 10 are empty; slot 11 is the token, at position 9.
        if (k == 9 || k == 10) return false;
        const long pk = k == 11 ? 9 : static_cast<long>(k);
        return (pk <= 9 && 9 - pk < 3) || dec_k[k] == 4;
      });
  ASSERT_EQ(Mismatch(decode, dec_want, ds, rng), "");
  // kept_keys keeps the token apart, so that ALiBi sees its position.
  const KeptKeys kept = kept_keys(decode, 0, 0, 1, n);
  EXPECT_EQ(kept, (KeptKeys{{KeyInterval{0, 9}, KeyInterval{11, 12}}, 2}));
  float slope[] = {0.75f};
  SoftmaxOptions alibi;
  alibi.alibi_slopes = slope;
  std::vector<float> got(n), want_p(n);
  for (std::size_t k = 0; k < n; ++k) got[k] = want_p[k] = 0.1f * k;
  masked_softmax(ScoreView::f32(got.data(), ds), decode, alibi);
  reference::masked_softmax(ScoreView::f32(want_p.data(), ds),
                            ScoreView::f32(want_p.data(), ds), decode, alibi,
                            RowRange::all(ds));
  for (std::size_t k = 0; k < n; ++k) {
    EXPECT_NEAR(got[k], want_p[k], 1e-6) << "key " << k;
  }
  EXPECT_GT(got[11], 0.0f);
}

TEST_P(MaskGroupsTest, BadGroupsAndWindowsThrowNamingTheValues) {
  const std::int32_t group[8] = {};
  const testing::BadMask cases[] = {
      {MaskSpec::causal().with_groups(group, nullptr),
       "groups need both sides, but k_group is null"},
      {MaskSpec::causal().with_groups(nullptr, group),
       "groups need both sides, but q_group is null"},
      {MaskSpec::none().with_window_keys_after(std::size_t{1} << 63),
       "window_keys_after 9223372036854775808 exceeds"},
  };
  for (const auto& c : cases) testing::ExpectRejectedEverywhere(c);
}

}  // namespace
}  // namespace rlx
