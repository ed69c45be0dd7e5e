// SPDX-License-Identifier: MIT OR Apache-2.0
// Key lists (MaskSpec::with_key_indices) on every compiled target and row
// type: the fused softmax against the oracle (every other rule, sinks,
// ALiBi, softcap, row_lse, strided and unaligned views, in and out of
// place), kept-only writes (exactly the listed keys inside kept_keys),
// apply_mask bit for bit, kept_keys as a cover, classify_blocks exactly, and
// the errors, which write nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/block_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_split.h"
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

class KeyListTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(KeyListTest);

// A random key list for scores of shape s: extents 1 (broadcast) or the
// scores', n from 0 to beyond k_len (odd counts included), slots -1, keys
// with repeats, or strictly increasing keys then -1 padding (as top-k
// indexers return them).
struct KeyList {
  std::vector<std::int32_t> slots;
  Shape4 shape;
  std::string name;
};

KeyList RandomKeyList(std::mt19937_64& rng, const Shape4& s) {
  KeyList list;
  list.shape = {rng() % 2 ? s.batch : 1, rng() % 2 ? s.heads : 1,
                rng() % 2 ? s.q_len : 1, 0};
  const std::size_t n_choice = rng() % 8;
  std::size_t n = n_choice == 0   ? 0
                  : n_choice == 1 ? 1
                  : n_choice < 5  ? 1 + rng() % (s.k_len + 2)
                                  : 1 + rng() % (2 * s.k_len + 40);
  list.shape.k_len = n;
  const std::size_t rows =
      list.shape.batch * list.shape.heads * list.shape.q_len;
  // One slot more than used, so that data() is never null (n = 0 is a
  // list that names no key, not an absent list).
  list.slots.assign(rows * n + 1, -1);
  const int style = static_cast<int>(rng() % 3);
  list.name = "n=" + std::to_string(n) +
              (style == 0   ? " random"
               : style == 1 ? " increasing"
                            : " repeats") +
              " list" + ShapeName(list.shape);
  for (std::size_t r = 0; r < rows; ++r) {
    std::int32_t* row = list.slots.data() + r * n;
    if (style == 1) {
      std::vector<std::int32_t> keys;
      for (std::size_t k = 0; k < s.k_len; ++k) {
        if (rng() % 3 == 0) keys.push_back(static_cast<std::int32_t>(k));
      }
      keys.resize(std::min(keys.size(), n));
      std::copy(keys.begin(), keys.end(), row);
      continue;
    }
    for (std::size_t j = 0; j < n; ++j) {
      const bool unused = rng() % 6 == 0;
      const std::size_t range =
          style == 2 ? std::min<std::size_t>(s.k_len, 5) : s.k_len;
      row[j] = unused ? -1 : static_cast<std::int32_t>(rng() % range);
    }
  }
  return list;
}

SoftmaxOptions RandomOptions(std::mt19937_64& rng, const Shape4& s,
                             const std::vector<float>& sinks,
                             const std::vector<float>& slopes,
                             std::vector<float>& lse) {
  SoftmaxOptions o;
  o.scale = rng() % 4 == 0 ? -0.75f : 0.5f;
  o.softcap = rng() % 3 == 0 ? 4.0f : 0.0f;
  if (rng() % 2) o.sink_logits = sinks.data();
  if (rng() % 2) o.alibi_slopes = slopes.data();
  lse.assign(s.rows(), 7.0f);
  if (rng() % 2) o.row_lse = lse.data();
  return o;
}

// The default mode against the oracle, in and out of place, on random
// masks of every rule with a random key list, every option and row type.
TEST_P(KeyListTest, SoftmaxMatchesTheOracle) {
  std::mt19937_64 rng(2048);
  const int iterations = testing::ScaledIterations(300);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const KeyList list = RandomKeyList(rng, s);
    const MaskSpec mask =
        em.mask.with_key_indices(list.slots.data(), list.shape);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    std::vector<float> lse;
    const SoftmaxOptions options = RandomOptions(rng, s, sinks, slopes, lse);
    for (ScoreType type : kTypes) {
      const testing::Tensor t = RandomScores(rng, type, s);
      const bool out_of_place = rng() % 2;
      const std::string why =
          testing::OracleMismatch(t, mask, options, out_of_place);
      ASSERT_EQ(why, "") << em.name << " + " << list.name << " " << ShapeName(s)
                         << " " << testing::TypeName(type)
                         << (out_of_place ? " out of place" : " in place");
    }
  }
}

