// SPDX-License-Identifier: MIT OR Apache-2.0
// How the softmax runs its rows (src/softmax/plain_loop-inl.h): rows in
// batches behind longer rows, decode rows as runs of heads whose row ranges
// get the whole call's bits, and rows whose vectors are empty, kept or
// mixed (paged positions, biases masking runs of keys), whole or split.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
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

using ::rlx::testing::KernelMismatch;
using ::rlx::testing::kInf;
using ::rlx::testing::kTypes;
using ::rlx::testing::RandomScores;
using ::rlx::testing::ShapeName;
using ::rlx::testing::WholeOrSplitMismatch;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// Rows that keep at most 1024 keys run in batches that point at their kept
// intervals (src/softmax/plain_loop-inl.h); longer rows run alone. Causal
// rows of 1040 keys, 24 queries: the first 8 of a head keep 1017-1024 keys and
// wait in a batch while the 16 longer ones, each with its own intervals, run
// first; the next head's first row then runs the batch. A batch whose rows'
// intervals were overwritten by the rows in between gives wrong results.
TEST_P(SoftmaxExtTest, BatchedRowsBehindLongerRowsMatchTheOracle) {
  std::mt19937_64 rng(20261202);
  const Shape4 s{2, 2, 24, 1040};
  const MaskSpec mask = MaskSpec::causal();
  const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
  for (const bool alibi : {false, true}) {
    SoftmaxOptions options;
    if (alibi) options.alibi_slopes = slopes.data();
    for (ScoreType type : kTypes) {
      ASSERT_EQ(KernelMismatch(rng, type, s, mask, options, mask, options), "")
          << testing::TypeName(type) << (alibi ? " alibi" : "");
    }
  }
}