// Long rows with few listed keys (the top-k shape): whole vectors, tails,
// lists shared by the heads or per head, sorted or not, with repeats.
TEST_P(KeyListTest, LongRowsMatchTheOracle) {
  std::mt19937_64 rng(131073);
  for (int it = 0; it < testing::ScaledIterations(12); ++it) {
    const Shape4 s{1, 1 + rng() % 4, 1, 3000 + rng() % 3000};
    const bool shared = rng() % 2;
    const std::size_t n = 100 + rng() % 300;
    Shape4 ls{1, shared ? 1 : s.heads, 1, n};
    std::vector<std::int32_t> slots(ls.heads * n);
    for (std::size_t h = 0; h < ls.heads; ++h) {
      std::int32_t* row = slots.data() + h * n;
      for (std::size_t j = 0; j < n; ++j) {
        row[j] = static_cast<std::int32_t>(rng() % s.k_len);
      }
      if (it % 3 != 0) {  // sorted, repeats dropped, padded with -1
        std::sort(row, row + n);
        std::int32_t* end = std::unique(row, row + n);
        std::fill(end, row + n, -1);
      }
    }
    MaskSpec mask = it % 2 ? MaskSpec::causal() : MaskSpec::none();
    mask = mask.with_key_indices(slots.data(), ls);
    std::vector<float> lse(s.rows());
    SoftmaxOptions options;
    options.scale = 0.3f;
    options.row_lse = lse.data();
    for (ScoreType type : kTypes) {
      const testing::Tensor t = RandomScores(rng, type, s);
      ASSERT_EQ(testing::OracleMismatch(t, mask, options), "")
          << ShapeName(s) << " n " << n << (shared ? " shared" : " per head")
          << " " << testing::TypeName(type);
    }
  }
}

// zero_masked = false writes exactly the listed keys inside kept_keys,
// each bit for bit the default mode's (masked ones +0), and leaves every
// other key's bits alone.
TEST_P(KeyListTest, KeptOnlyWritesTheListedKeysInsideKeptKeys) {
  std::mt19937_64 rng(77);
  for (int it = 0; it < testing::ScaledIterations(200); ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const KeyList list = RandomKeyList(rng, s);
    const MaskSpec mask =
        em.mask.with_key_indices(list.slots.data(), list.shape);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    std::vector<float> lse;
    SoftmaxOptions def = RandomOptions(rng, s, sinks, slopes, lse);
    def.row_lse = nullptr;
    SoftmaxOptions kept_only = def;
    kept_only.zero_masked = false;
    for (ScoreType type : kTypes) {
      const testing::Tensor t = RandomScores(rng, type, s);
      const std::size_t es = testing::ElemSize(type);
      std::vector<std::uint8_t> before_bytes, def_bytes, got_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      const ScoreView want = testing::SameViewIn(t, def_bytes);
      const ScoreView got = testing::SameViewIn(t, got_bytes);
      masked_softmax(want, mask, def);
      masked_softmax(got, mask, kept_only);
      for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys written = kept_keys(mask, b, q, s.q_len, s.k_len);
          for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t k = 0; k < s.k_len; ++k) {
              const bool write = testing::Contains(written, k) &&
                                 reference::is_listed(mask, b, h, q, k);
              const std::size_t off = testing::Offset(got, b, h, q, k) * es;
              const auto* g = static_cast<const std::uint8_t*>(got.data) + off;
              const auto* w = static_cast<const std::uint8_t*>(
                                  write ? want.data : before.data) +
                              off;
              ASSERT_EQ(std::memcmp(g, w, es), 0)
                  << em.name << " + " << list.name << " " << ShapeName(s) << " "
                  << testing::TypeName(type) << " key (" << b << "," << h << ","
                  << q << "," << k << ") "
                  << (write ? "listed inside kept_keys: differs from the "
                              "default mode"
                            : "was written");
            }
        }
    }
  }
}

// apply_mask: unlisted keys get the fill, listed ones the rest of the mask,
// bit for bit as the oracle.
TEST_P(KeyListTest, ApplyMaskMatchesTheOracle) {
  std::mt19937_64 rng(9);
  for (int it = 0; it < testing::ScaledIterations(300); ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const KeyList list = RandomKeyList(rng, s);
    const MaskSpec mask =
        em.mask.with_key_indices(list.slots.data(), list.shape);
    const float fill = rng() % 2 ? kNegInf : -1e9f;
    for (ScoreType type : kTypes) {
      const testing::Tensor t = RandomScores(rng, type, s);
      std::vector<std::uint8_t> got_bytes, want_bytes;
      const ScoreView got = testing::SameViewIn(t, got_bytes);
      const ScoreView want = testing::SameViewIn(t, want_bytes);
      apply_mask(got, mask, fill);
      reference::apply_mask(want, mask, RowRange::all(s), fill);
      ASSERT_EQ(testing::ApplyMismatch(got, want, mask), "")
          << em.name << " + " << list.name << " " << ShapeName(s) << " "
          << testing::TypeName(type);
      ASSERT_EQ(got_bytes.size(), want_bytes.size());
    }
  }
}

// kept_keys covers every kept key of every head, within the span of the
// listed keys; classify_blocks is exact (a key list makes tiles partial or
// empty).
TEST_P(KeyListTest, KeptKeysCoverAndBlocksAreExact) {
  std::mt19937_64 rng(5);
  for (int it = 0; it < testing::ScaledIterations(150); ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 9, 1 + rng() % 70};
    ExtMask em;
    RandomMask(rng, s, em);
    const KeyList list = RandomKeyList(rng, s);
    const MaskSpec mask =
        em.mask.with_key_indices(list.slots.data(), list.shape);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t q = 0; q < s.q_len; ++q) {
        const KeptKeys kept = kept_keys(mask, b, q, s.q_len, s.k_len);
        std::size_t lo = SIZE_MAX, hi = 0;
        for (std::size_t h = 0; h < s.heads; ++h)
          for (std::size_t k = 0; k < s.k_len; ++k) {
            if (reference::is_listed(mask, b, h, q, k)) {
              lo = std::min(lo, k);
              hi = std::max(hi, k + 1);
            }
            if (reference::is_kept(mask, s, b, h, q, k)) {
              ASSERT_TRUE(testing::Contains(kept, k))
                  << em.name << " + " << list.name << " key " << k;
            }
          }
        for (std::size_t j = 0; j < kept.count; ++j) {
          ASSERT_GE(kept.intervals[j].begin, lo) << em.name << list.name;
          ASSERT_LE(kept.intervals[j].end, hi) << em.name << list.name;
        }
      }
    const std::size_t tq = 1 + rng() % 4, tk = 1 + rng() % 9;
    const std::size_t qb = (s.q_len + tq - 1) / tq,
                      kb = (s.k_len + tk - 1) / tk;
    std::vector<std::uint32_t> num(qb), idx(qb * kb), full_num(qb),
        full_idx(qb * kb);
    const BlockMaskView view{
        qb, kb, num.data(), idx.data(), full_num.data(), full_idx.data()};
    const bool bias = mask.dense_part() == DenseKind::kBias;
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h) {
        classify_blocks(mask, s, b, h, tq, tk, view);
        for (std::size_t i = 0; i < qb; ++i) {
          std::vector<std::uint32_t> want_partial, want_full;
          for (std::size_t j = 0; j < kb; ++j) {
            std::size_t kept = 0, all = 0;
            for (std::size_t q = i * tq; q < std::min(s.q_len, (i + 1) * tq);
                 ++q)
              for (std::size_t k = j * tk; k < std::min(s.k_len, (j + 1) * tk);
                   ++k) {
                ++all;
                kept += reference::is_kept(mask, s, b, h, q, k);
              }
            if (kept == 0) continue;
            (kept == all && !bias ? want_full : want_partial)
                .push_back(static_cast<std::uint32_t>(j));
          }
          const std::vector<std::uint32_t> got_partial(
              idx.begin() + i * kb, idx.begin() + i * kb + num[i]);
          const std::vector<std::uint32_t> got_full(
              full_idx.begin() + i * kb,
              full_idx.begin() + i * kb + full_num[i]);
          ASSERT_EQ(got_partial, want_partial) << em.name << " + " << list.name;
          ASSERT_EQ(got_full, want_full) << em.name << " + " << list.name;
        }
      }
  }
}