// Single-query rows (a decode step) run as runs of heads that share their
// batch entry's kept intervals (src/softmax/plain_loop-inl.h). Row ranges
// from every row, 1, 3 or 11 rows long or to the last row (so starting and
// ending inside a batch entry or across entries), give their rows exactly
// the whole call's bits (a row's result never depends on its
// range) and leaves the other rows alone; the whole call matches the
// oracle. Entries keep from none to more than a plain 16-bit row's 1024
// keys, and rows the batches hand back (a +inf, a NaN or no finite score)
// sit in the middle of runs. Ten heads make two batches per entry, so that a
// batch carries the next one's pass 1 (f32 rows; 16-bit rows on AVX-512, which
// convert them on load): in calls of 40 keys, and in the whole
// calls of 1100 keys (above the prefetch threshold) when kept-only or when
// their rows are too long for a batch's plan; there, default-mode batches
// of 1024-key rows take a plan instead.
TEST_P(SoftmaxExtTest, DecodeHeadRunsGiveRowRangesTheWholeCallsBits) {
  std::mt19937_64 rng(20261203);
  for (const std::size_t k_len : {std::size_t{40}, std::size_t{1100}}) {
    const Shape4 s{4, 10, 1, k_len};
    // Query positions per entry: no key, 21 keys, k_len - 1 (a row of 1100
    // keys: general for 16-bit rows, plain for f32 ones, whose longest plain
    // row keeps 2730), and 1024 keys (the longest plain 16-bit row, or every
    // key).
    const std::int64_t positions[] = {
        -1, 20, static_cast<std::int64_t>(k_len) - 1,
        std::min<std::int64_t>(1023, static_cast<std::int64_t>(k_len) - 1)};
    MaskSpec mask = MaskSpec::causal();
    mask.query_offsets = positions;
    const std::vector<float> sinks = {-kInf, 0.5f, 3.0f,  -kInf, 1.0f,
                                      -kInf, 2.0f, -kInf, 0.0f,  -kInf};
    for (ScoreType type : kTypes) {
      for (const bool zero_masked : {true, false}) {
        testing::Tensor t = RandomScores(rng, type, s);
        testing::Set(t.view, testing::Offset(t.view, 1, 9, 0, 3), kInf);
        testing::Set(t.view, testing::Offset(t.view, 2, 0, 0, 5),
                     std::numeric_limits<float>::quiet_NaN());
        for (std::size_t k = 0; k < k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, 3, 8, 0, k), -kInf);
        }
        SoftmaxOptions options;
        options.zero_masked = zero_masked;
        options.sink_logits = sinks.data();
        std::vector<float> lse_whole(s.rows(), 7.0f), lse_want(s.rows(), 7.0f);
        // Every call runs at the same address (`work`): the general rows'
        // loops align to it, so their sums' order, and with it the last
        // bit, may depend on it (the plain rows' never do).
        std::vector<std::uint8_t> before_bytes, work_bytes, want_bytes;
        const ScoreView before = testing::SameViewIn(t, before_bytes);
        const ScoreView work = testing::SameViewIn(t, work_bytes);
        const ScoreView want = testing::SameViewIn(t, want_bytes);
        options.row_lse = lse_whole.data();
        masked_softmax(work, mask, options);
        std::vector<std::uint8_t> whole_bytes = work_bytes;
        ScoreView whole = work;
        whole.data =
            whole_bytes.data() +
            (static_cast<const std::uint8_t*>(work.data) - work_bytes.data());
        SoftmaxOptions ref_options = options;
        ref_options.row_lse = lse_want.data();
        reference::masked_softmax(want, want, mask, ref_options,
                                  RowRange::all(s));
        const std::string where = std::string(testing::TypeName(type)) +
                                  ShapeName(s) +
                                  (zero_masked ? "" : " kept-only");
        ASSERT_EQ(testing::SoftmaxMismatch(before, whole, want, mask, options,
                                           lse_whole.data(), lse_want.data()),
                  "")
            << where;
        for (std::size_t begin = 0; begin < s.rows(); ++begin) {
          for (const std::size_t end :
               {begin + 1, begin + 3, begin + 11, s.rows()}) {
            if (end > s.rows()) continue;
            std::copy(before_bytes.begin(), before_bytes.end(),
                      work_bytes.begin());
            const ScoreView& got = work;
            std::vector<float> lse(s.rows(), 7.0f);
            options.row_lse = lse.data();
            masked_softmax(got, got, mask, options, RowRange{begin, end});
            for (std::size_t r = 0; r < s.rows(); ++r) {
              const bool in = begin <= r && r < end;
              const std::size_t b = r / s.heads, h = r % s.heads;
              for (std::size_t k = 0; k < k_len; ++k) {
                const std::size_t at = testing::Offset(got, b, h, 0, k);
                const double x = testing::Get(got, at);
                const double y = testing::Get(in ? whole : before, at);
                ASSERT_TRUE(std::memcmp(&x, &y, sizeof(x)) == 0 ||
                            (std::isnan(x) && std::isnan(y)))
                    << where << " rows [" << begin << "," << end << ") row "
                    << r << " key " << k << ": " << x << " vs " << y;
              }
              const float l = in ? lse_whole[r] : 7.0f;
              ASSERT_TRUE(std::memcmp(&lse[r], &l, sizeof(l)) == 0 ||
                          (std::isnan(lse[r]) && std::isnan(l)))
                  << where << " rows [" << begin << "," << end << ") lse " << r;
            }
          }
        }
      }
    }
  }
}