// A throwing call's message, "" when it did not throw std::invalid_argument.
template <class F>
std::string ErrorOf(const F& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Bad slots, extents and combinations are errors that name the function
// and the values, and write nothing, whichever row holds the bad slot.
TEST_P(KeyListTest, ErrorsNameTheSlotAndWriteNothing) {
  const Shape4 s{2, 3, 2, 50};
  std::mt19937_64 rng(3);
  for (ScoreType type : kTypes) {
    const testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> bytes, before;
    const ScoreView v = testing::SameViewIn(t, bytes);
    before = bytes;
    for (const std::int32_t bad : {-2, 50, 1000, -2147483647 - 1}) {
      // Per row and head; the bad slot in the last row, slot 6.
      const Shape4 ls{2, 3, 2, 7};
      std::vector<std::int32_t> slots(ls.rows() * 7, 3);
      slots.back() = bad;
      const MaskSpec mask =
          MaskSpec::causal().with_key_indices(slots.data(), ls);
      const std::string want = ", slot 6, is " + std::to_string(bad);
      const std::string soft = ErrorOf([&] { masked_softmax(v, mask, {}); });
      EXPECT_NE(soft.find("masked_softmax: key_indices of row (batch 1, head "
                          "2, query 1)" +
                          want),
                std::string::npos)
          << soft;
      const std::string apply = ErrorOf([&] { apply_mask(v, mask); });
      EXPECT_NE(apply.find("apply_mask: key_indices"), std::string::npos)
          << apply;
      EXPECT_NE(apply.find(want), std::string::npos) << apply;
      const std::string kept =
          ErrorOf([&] { kept_keys(mask, 1, 1, s.q_len, s.k_len); });
      EXPECT_NE(kept.find("kept_keys: key_indices"), std::string::npos) << kept;
      // Rows without the bad slot run.
      EXPECT_EQ(ErrorOf([&] { kept_keys(mask, 0, 0, s.q_len, s.k_len); }), "");
      EXPECT_EQ(bytes, before) << testing::TypeName(type);
    }
    // Extents: each 1 or the scores'.
    std::vector<std::int32_t> slots(64, 0);
    for (const Shape4 ls :
         {Shape4{3, 1, 1, 4}, Shape4{1, 2, 1, 4}, Shape4{1, 1, 3, 4}}) {
      const MaskSpec mask = MaskSpec::none().with_key_indices(slots.data(), ls);
      const std::string e = ErrorOf([&] { masked_softmax(v, mask, {}); });
      EXPECT_NE(e.find("key_indices shape [" + std::to_string(ls.batch)),
                std::string::npos)
          << e;
      EXPECT_NE(e.find("does not broadcast"), std::string::npos) << e;
      EXPECT_EQ(bytes, before);
    }
    // With a block list: rejected, naming both.
    const std::int32_t one = 1, zero = 0;
    BlockList blocks;
    blocks.num_blocks = &one;
    blocks.indices = &zero;
    blocks.batch = blocks.heads = blocks.q_blocks = blocks.max_blocks = 1;
    blocks.q_block = 2;
    blocks.k_block = 64;
    const MaskSpec both = MaskSpec::none()
                              .with_key_indices(slots.data(), {1, 1, 1, 4})
                              .with_block_list(blocks);
    const std::string e = ErrorOf([&] { masked_softmax(v, both, {}); });
    EXPECT_NE(e.find("key list (key_indices) and a block list (block_list)"),
              std::string::npos)
        << e;
    // The split softmax does not take key lists.
    std::vector<SoftmaxPartStats> stats(s.rows());
    const MaskSpec listed =
        MaskSpec::none().with_key_indices(slots.data(), {1, 1, 1, 4});
    const std::string split = ErrorOf([&] {
      masked_softmax_part(v, listed, {0, 10}, stats.data(), {});
    });
    EXPECT_NE(split.find("masked_softmax_part: a mask with a key list"),
              std::string::npos)
        << split;
    EXPECT_EQ(bytes, before);
  }
}

// n = 0 lists no key: every row is fully masked (zeros, lse -inf), and
// kept-only writes nothing.
TEST_P(KeyListTest, NoSlotsMaskEveryKey) {
  const Shape4 s{1, 2, 3, 20};
  std::mt19937_64 rng(1);
  const std::int32_t unused = 0;
  const MaskSpec mask =
      MaskSpec::causal().with_key_indices(&unused, Shape4{1, 1, 1, 0});
  for (ScoreType type : kTypes) {
    const testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> bytes, before;
    const ScoreView v = testing::SameViewIn(t, bytes);
    before = bytes;
    SoftmaxOptions kept_only;
    kept_only.zero_masked = false;
    masked_softmax(v, mask, kept_only);
    EXPECT_EQ(bytes, before);
    std::vector<float> lse(s.rows(), 1.0f);
    SoftmaxOptions def;
    def.row_lse = lse.data();
    masked_softmax(v, mask, def);
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const double p = testing::Get(v, testing::Offset(v, 0, h, q, k));
          EXPECT_TRUE(p == 0.0 && !std::signbit(p));
        }
    for (float l : lse) EXPECT_EQ(l, -testing::kInf);
    EXPECT_EQ(kept_keys(mask, 0, 1, s.q_len, s.k_len).count, 0u);
  }
}

}  // namespace
}  // namespace rlx