// A paged KV cache: pages of 4 to 64 slots in shuffled order, some empty
// (position -1), so that whole vectors of a row are empty, all kept or
// mixed (the rows' vector map, src/softmax/softmax_vector_map-inl.h), at every
// length and alignment: whole rows, kept-only writes and split parts
// against the oracle.
TEST_P(SoftmaxExtTest, PagedPositionsMatchTheOracle) {
  std::mt19937_64 rng(4096);
  const int iterations = testing::ScaledIterations(60);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t page = std::size_t{4} << (rng() % 5);
    const std::size_t n = 1 + rng() % (it % 5 == 0 ? 9000 : 1500);
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1, n};
    std::vector<std::size_t> order((n + page - 1) / page);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const std::size_t valid = rng() % (n + 1);
    std::vector<std::int64_t> k_pos(s.batch * n, -1), q_pos(s.batch);
    for (std::size_t b = 0; b < s.batch; ++b) {
      for (std::size_t p = 0; p < order.size(); ++p) {
        for (std::size_t i = 0; i < page; ++i) {
          const std::size_t pos = p * page + i, slot = order[p] * page + i;
          if (pos < valid && slot < n) {
            k_pos[b * n + slot] = static_cast<std::int64_t>(pos);
          }
        }
      }
      q_pos[b] = static_cast<std::int64_t>(valid) - 1 -
                 static_cast<std::int64_t>(rng() % 3);
    }
    const MaskSpec mask =
        MaskSpec::causal().with_positions(q_pos.data(), k_pos.data());
    SoftmaxOptions options;
    options.scale = 0.5f;
    options.zero_masked = rng() % 3 != 0;
    const ScoreType type = kTypes[it % 3];
    const bool split = it % 2 == 1;
    ASSERT_EQ(WholeOrSplitMismatch(rng, type, s, mask, options, split), "")
        << testing::TypeName(type) << " n " << n << " page " << page
        << " valid " << valid << (split ? " split" : "") << " iteration " << it;
  }
}

// A bias that masks whole runs of keys (a causal mask given as a bias, and
// random -inf blocks), so that whole vectors are masked, kept or mixed:
// every type, length and alignment, whole rows, kept-only writes and split
// parts against the oracle. Half the rows end in a -inf tail of any length
// and a third start with one (left padding): the masked ends that pass 1
// finds (kFindsMaskedEnds). Some rows have one key in them unmasked or NaN,
// which the ends must not swallow.
TEST_P(SoftmaxExtTest, BiasMaskingRunsMatchesTheOracle) {
  std::mt19937_64 rng(512);
  const int iterations = testing::ScaledIterations(80);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 1 + rng() % (it % 5 == 0 ? 5000 : 700);
    const Shape4 s{1, 1 + rng() % 2, 1 + rng() % 4, n};
    std::vector<float> bias(s.rows() * n);
    const std::size_t block = std::size_t{1} << (rng() % 7);
    for (std::size_t r = 0; r < s.rows(); ++r) {
      const std::size_t q = r % s.q_len;
      const std::size_t diagonal =
          rng() % 2 == 0 ? n - s.q_len + q : rng() % (n + 1);
      const bool blocks = rng() % 2 == 0;
      const std::size_t padding = rng() % 3 == 0 ? rng() % (n + 1) : 0;
      for (std::size_t k = 0; k < n; ++k) {
        const bool masked =
            k > diagonal || k < padding || (blocks && (k / block) % 3 == 1);
        bias[r * n + k] =
            masked ? -kInf : static_cast<float>(rng() % 9) * 0.25f - 1.0f;
      }
      switch (rng() % 8) {
        case 0:  // one key kept anywhere, in the tail most often
          bias[r * n + rng() % n] = 0.5f;
          break;
        case 1:  // one NaN: the row is NaN
          bias[r * n + rng() % n] = std::nanf("");
          break;
        default:
          break;
      }
    }
    const MaskSpec mask = MaskSpec::bias(bias.data(), s);
    SoftmaxOptions options;
    options.scale = 0.5f;
    options.softcap = rng() % 4 == 0 ? 5.0f : 0.0f;
    options.zero_masked = rng() % 3 != 0;
    const ScoreType type = kTypes[it % 3];
    const bool split = it % 2 == 1;
    ASSERT_EQ(WholeOrSplitMismatch(rng, type, s, mask, options, split), "")
        << testing::TypeName(type) << " n " << n << " block " << block
        << (split ? " split" : "") << " iteration " << it;
  }
}

}  // namespace
}  // namespace rlx
