// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax extensions (docs/SEMANTICS.md, "Softmax extensions"): learned
// sink logits, in-kernel ALiBi, row log-sum-exp with the split-row merge,
// and kept-only writes, on every compiled target and row type, against the
// double-precision oracle (tests/reference/reference.cc) and against the
// formulations the models' own code uses (gpt-oss: the sink as an extra column;
// ggml's slopes; ALiBi as a materialised bias).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
#include "src/softmax/thread_exp_buffer.h"
#include "tests/common/error_of.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using ::rlx::testing::ErrorOf;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr ScoreType kTypes[] = {ScoreType::kF32, ScoreType::kBF16,
                                ScoreType::kF16};

// ggml's slopes, transcribed from ggml_soft_max (ggml.c / ggml-cpu):
// n_head_log2 = 1 << floor(log2(n_head)), in f32 with powf.
std::vector<float> GgmlSlopes(int n_head, float max_bias) {
  const std::uint32_t n_head_log2 =
      1u << static_cast<std::uint32_t>(std::floor(std::log2(n_head)));
  const float m0 = powf(2.0f, -(max_bias) / n_head_log2);
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / n_head_log2);
  std::vector<float> out;
  for (int h = 0; h < n_head; ++h) {
    out.push_back(static_cast<std::uint32_t>(h) < n_head_log2
                      ? powf(m0, h + 1)
                      : powf(m1, 2 * (h - static_cast<int>(n_head_log2)) + 1));
  }
  return out;
}

// A mask with every array it points to. `rules_only`: no dense part (so a
// materialised ALiBi bias can be added on top).
struct ExtMask {
  MaskSpec mask;
  std::vector<std::int64_t> offsets, prefix, q_pos, k_pos;
  std::vector<std::int32_t> q_seg, k_seg;
  std::vector<std::uint8_t> keep;
  std::vector<std::uint64_t> bits;
  std::vector<float> bias;
  std::string name;
  bool rules_only = true;
};

void RandomMask(std::mt19937_64& rng, const Shape4& s, ExtMask& m) {
  const auto below = [&](std::size_t n) { return n == 0 ? 0 : rng() % n; };
  const std::size_t n = s.k_len;
  const std::size_t elems = s.batch * s.heads * s.q_len * n;
  switch (rng() % 13) {
    case 0:
      m.mask = MaskSpec::none(), m.name = "none";
      break;
    case 1:
      m.mask = MaskSpec::causal(), m.name = "causal";
      break;
    case 2:
      m.mask = MaskSpec::sliding_window(below(n + 1)), m.name = "sliding";
      break;
    case 3: {
      const std::size_t past = below(n);
      m.mask = MaskSpec::decode(past, n - 1, rng() % 2 ? 0 : below(n + 1));
      m.name = "decode(" + std::to_string(past) + ")";
      break;
    }
    case 4:
      m.mask = MaskSpec::causal().with_window_keys(1 + below(n + 1));
      m.name = "causal+window_keys";
      break;
    case 5:
      m.mask = MaskSpec::causal().with_chunk(1 + below(n + 1));
      m.name = "causal+chunk";
      break;
    case 6:
      m.prefix.resize(s.batch);
      for (auto& v : m.prefix) v = static_cast<std::int64_t>(below(n + 2));
      m.mask = MaskSpec::causal().with_prefix(m.prefix.data());
      m.name = "causal+prefix";
      break;
    case 7:
      m.mask = MaskSpec::sliding_window(below(n)).with_sink_keys(1 + below(3));
      m.name = "sliding+sink_keys";
      break;
    case 8:
      m.q_pos.resize(s.batch * s.q_len);
      m.k_pos.resize(s.batch * n);
      for (auto& v : m.q_pos) v = static_cast<std::int64_t>(below(n + 3));
      for (auto& v : m.k_pos) {
        v = rng() % 8 == 0 ? -1 : static_cast<std::int64_t>(below(n + 3));
      }
      m.mask =
          MaskSpec::causal().with_positions(m.q_pos.data(), m.k_pos.data());
      m.name = "causal+positions";
      break;
    case 9:
      m.offsets.resize(s.batch);
      for (auto& v : m.offsets) v = static_cast<std::int64_t>(below(2 * n)) - 3;
      m.mask = MaskSpec::causal().with_query_offsets(m.offsets.data());
      m.name = "causal+query_offsets";
      break;
    case 10:
      m.q_seg.resize(s.batch * s.q_len);
      m.k_seg.resize(s.batch * n);
      for (auto& v : m.q_seg) v = static_cast<std::int32_t>(rng() % 2);
      for (auto& v : m.k_seg) v = static_cast<std::int32_t>(rng() % 2);
      m.mask = MaskSpec::causal().with_segments(m.q_seg.data(), m.k_seg.data());
      m.name = "causal+segments";
      break;
    case 11:
      m.keep.resize(elems);
      for (auto& v : m.keep) v = rng() % 4 != 0;
      m.mask = MaskSpec::keep(m.keep.data(), s), m.name = "keep_u8";
      m.rules_only = false;
      break;
    default: {
      const std::size_t words = (n + 63) / 64;
      m.bits.resize(s.batch * s.heads * s.q_len * words);
      for (auto& v : m.bits) v = rng() | rng();
      m.bias.resize(elems);
      for (auto& v : m.bias) {
        v = rng() % 10 == 0 ? -kInf : static_cast<float>(rng() % 7) - 3.0f;
      }
      const std::uint64_t pick = rng() % 3;
      if (pick == 0) {
        m.mask =
            MaskSpec::decode(below(n), n - 1).with_keep_bits(m.bits.data(), s);
        m.name = "decode+keep_bits";
      } else if (pick == 1) {
        // A dense part alone: the f32 rows' own loop (DenseF32RowsOf).
        m.mask = MaskSpec::bias(m.bias.data(), s);
        m.name = "bias";
      } else {
        m.mask = MaskSpec::causal().with_bias(m.bias.data(), s);
        m.name = "causal+bias";
      }
      m.rules_only = false;
    }
  }
}

testing::Tensor RandomScores(std::mt19937_64& rng, ScoreType type,
                             const Shape4& s) {
  testing::Tensor t = testing::MakeTensor(type, s, rng() % 3, rng() % 5);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                       static_cast<float>(rng() % 2001) / 100.0f - 10.0f);
        }
  return t;
}

std::string ShapeName(const Shape4& s) {
  return "[" + std::to_string(s.batch) + "," + std::to_string(s.heads) + "," +
         std::to_string(s.q_len) + "," + std::to_string(s.k_len) + "]";
}

// masked_softmax of random scores under (mask, options) against the oracle
// under (ref_mask, ref_options), in place: SoftmaxMismatch's verdict ("" on
// a match), checked under the oracle's mask and options.
std::string KernelMismatch(std::mt19937_64& rng, ScoreType type,
                           const Shape4& s, const MaskSpec& mask,
                           const SoftmaxOptions& options,
                           const MaskSpec& ref_mask,
                           const SoftmaxOptions& ref_options) {
  testing::Tensor t = RandomScores(rng, type, s);
  std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
  const ScoreView before = testing::SameViewIn(t, before_bytes);
  const ScoreView got = testing::SameViewIn(t, got_bytes);
  const ScoreView want = testing::SameViewIn(t, want_bytes);
  masked_softmax(got, mask, options);
  reference::masked_softmax(want, want, ref_mask, ref_options,
                            RowRange::all(s));
  return testing::SoftmaxMismatch(before, got, want, ref_mask, ref_options);
}

// masked_softmax of t's scores under (mask, options) against the oracle
// under the same, on copies of t: SoftmaxMismatch's verdict ("" on a
// match), with the rows' log-sum-exp when options asks for it. In place,
// or out of place into another tensor (whose input must stay untouched).
std::string OracleMismatch(const testing::Tensor& t, const MaskSpec& mask,
                           SoftmaxOptions options, bool out_of_place = false) {
  const Shape4& s = t.view.shape;
  std::vector<float> lse(s.rows(), 7.0f), lse_want(s.rows(), 7.0f);
  const bool with_lse = options.row_lse != nullptr;
  std::vector<std::uint8_t> in_bytes, want_bytes, before_bytes;
  const ScoreView before = testing::SameViewIn(t, before_bytes);
  const ScoreView in = testing::SameViewIn(t, in_bytes);
  const ScoreView want = testing::SameViewIn(t, want_bytes);
  testing::Tensor out_storage = testing::MakeTensor(t.view.type, s, 3, 1);
  const ScoreView got = out_of_place ? out_storage.view : in;
  if (with_lse) options.row_lse = lse.data();
  masked_softmax(in, got, mask, options, RowRange::all(s));
  if (out_of_place && in_bytes != before_bytes) {
    return "out of place: the input was written";
  }
  SoftmaxOptions ref_options = options;
  if (with_lse) ref_options.row_lse = lse_want.data();
  reference::masked_softmax(want, want, mask, ref_options, RowRange::all(s));
  return testing::SoftmaxMismatch(before, got, want, mask, options,
                                  with_lse ? lse.data() : nullptr,
                                  with_lse ? lse_want.data() : nullptr);
}

// Sink logits per head drawn from large, small, zero and -inf (no sink).
std::vector<float> RandomSinks(std::mt19937_64& rng, std::size_t heads) {
  static constexpr float kChoices[] = {-kInf, -30.0f, -2.0f, 0.0f,
                                       0.5f,  3.0f,   25.0f, 1e4f};
  std::vector<float> out(heads);
  for (auto& v : out) v = kChoices[rng() % 8];
  return out;
}

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

// Sinks, ALiBi and row_lse, alone and together, on random masks, shapes and
// views of every row type, against the oracle.
TEST_P(SoftmaxExtTest, SinksAlibiAndLseMatchTheOracle) {
  std::mt19937_64 rng(20261201);
  const int iterations = testing::ScaledIterations(600);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 4,
                   1 + rng() % (it % 4 == 0 ? 300 : 40)};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
    std::vector<float> lse(s.rows(), 123.0f), lse_want(s.rows(), 456.0f);
    SoftmaxOptions options;
    options.scale = 0.5f;
    options.softcap = rng() % 3 == 0 ? 5.0f : 0.0f;
    const int which = static_cast<int>(rng() % 4);
    if (which != 1) options.sink_logits = sinks.data();
    if (which != 0) options.alibi_slopes = slopes.data();
    options.row_lse = lse.data();
    for (ScoreType type : kTypes) {
      testing::Tensor t = RandomScores(rng, type, s);
      std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      const ScoreView got = testing::SameViewIn(t, got_bytes);
      const ScoreView want = testing::SameViewIn(t, want_bytes);
      masked_softmax(got, em.mask, options);
      SoftmaxOptions ref_options = options;
      ref_options.row_lse = lse_want.data();
      reference::masked_softmax(want, want, em.mask, ref_options,
                                RowRange::all(s));
      const std::string where = std::string(testing::TypeName(type)) + " " +
                                em.name + " " + ShapeName(s) + " iteration " +
                                std::to_string(it);
      ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, em.mask, options,
                                         lse.data(), lse_want.data()),
                "")
          << where;
      testing::Tensor g{got_bytes, got};
      g.view.data =
          g.bytes.data() +
          (static_cast<const std::uint8_t*>(got.data) - got_bytes.data());
      ASSERT_EQ(testing::UntouchedOutside(g, g.view), "") << where;
    }
  }
}

// Rows that keep at most 1024 keys run in batches that point at their kept
// intervals (src/softmax/softmax_rows-inl.h); longer rows run alone. Causal
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
// batch entry's kept intervals (src/softmax/softmax_rows-inl.h). Row ranges
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

// Plain ALiBi rows store their transformed scores t in pass 1: f32 rows
// into the output row, over their kept keys (in place: over the scores),
// 16-bit rows into the batch's scratch. A row that leaves its batch after
// pass 1 (a +inf or NaN key, every kept key -inf, or a maximum beyond the
// plain argument's limit) is finished by the general code: f32 rows from
// their t, 16-bit rows from their input. Causal rows of 29-40 keys, every
// one plain, those that leave sitting between rows that stay; in place and
// out of place (whose input must stay untouched).
TEST_P(SoftmaxExtTest, AlibiRowsHandedBackMatchTheOracle) {
  std::mt19937_64 rng(20261204);
  const Shape4 s{2, 3, 12, 40};
  const MaskSpec mask = MaskSpec::causal();
  const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
  for (ScoreType type : kTypes) {
    for (const bool zero_masked : {true, false}) {
      testing::Tensor t = RandomScores(rng, type, s);
      testing::Set(t.view, testing::Offset(t.view, 0, 1, 3, 2), kInf);
      testing::Set(t.view, testing::Offset(t.view, 1, 0, 7, 30),
                   std::numeric_limits<float>::quiet_NaN());
      for (std::size_t k = 0; k < s.k_len; ++k) {
        testing::Set(t.view, testing::Offset(t.view, 1, 2, 5, k), -kInf);
      }
      // 4e6 scale log2 e is beyond 2^20 (f16: +inf).
      testing::Set(t.view, testing::Offset(t.view, 0, 2, 10, 17), 4e6f);
      SoftmaxOptions options;
      options.zero_masked = zero_masked;
      options.scale = 0.5f;
      options.alibi_slopes = slopes.data();
      std::vector<float> lse(s.rows());
      options.row_lse = lse.data();
      ASSERT_EQ(OracleMismatch(t, mask, options), "")
          << testing::TypeName(type) << (zero_masked ? "" : " kept-only");
      ASSERT_EQ(OracleMismatch(t, mask, options, /*out_of_place=*/true), "")
          << testing::TypeName(type) << (zero_masked ? "" : " kept-only")
          << " out of place";
    }
  }
}

// gpt-oss writes the sink as an extra column of the scores: softmax over
// [scores, sink], then drop the column. The kernel's sinks agree with that.
TEST_P(SoftmaxExtTest, SinksEqualTheExtraColumnFormulation) {
  std::mt19937_64 rng(77);
  for (std::size_t n : {1, 2, 7, 16, 33, 100, 257, 1000}) {
    for (float sink : {-kInf, -50.0f, -3.0f, 0.0f, 2.5f, 12.0f, 80.0f}) {
      const Shape4 s{1, 1, 1, n};
      std::vector<float> scores(n), extra(n + 1);
      for (std::size_t k = 0; k < n; ++k) {
        scores[k] = static_cast<float>(rng() % 2001) / 100.0f - 10.0f;
        extra[k] = scores[k];
      }
      extra[n] = sink;
      const float sinks[] = {sink};
      SoftmaxOptions options;
      options.sink_logits = sinks;
      masked_softmax(ScoreView::f32(scores.data(), s), MaskSpec::none(),
                     options);
      masked_softmax(ScoreView::f32(extra.data(), Shape4{1, 1, 1, n + 1}),
                     MaskSpec::none());
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) {
        ASSERT_NEAR(scores[k], extra[k], 1e-6 * extra[k] + 1e-37)
            << "n " << n << " sink " << sink << " key " << k;
        sum += scores[k];
      }
      EXPECT_LE(sum, 1.0 + 1e-6);
      if (sink != -kInf) {
        EXPECT_NEAR(sum, 1.0 - extra[n], 1e-6);
      }
    }
  }
}

// A row with no kept key stays all zeros with a sink, and its lse is -inf;
// so is a row whose kept scores are all -inf.
TEST_P(SoftmaxExtTest, FullyMaskedRowsStayZeroWithSinks) {
  for (ScoreType type : kTypes) {
    const Shape4 s{1, 2, 3, 37};
    testing::Tensor t = testing::MakeTensor(type, s, 1, 1);
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t q = 0; q < 3; ++q)
        for (std::size_t k = 0; k < 37; ++k) {
          testing::Set(t.view, testing::Offset(t.view, 0, h, q, k),
                       q == 2 ? -kInf : 1.0f);
        }
    std::vector<std::uint8_t> keep(37, 0);
    keep[5] = 1;  // kept by row 1 only (below)
    std::vector<float> bias(3 * 37, -kInf);
    for (std::size_t k = 0; k < 37; ++k) bias[37 + k] = 0.0f;  // row 1 keeps
    const float sinks[] = {3.0f, -1.0f};
    const float slopes[] = {0.5f, 0.25f};
    std::vector<float> lse(6, 0.0f);
    SoftmaxOptions options;
    options.sink_logits = sinks;
    options.alibi_slopes = slopes;
    options.row_lse = lse.data();
    masked_softmax(t.view, MaskSpec::bias(bias.data(), Shape4{1, 1, 3, 37}),
                   options);
    for (std::size_t h = 0; h < 2; ++h) {
      for (std::size_t q : {0, 2}) {
        for (std::size_t k = 0; k < 37; ++k) {
          const double p =
              testing::Get(t.view, testing::Offset(t.view, 0, h, q, k));
          ASSERT_TRUE(p == 0.0 && !std::signbit(p))
              << testing::TypeName(type) << " h " << h << " q " << q;
        }
        EXPECT_EQ(lse[h * 3 + q], -kInf);
      }
      EXPECT_TRUE(std::isfinite(lse[h * 3 + 1]));
    }
  }
}

// ggml's slopes for 1..64 heads (powers of two and not) and several biases.
TEST(AlibiSlopesTest, EqualGgmlsFormula) {
  for (float max_bias : {8.0f, 0.0f, 1.0f, 5.5f, 16.0f}) {
    for (int heads = 1; heads <= 64; ++heads) {
      const std::vector<float> got = alibi_slopes(heads, max_bias);
      const std::vector<float> want = GgmlSlopes(heads, max_bias);
      ASSERT_EQ(got.size(), want.size());
      for (int h = 0; h < heads; ++h) {
        ASSERT_EQ(got[h], want[h])
            << "heads " << heads << " head " << h << " max_bias " << max_bias;
      }
    }
  }
  // BLOOM's published slopes for 8 heads: 2^-1 .. 2^-8.
  const std::vector<float> eight = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[h], std::ldexp(1.0f, -(h + 1)));
  // 12 heads: 8 from 2^-1 step, then 4 interleaved from 2^-0.5 step.
  const std::vector<float> twelve = alibi_slopes(12);
  EXPECT_FLOAT_EQ(twelve[8], std::pow(2.0f, -0.5f));
  EXPECT_FLOAT_EQ(twelve[9], std::pow(2.0f, -1.5f));
}

TEST(AlibiSlopesTest, BadArgumentsAreNamedErrors) {
  EXPECT_THAT(ErrorOf([] { alibi_slopes(0); }),
              HasSubstr("alibi_slopes: heads is 0"));
  for (float bad : {std::nanf(""), -1.0f, kInf, -kInf}) {
    EXPECT_THAT(ErrorOf([&] { alibi_slopes(4, bad); }),
                HasSubstr("alibi_slopes: max_bias"))
        << bad;
  }
}

// In-kernel ALiBi equals the oracle given -slope |p_q - p_k| as a
// materialised bias, with every rule and the Decode layout (whose new token
// is at distance 0).
// Random scores of `type` under `mask` with ALiBi from `options`, against
// the oracle given the same terms as a materialised bias,
// -slope_h |p_q - p_k| per (b, h, q, k).
std::string AlibiMismatch(std::mt19937_64& rng, ScoreType type, const Shape4& s,
                          const MaskSpec& mask, const SoftmaxOptions& options) {
  std::vector<float> bias(s.rows() * s.k_len);
  for (std::size_t r = 0; r < s.rows(); ++r) {
    const std::size_t b = r / (s.heads * s.q_len);
    const std::size_t h = r / s.q_len % s.heads, q = r % s.q_len;
    for (std::size_t k = 0; k < s.k_len; ++k) {
      bias[r * s.k_len + k] =
          static_cast<float>(reference::alibi_at(mask, s, options, b, h, q, k));
    }
  }
  const MaskSpec with_bias = mask.with_bias(bias.data(), s);
  SoftmaxOptions plain = options;
  plain.alibi_slopes = nullptr;
  return KernelMismatch(rng, type, s, mask, options, with_bias, plain);
}

TEST_P(SoftmaxExtTest, AlibiEqualsAMaterialisedBias) {
  std::mt19937_64 rng(4242);
  const int iterations = testing::ScaledIterations(400);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 4, 1 + rng() % 3,
                   1 + rng() % (it % 3 == 0 ? 200 : 30)};
    ExtMask em;
    do {
      em = ExtMask{};
      RandomMask(rng, s, em);
    } while (!em.rules_only);
    const std::vector<float> slopes =
        alibi_slopes(s.heads, static_cast<float>(rng() % 9));
    SoftmaxOptions options;
    options.scale = 0.25f;
    options.alibi_slopes = slopes.data();
    for (ScoreType type : kTypes) {
      ASSERT_EQ(AlibiMismatch(rng, type, s, em.mask, options), "")
          << testing::TypeName(type) << " " << em.name << " " << ShapeName(s)
          << " iteration " << it;
    }
  }
}

// Short ALiBi rows run in plain batches, their distances stepped per vector
// in f32, which is exact below 2^24; rows whose distances reach it take the
// general path. Query offsets on both sides of 2^24, a slope small enough
// that the bound stays tight, every type: against the oracle.
TEST_P(SoftmaxExtTest, AlibiRowsNearTheExactDistanceLimitMatchTheOracle) {
  std::mt19937_64 rng(1 << 24);
  for (int it = 0; it < 24; ++it) {
    const Shape4 s{2, 2, 1 + rng() % 3, 1 + rng() % 400};
    const std::int64_t limit = std::int64_t{1} << 24;
    const std::int64_t offsets[] = {
        limit - static_cast<std::int64_t>(rng() % 600),
        static_cast<std::int64_t>(rng() % 600)};
    const MaskSpec mask = MaskSpec::causal().with_query_offsets(offsets);
    const float slopes[] = {0x1p-20f, 0x1p-18f};
    SoftmaxOptions options;
    options.alibi_slopes = slopes;
    const ScoreType type = kTypes[it % 3];
    ASSERT_EQ(AlibiMismatch(rng, type, s, mask, options), "")
        << testing::TypeName(type) << " " << ShapeName(s) << " offset "
        << offsets[0] << " iteration " << it;
  }
}

// The Decode layout: the new token at slot upper is at distance 0, so it
// gets no ALiBi penalty; a key at slot k < past gets slope (past - k).
TEST_P(SoftmaxExtTest, AlibiDecodeTokenIsAtDistanceZero) {
  const std::size_t past = 5, upper = 40;
  std::vector<float> scores(upper + 1, 0.0f);
  const float slopes[] = {1.0f};
  SoftmaxOptions options;
  options.alibi_slopes = slopes;
  masked_softmax(ScoreView::f32(scores.data(), Shape4{1, 1, 1, upper + 1}),
                 MaskSpec::decode(past, upper), options);
  double denominator = 1.0;  // the token
  for (std::size_t k = 0; k < past; ++k) denominator += std::exp(-(5.0 - k));
  EXPECT_NEAR(scores[upper], 1.0 / denominator, 1e-6);
  for (std::size_t k = 0; k < past; ++k) {
    EXPECT_NEAR(scores[k], std::exp(-(5.0 - k)) / denominator, 1e-6) << k;
  }
  for (std::size_t k = past; k < upper; ++k) EXPECT_EQ(scores[k], 0.0f);
}

// Splits rows of `s` (batch 1) at key `split` into two parts whose masks
// keep the whole row's positions (explicit positions, or query_offsets for
// shift-invariant rules), runs each with row_lse, merges, and compares with
// the unsplit result.
std::string SplitMismatch(ScoreType type, const Shape4& s, std::size_t split,
                          bool explicit_positions, std::size_t window,
                          const float* sinks, bool sinks_in_merge,
                          const float* slopes, std::mt19937_64& rng) {
  testing::Tensor t = RandomScores(rng, type, s);
  const std::size_t n = s.k_len;
  // The whole row: causal, optionally windowed, from query offset n - q_len.
  std::vector<std::int64_t> q_pos(s.q_len), k_pos(n);
  for (std::size_t q = 0; q < s.q_len; ++q) q_pos[q] = n - s.q_len + q;
  for (std::size_t k = 0; k < n; ++k) k_pos[k] = k;
  MaskSpec whole = MaskSpec::causal().with_window_keys(window);
  SoftmaxOptions options;
  options.sink_logits = sinks;
  options.alibi_slopes = slopes;
  std::vector<float> lse_whole(s.rows());
  options.row_lse = lse_whole.data();
  std::vector<std::uint8_t> whole_bytes, want_bytes, before_bytes;
  const ScoreView before = testing::SameViewIn(t, before_bytes);
  const ScoreView got = testing::SameViewIn(t, whole_bytes);
  const ScoreView want = testing::SameViewIn(t, want_bytes);
  masked_softmax(got, whole, options);
  std::vector<float> lse_want(s.rows());
  SoftmaxOptions ref_options = options;
  ref_options.row_lse = lse_want.data();
  reference::masked_softmax(want, want, whole, ref_options, RowRange::all(s));
  // The parts, in place in a copy of the scores.
  std::vector<std::uint8_t> parts_bytes;
  const ScoreView parts_view = testing::SameViewIn(t, parts_bytes);
  const std::size_t es = testing::ElemSize(type);
  std::vector<float> lse_a(s.rows()), lse_b(s.rows()), lse_merged(s.rows());
  std::vector<std::int64_t> offset_a{static_cast<std::int64_t>(n - s.q_len)},
      offset_b{static_cast<std::int64_t>(n - s.q_len) -
               static_cast<std::int64_t>(split)};
  SoftmaxPart parts[2];
  const std::size_t begins[] = {0, split}, ends[] = {split, n};
  for (int p = 0; p < 2; ++p) {
    ScoreView v = parts_view;
    v.data = static_cast<std::uint8_t*>(v.data) + begins[p] * es;
    v.shape.k_len = ends[p] - begins[p];
    MaskSpec m = MaskSpec::causal().with_window_keys(window);
    m = explicit_positions
            ? m.with_positions(q_pos.data(), k_pos.data() + begins[p])
            : m.with_query_offsets(p == 0 ? offset_a.data() : offset_b.data());
    SoftmaxOptions o = options;
    o.row_lse = p == 0 ? lse_a.data() : lse_b.data();
    // One part carries the sinks (the first: with a causal mask and no
    // window it has a kept key whenever the row has one), or the merge adds
    // them.
    o.sink_logits = (!sinks_in_merge && p == 0) ? sinks : nullptr;
    masked_softmax(v, m, o);
    parts[p] = {v, o.row_lse};
  }
  merge_softmax_parts(parts, lse_merged.data(),
                      sinks_in_merge ? sinks : nullptr);
  // The merged parts against the oracle (one more rounding than unsplit:
  // the bound's 2 + 2T has room for it), and the merged lse.
  std::string e =
      testing::SoftmaxMismatch(before, parts_view, want, whole, options,
                               lse_merged.data(), lse_want.data());
  if (!e.empty()) return "merged: " + e;
  return testing::SoftmaxMismatch(before, got, want, whole, options,
                                  lse_whole.data(), lse_want.data());
}

TEST_P(SoftmaxExtTest, SplitAndMergeEqualsTheWholeRowAtEverySplit) {
  std::mt19937_64 rng(99);
  const float sinks[] = {1.5f, -kInf};
  const float slopes[] = {0.125f, 0.5f};
  for (ScoreType type : kTypes) {
    for (std::size_t n : {2, 9, 20}) {
      const Shape4 s{1, 2, 3, n};
      for (std::size_t split = 1; split < n; ++split) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool explicit_positions = variant & 1;
          // A window can leave the first part without a kept key: then the
          // merge adds the sinks.
          const bool sinks_in_merge = variant & 2;
          const std::size_t window = variant == 3 ? n / 2 : 0;
          ASSERT_EQ(SplitMismatch(type, s, split, explicit_positions, window,
                                  sinks, sinks_in_merge,
                                  variant == 0 ? nullptr : slopes, rng),
                    "")
              << testing::TypeName(type) << " n " << n << " split " << split
              << " variant " << variant;
        }
      }
    }
  }
}

TEST_P(SoftmaxExtTest, SplitAndMergeEqualsTheWholeRowOnLongRows) {
  std::mt19937_64 rng(1234);
  const float sinks[] = {4.0f};
  const float slopes[] = {0.001f};
  const int iterations = testing::ScaledIterations(12);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 1000 + rng() % 9000;
    const std::size_t split = 1 + rng() % (n - 1);
    const ScoreType type = kTypes[it % 3];
    ASSERT_EQ(
        SplitMismatch(type, Shape4{1, 1, 1 + rng() % 2, n}, split, it % 2 == 0,
                      it % 4 == 1 ? n / 3 : 0, sinks, it % 3 == 2, slopes, rng),
        "")
        << testing::TypeName(type) << " n " << n << " split " << split;
  }
}

// A part with no kept key (lse -inf) is left as zeros and the others carry
// the row; a row with no kept key anywhere stays zeros with lse -inf.
TEST(SoftmaxMergeTest, HandlesPartsWithNoKeptKey) {
  std::vector<float> a{0.0f, 0.0f}, b{0.25f, 0.75f};
  const float lse_a[] = {-kInf}, lse_b[] = {std::log(2.0f)};
  const SoftmaxPart parts[] = {
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), lse_a},
      {ScoreView::f32(b.data(), Shape4{1, 1, 1, 2}), lse_b}};
  float merged = 0;
  merge_softmax_parts(parts, &merged);
  EXPECT_EQ(a[0], 0.0f);
  EXPECT_EQ(a[1], 0.0f);
  EXPECT_FLOAT_EQ(b[0], 0.25f);
  EXPECT_FLOAT_EQ(b[1], 0.75f);
  EXPECT_FLOAT_EQ(merged, std::log(2.0f));
  const float none[] = {-kInf};
  const SoftmaxPart empty[] = {
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), none},
      {ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), none}};
  merge_softmax_parts(empty, &merged);
  EXPECT_EQ(merged, -kInf);
  EXPECT_EQ(a[0], 0.0f);
}

TEST(SoftmaxMergeTest, BadPartsAreNamedErrorsAndWriteNothing) {
  std::vector<float> a{0.5f, 0.5f}, b{0.5f, 0.5f, 0.5f, 0.5f};
  std::vector<std::uint16_t> c(2, 0);
  const float lse[] = {0.0f, 0.0f};
  const SoftmaxPart ok{ScoreView::f32(a.data(), Shape4{1, 1, 1, 2}), lse};
  const auto err = [&](std::initializer_list<SoftmaxPart> parts) {
    return ErrorOf([&] {
      merge_softmax_parts(
          std::span<const SoftmaxPart>(parts.begin(), parts.size()));
    });
  };
  EXPECT_THAT(ErrorOf([] { merge_softmax_parts({}); }),
              HasSubstr("merge_softmax_parts: no parts"));
  EXPECT_THAT(err({ok, {ScoreView::f32(b.data(), Shape4{1, 2, 1, 2}), lse}}),
              HasSubstr("part 1 shape [1, 2, 1, 2] differs from part 0's "
                        "[1, 1, 1, 2]"));
  EXPECT_THAT(err({ok,
                   {ScoreView::bf16s(reinterpret_cast<bf16*>(c.data()),
                                     Shape4{1, 1, 1, 2}),
                    lse}}),
              HasSubstr("part 1 type 1 differs from part 0's 0"));
  EXPECT_THAT(err({ok, {ok.probs, nullptr}}),
              HasSubstr("part 1 row_lse is null"));
  EXPECT_THAT(err({{ScoreView::f32(nullptr, Shape4{1, 1, 1, 2}), lse}}),
              HasSubstr("part 0 probs.data is null"));
  const float nan_sink[] = {std::nanf("")};
  EXPECT_THAT(ErrorOf([&] {
                const SoftmaxPart one[] = {ok};
                merge_softmax_parts(one, nullptr, nan_sink);
              }),
              HasSubstr("sink_logits[0] (head 0) is nan"));
  EXPECT_EQ(a[0], 0.5f);
  EXPECT_EQ(b[0], 0.5f);
}

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

// The limit of the threads' exp buffers (src/softmax/thread_exp_buffer.h) for
// one scope.
class ScopedExpBufferLimit {
 public:
  explicit ScopedExpBufferLimit(std::size_t floats)
      : previous_(detail::SetThreadExpBufferLimit(floats)) {}
  ~ScopedExpBufferLimit() { detail::SetThreadExpBufferLimit(previous_); }
  ScopedExpBufferLimit(const ScopedExpBufferLimit&) = delete;
  ScopedExpBufferLimit& operator=(const ScopedExpBufferLimit&) = delete;

 private:
  std::size_t previous_;
};

// A 16-bit row longer than the stack scratch whose exp buffer cannot be
// allocated (here: beyond the limit, on a thread that has none): an error
// before anything is written, std::bad_alloc in C++ and RLX_OUT_OF_MEMORY
// naming the function in C. Rows that fit the scratch, and f32 rows, do
// not need it.
TEST_P(SoftmaxExtTest, AFailedExpBufferAllocationWritesNothing) {
  const ScopedExpBufferLimit limit(1000);
  std::thread([] {
    for (const ScoreType type : {ScoreType::kBF16, ScoreType::kF16}) {
      std::mt19937_64 rng(9000);
      const Shape4 s{1, 2, 1, 9000};
      const testing::Tensor t = RandomScores(rng, type, s);
      std::vector<std::uint8_t> got_bytes, before_bytes;
      testing::SameViewIn(t, before_bytes);  // the bytes, to compare with
      const ScoreView got = testing::SameViewIn(t, got_bytes);
      const std::string where = testing::TypeName(type);
      EXPECT_THROW(masked_softmax(got, MaskSpec::causal()), std::bad_alloc)
          << where;
      EXPECT_EQ(got_bytes, before_bytes) << where;
      rlx_score_view view{};
      view.data = got.data;
      view.type = type == ScoreType::kBF16 ? RLX_SCORE_BF16 : RLX_SCORE_F16;
      view.shape.batch = s.batch;
      view.shape.heads = s.heads;
      view.shape.q_len = s.q_len;
      view.shape.k_len = s.k_len;
      view.strides = rlx_contiguous_strides(view.shape);
      rlx_mask_spec mask;
      rlx_mask_spec_init(&mask);
      EXPECT_EQ(rlx_masked_softmax(&view, &mask, nullptr, nullptr),
                RLX_OUT_OF_MEMORY)
          << where;
      EXPECT_NE(std::string(rlx_last_error()).find("rlx_masked_softmax"),
                std::string::npos)
          << where << ": " << rlx_last_error();
      EXPECT_EQ(got_bytes, before_bytes) << where;
      // 8192 keys fit the stack scratch.
      const Shape4 s8192{1, 1, 1, 8192};
      const testing::Tensor fits = RandomScores(rng, type, s8192);
      std::vector<std::uint8_t> fits_bytes;
      EXPECT_NO_THROW(masked_softmax(testing::SameViewIn(fits, fits_bytes),
                                     MaskSpec::none()))
          << where;
    }
    std::vector<float> f32(2 * 9000, 1.0f);
    EXPECT_NO_THROW(masked_softmax(
        ScoreView::f32(f32.data(), Shape4{1, 2, 1, 9000}), MaskSpec::none()));
  }).join();
}

// Rows longer than the kernels' stack buffers (16-bit exp scratch of 8192
// keys, keep bytes in tiles of 8192: src/softmax/softmax_rows-inl.h): 16-bit
// rows then keep their exp values in the thread's exp buffer, and per-element
// rules are decided tile by tile in every pass. Every rule,
// sinks, ALiBi, row_lse and both write modes against the oracle; apply_mask
// bit for bit.
TEST_P(SoftmaxExtTest, RowsBeyondTheStackBuffersMatchTheOracle) {
  std::mt19937_64 rng(4097);
  const int iterations = testing::ScaledIterations(24);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = it % 3 == 0   ? 8177 + rng() % 64
                          : it % 3 == 1 ? 8193 + rng() % 300
                                        : 9000 + rng() % 9000;
    const Shape4 s{1, 1 + rng() % 2, 1 + rng() % 2, n};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads, 8.0f);
    std::vector<float> lse(s.rows(), 123.0f), lse_want(s.rows(), 456.0f);
    SoftmaxOptions options;
    options.scale = 0.5f;
    options.softcap = rng() % 3 == 0 ? 5.0f : 0.0f;
    if (rng() % 2) options.sink_logits = sinks.data();
    if (rng() % 2) options.alibi_slopes = slopes.data();
    options.row_lse = lse.data();
    options.zero_masked = rng() % 3 != 0;
    for (ScoreType type : kTypes) {
      const testing::Tensor t = RandomScores(rng, type, s);
      const std::string where = std::string(testing::TypeName(type)) + " " +
                                em.name + " " + ShapeName(s) + " iteration " +
                                std::to_string(it);
      std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
      const ScoreView before = testing::SameViewIn(t, before_bytes);
      ScoreView got = testing::SameViewIn(t, got_bytes);
      ScoreView want = testing::SameViewIn(t, want_bytes);
      masked_softmax(got, em.mask, options);
      SoftmaxOptions ref_options = options;
      ref_options.row_lse = lse_want.data();
      reference::masked_softmax(want, want, em.mask, ref_options,
                                RowRange::all(s));
      ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, em.mask, options,
                                         lse.data(), lse_want.data()),
                "")
          << where;
      if (!options.zero_masked) {
        // Keys outside kept_keys keep their scores bit for bit (those inside
        // it were checked above).
        const std::size_t es = testing::ElemSize(type);
        for (std::size_t h = 0; h < s.heads; ++h)
          for (std::size_t q = 0; q < s.q_len; ++q)
            for (std::size_t k = 0; k < n; ++k) {
              if (testing::Contains(kept_keys(em.mask, 0, q, s.q_len, n), k)) {
                continue;
              }
              const std::size_t off = testing::Offset(got, 0, h, q, k) * es;
              ASSERT_EQ(
                  std::memcmp(
                      static_cast<const std::uint8_t*>(got.data) + off,
                      static_cast<const std::uint8_t*>(before.data) + off, es),
                  0)
                  << where << " masked key " << k << " was written";
            }
      }
      got = testing::SameViewIn(t, got_bytes);
      want = testing::SameViewIn(t, want_bytes);
      apply_mask(got, em.mask, -1e9f);
      reference::apply_mask(want, em.mask, RowRange::all(s), -1e9f);
      ASSERT_EQ(testing::ApplyMismatch(got, want, em.mask), "") << where;
    }
  }
}

// 16-bit rows of up to 8192 keys keep their exp values in the stack
// scratch, longer ones in the thread's exp buffer: rows on both sides of
// the edge, with one to three kept intervals (sinks put one before the
// window, the Decode token one after it) at misaligned offsets, match the
// oracle.
TEST_P(SoftmaxExtTest, RowsAtTheScratchEdgeMatchTheOracle) {
  std::mt19937_64 rng(8192);
  for (const std::size_t past :
       {std::size_t{8110}, std::size_t{8140}, std::size_t{8151},
        std::size_t{8152}, std::size_t{8153}, std::size_t{8160},
        std::size_t{8169}, std::size_t{16390}}) {
    for (const std::size_t sinks : {std::size_t{0}, std::size_t{5}}) {
      const std::size_t n = past + 40;  // slots past..n-2 are padding
      const Shape4 s{1, 2, 1, n};
      MaskSpec mask = MaskSpec::decode(past, n - 1);
      // A window of past - 3 keys (with the query) leaves a gap of 4 keys
      // after the sinks: three intervals.
      if (sinks > 0)
        mask = mask.with_sink_keys(sinks).with_window_keys(past - 3);
      SoftmaxOptions options;
      options.scale = 0.5f;
      std::vector<float> lse(s.rows());
      options.row_lse = lse.data();
      for (ScoreType type : kTypes) {
        ASSERT_EQ(OracleMismatch(RandomScores(rng, type, s), mask, options), "")
            << testing::TypeName(type) << " k_len " << n << " sinks " << sinks;
      }
    }
  }
}

// NaN (or +inf) sinks and non-finite slopes: a named error naming the head
// and value, and nothing written.
TEST_P(SoftmaxExtTest, BadSinksAndSlopesAreNamedErrorsAndWriteNothing) {
  std::vector<float> scores(3 * 5, 1.0f);
  const std::vector<float> copy = scores;
  std::vector<float> lse(3, 7.0f);
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 3, 1, 5});
  const float nan = std::nanf("");
  const float bad_sinks[] = {0.0f, nan, 1.0f};
  const float inf_sinks[] = {0.0f, 0.0f, kInf};
  const float bad_slopes[] = {0.5f, 0.25f, nan};
  const float inf_slopes[] = {kInf, 0.25f, 0.5f};
  SoftmaxOptions o;
  o.row_lse = lse.data();
  o.sink_logits = bad_sinks;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::causal(), o); }),
              HasSubstr("masked_softmax: sink_logits[1] (head 1) is nan"));
  o.sink_logits = inf_sinks;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::causal(), o); }),
              HasSubstr("sink_logits[2] (head 2) is inf"));
  o.sink_logits = nullptr;
  o.alibi_slopes = bad_slopes;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::none(), o); }),
              HasSubstr("masked_softmax: alibi_slopes[2] (head 2) is nan"));
  o.alibi_slopes = inf_slopes;
  EXPECT_THAT(ErrorOf([&] { masked_softmax(v, MaskSpec::none(), o); }),
              HasSubstr("alibi_slopes[0] (head 0) is inf"));
  EXPECT_EQ(scores, copy);
  EXPECT_EQ(lse, std::vector<float>(3, 7.0f));
  // -inf sinks are no sink: accepted.
  const float no_sinks[] = {-kInf, -kInf, -kInf};
  o.alibi_slopes = nullptr;
  o.sink_logits = no_sinks;
  masked_softmax(v, MaskSpec::none(), o);
  EXPECT_NEAR(scores[0], 0.2f, 1e-6);
  EXPECT_NEAR(lse[0], 1.0f + std::log(5.0f), 1e-6);
}

// Key ranges: balanced splits of the row (0, 0)'s kept keys (the ranges of
// one call apply to all its rows), or random cut points.
std::vector<KeyRange> RandomKeyRanges(std::mt19937_64& rng,
                                      const MaskSpec& mask, const Shape4& s,
                                      std::size_t parts) {
  std::vector<KeyRange> ranges(parts);
  if (rng() % 2) {
    const KeptKeys kept = kept_keys(mask, 0, 0, s.q_len, s.k_len);
    for (std::size_t p = 0; p < parts; ++p) {
      ranges[p] = split_kept_keys(kept, s.k_len, p, parts);
    }
    return ranges;
  }
  std::vector<std::size_t> cuts{0, s.k_len};
  for (std::size_t p = 1; p < parts; ++p) cuts.push_back(rng() % (s.k_len + 1));
  std::sort(cuts.begin(), cuts.end());
  for (std::size_t p = 0; p < parts; ++p) ranges[p] = {cuts[p], cuts[p + 1]};
  return ranges;
}

// Every part's step 1, then every part's finish, in place (one after
// another: thread_test runs them on threads).
void RunSplit(const ScoreView& v, const MaskSpec& mask,
              const SoftmaxOptions& options,
              const std::vector<KeyRange>& ranges, RowRange rows) {
  const std::size_t parts = ranges.size();
  std::vector<std::vector<SoftmaxPartStats>> stats(
      parts, std::vector<SoftmaxPartStats>(v.shape.rows(), {7.0, 7.0}));
  std::vector<const SoftmaxPartStats*> pointers;
  for (const auto& st : stats) pointers.push_back(st.data());
  // Step 1 last part first, finishes first part first: a part that wrote
  // outside its range would overwrite another's result.
  for (std::size_t p = parts; p-- > 0;) {
    masked_softmax_part(v, mask, ranges[p], stats[p].data(), options, rows);
  }
  for (std::size_t p = 0; p < parts; ++p) {
    SoftmaxOptions o = options;
    if (p != 0) o.row_lse = nullptr;  // one part writes the lse
    finish_softmax_part(v, mask, ranges[p], pointers, p, o, rows);
  }
}

// A row split into parts and finished in place is the whole row's masked
// softmax: every mask, option, row type and mode, against the oracle; in
// kept-only mode the keys outside kept_keys are left alone.
TEST_P(SoftmaxExtTest, SplitRowsFinishedInPlaceMatchTheOracle) {
  std::mt19937_64 rng(2026);
  const int iterations = testing::ScaledIterations(200);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 3,
                   1 + rng() % (it % 4 == 0 ? 3000 : 60)};
    ExtMask em;
    RandomMask(rng, s, em);
    const std::vector<float> sinks = RandomSinks(rng, s.heads);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    std::vector<float> lse(s.rows(), 5.0f), lse_want(s.rows());
    SoftmaxOptions options;
    options.scale = rng() % 2 ? 0.5f : 1.0f;
    options.softcap = rng() % 4 == 0 ? 4.0f : 0.0f;
    if (rng() % 2) options.sink_logits = sinks.data();
    if (rng() % 3 == 0) options.alibi_slopes = slopes.data();
    options.zero_masked = rng() % 3 != 0;
    options.row_lse = lse.data();
    const std::size_t parts = 1 + rng() % 4;
    const std::vector<KeyRange> ranges =
        RandomKeyRanges(rng, em.mask, s, parts);
    const ScoreType type = kTypes[it % 3];
    testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
    const ScoreView before = testing::SameViewIn(t, before_bytes);
    const ScoreView got = testing::SameViewIn(t, got_bytes);
    const ScoreView want = testing::SameViewIn(t, want_bytes);
    RunSplit(got, em.mask, options, ranges, RowRange::all(s));
    SoftmaxOptions ref_options = options;
    ref_options.row_lse = lse_want.data();
    reference::masked_softmax(want, want, em.mask, ref_options,
                              RowRange::all(s));
    std::string where = std::string(testing::TypeName(type)) + " " + em.name +
                        " " + ShapeName(s) + " parts " + std::to_string(parts) +
                        " iteration " + std::to_string(it);
    for (const KeyRange& r : ranges) {
      where +=
          " [" + std::to_string(r.begin) + "," + std::to_string(r.end) + ")";
    }
    ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, em.mask, options,
                                       lse.data(), lse_want.data()),
              "")
        << where;
    if (options.zero_masked) continue;
    const std::size_t es = testing::ElemSize(type);
    for (std::size_t b = 0; b < s.batch; ++b)
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys written = kept_keys(em.mask, b, q, s.q_len, s.k_len);
          for (std::size_t k = 0; k < s.k_len; ++k) {
            if (testing::Contains(written, k)) continue;
            const std::size_t off = testing::Offset(got, b, h, q, k) * es;
            ASSERT_EQ(
                std::memcmp(static_cast<const std::uint8_t*>(got.data) + off,
                            static_cast<const std::uint8_t*>(before.data) + off,
                            es),
                0)
                << where << " key " << k << " outside kept_keys was written";
          }
        }
  }
}

// Long rows (past the 16-bit stack scratch), one row split into 2-4 parts
// as an executor would: balanced over the kept keys.
TEST_P(SoftmaxExtTest, SplitLongRowsMatchTheOracle) {
  std::mt19937_64 rng(77);
  const int iterations = testing::ScaledIterations(9);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 9000 + rng() % 12000;
    const Shape4 s{1, 2, 1, n};
    const std::size_t past = rng() % n;
    const MaskSpec mask = MaskSpec::decode(past, n - 1);
    const float sinks[] = {2.0f, -kInf};
    std::vector<float> lse(s.rows()), lse_want(s.rows());
    SoftmaxOptions options;
    options.sink_logits = it % 2 ? sinks : nullptr;
    options.row_lse = lse.data();
    const std::size_t parts = 2 + it % 3;
    const KeptKeys kept = kept_keys(mask, 0, 0, 1, n);
    std::vector<KeyRange> ranges;
    for (std::size_t p = 0; p < parts; ++p) {
      ranges.push_back(split_kept_keys(kept, n, p, parts));
    }
    const ScoreType type = kTypes[it % 3];
    testing::Tensor t = RandomScores(rng, type, s);
    std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
    const ScoreView before = testing::SameViewIn(t, before_bytes);
    const ScoreView got = testing::SameViewIn(t, got_bytes);
    const ScoreView want = testing::SameViewIn(t, want_bytes);
    RunSplit(got, mask, options, ranges, RowRange::all(s));
    SoftmaxOptions ref_options = options;
    ref_options.row_lse = lse_want.data();
    reference::masked_softmax(want, want, mask, ref_options, RowRange::all(s));
    ASSERT_EQ(testing::SoftmaxMismatch(before, got, want, mask, options,
                                       lse.data(), lse_want.data()),
              "")
        << testing::TypeName(type) << " n " << n << " past " << past
        << " parts " << parts;
  }
}

// Rows with no kept key in a part, or anywhere, and NaN rows: zeros stay
// zeros, the lse is -inf, a NaN reaches every kept key of every part and
// no masked one.
TEST_P(SoftmaxExtTest, SplitRowsHandleEmptyPartsAndNaN) {
  // Causal from query position 0: row 0 keeps key 0, row 1 keys 0 and 1,
  // all in part 0 of [0, 4) and [4, 8); a NaN at a masked key of part 1.
  std::vector<float> scores(2 * 8, 1.0f);
  scores[8 + 6] = std::nanf("");
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 1, 2, 8});
  const std::int64_t offsets[] = {0};
  const MaskSpec shifted = MaskSpec::causal().with_query_offsets(offsets);
  std::vector<float> lse(2, 3.0f);
  SoftmaxOptions options;
  options.row_lse = lse.data();
  const std::vector<KeyRange> ranges{{0, 4}, {4, 8}};
  RunSplit(v, shifted, options, ranges, RowRange::all(v.shape));
  // Row 0 keeps key 0 (part 0 alone): probability 1; part 1 all zeros.
  EXPECT_EQ(scores[0], 1.0f);
  for (int k = 1; k < 8; ++k) EXPECT_EQ(scores[k], 0.0f) << k;
  EXPECT_NEAR(lse[0], 1.0f, 1e-6);
  // Row 1 keeps keys 0 and 1 (part 0); the NaN at key 6 is masked.
  EXPECT_NEAR(scores[8], 0.5f, 1e-6);
  EXPECT_NEAR(scores[9], 0.5f, 1e-6);
  for (int k = 10; k < 16; ++k) EXPECT_EQ(scores[k], 0.0f) << k;
  // A decode row, parts [0, 5) and [5, 10), a NaN at key 7.
  std::vector<float> row(10, 0.5f);
  row[7] = std::nanf("");
  const ScoreView rv = ScoreView::f32(row.data(), Shape4{1, 1, 1, 10});
  float row_lse = 0.0f;
  options.row_lse = &row_lse;
  // Past 6, upper 9: keys 0-5 and 9 kept; the NaN is masked ...
  RunSplit(rv, MaskSpec::decode(6, 9), options, {{0, 5}, {5, 10}},
           RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) {
    if (k >= 6 && k <= 8) {
      EXPECT_EQ(row[k], 0.0f) << k;
    } else {
      EXPECT_NEAR(row[k], 1.0f / 7.0f, 1e-6) << k;
    }
  }
  // ... past 8: the NaN is kept (part 1); part 0's keys become NaN too,
  // the masked key 8 stays 0.
  std::fill(row.begin(), row.end(), 0.5f);
  row[7] = std::nanf("");
  RunSplit(rv, MaskSpec::decode(8, 9), options, {{0, 5}, {5, 10}},
           RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) {
    if (k == 8) {
      EXPECT_EQ(row[k], 0.0f) << k;
    } else {
      EXPECT_TRUE(std::isnan(row[k])) << k << ": " << row[k];
    }
  }
  EXPECT_TRUE(std::isnan(row_lse));
  // No kept key in any part: zeros, lse -inf, sink or not.
  std::vector<std::uint8_t> keep(10, 0);
  std::fill(row.begin(), row.end(), 0.5f);
  const float sink[] = {1.0f};
  options.sink_logits = sink;
  RunSplit(rv, MaskSpec::keep(keep.data(), rv.shape), options,
           {{0, 3}, {3, 10}}, RowRange::all(rv.shape));
  for (int k = 0; k < 10; ++k) EXPECT_EQ(row[k], 0.0f) << k;
  EXPECT_EQ(row_lse, -kInf);
}

// Random scores of `type` under `mask`: masked_softmax of the whole rows,
// or (split) 2-3 parts finished in place, against the oracle, row_lse too.
std::string WholeOrSplitMismatch(std::mt19937_64& rng, ScoreType type,
                                 const Shape4& s, const MaskSpec& mask,
                                 SoftmaxOptions options, bool split) {
  std::vector<float> lse(s.rows()), lse_want(s.rows());
  options.row_lse = lse.data();
  testing::Tensor t = RandomScores(rng, type, s);
  std::vector<std::uint8_t> got_bytes, want_bytes, before_bytes;
  const ScoreView before = testing::SameViewIn(t, before_bytes);
  const ScoreView got = testing::SameViewIn(t, got_bytes);
  const ScoreView want = testing::SameViewIn(t, want_bytes);
  if (split) {
    RunSplit(got, mask, options, RandomKeyRanges(rng, mask, s, 2 + rng() % 2),
             RowRange::all(s));
  } else {
    masked_softmax(got, mask, options);
  }
  SoftmaxOptions ref_options = options;
  ref_options.row_lse = lse_want.data();
  reference::masked_softmax(want, want, mask, ref_options, RowRange::all(s));
  return testing::SoftmaxMismatch(before, got, want, mask, options, lse.data(),
                                  lse_want.data());
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

TEST(SoftmaxSplitTest, SplitKeptKeysIsBalancedAndCoversTheRow) {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 3000; ++it) {
    const std::size_t n = 1 + rng() % 200;
    KeptKeys kept;
    std::size_t at = rng() % (n + 1);
    while (kept.count < KeptKeys::kMaxIntervals && at < n && rng() % 4 != 0) {
      const std::size_t end = at + 1 + rng() % (n - at);
      kept.intervals[kept.count++] = {at, end};
      at = end + 1 + rng() % 5;
    }
    const std::size_t parts = 1 + rng() % 6;
    // In sixteenths of a kept key's cost.
    const int masked = it % 3 == 0 ? 0 : static_cast<int>(rng() % 17);
    const auto cost_of = [&](std::size_t begin, std::size_t end) {
      double cost = 0;
      for (std::size_t k = begin; k < end; ++k) {
        cost += testing::Contains(kept, k) ? 16 : masked;
      }
      return cost;
    };
    const double share = cost_of(0, n) / static_cast<double>(parts);
    std::size_t next = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      const KeyRange r = split_kept_keys(kept, n, p, parts, masked / 16.0);
      const std::string where = "part " + std::to_string(p) + " of " +
                                std::to_string(parts) + ", masked cost " +
                                std::to_string(masked) + "/16, n " +
                                std::to_string(n);
      ASSERT_EQ(r.begin, next) << where;
      ASSERT_LE(r.begin, r.end) << where;
      // Within a kept key's cost (and the rounding of the share) of 1/parts.
      ASSERT_LE(std::fabs(cost_of(r.begin, r.end) - share), 17.0) << where;
      // Without a cost for masked keys, a boundary inside the row is a kept
      // key.
      if (masked == 0 && p > 0 && r.begin < n) {
        ASSERT_TRUE(testing::Contains(kept, r.begin)) << where;
      }
      next = r.end;
    }
    ASSERT_EQ(next, n);
  }
}

TEST(SoftmaxSplitTest, BadArgumentsAreNamedErrorsAndWriteNothing) {
  std::vector<float> scores(2 * 6, 1.0f);
  const std::vector<float> copy = scores;
  const ScoreView v = ScoreView::f32(scores.data(), Shape4{1, 2, 1, 6});
  std::vector<SoftmaxPartStats> stats(2, {7.0, 7.0});
  const MaskSpec mask = MaskSpec::causal();
  EXPECT_THAT(
      ErrorOf([&] {
        masked_softmax_part(v, mask, {2, 7}, stats.data());
      }),
      HasSubstr("masked_softmax_part: keys [2, 7) is not a key range of a "
                "row of k_len 6"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(v, mask, {4, 3}, stats.data());
              }),
              HasSubstr("masked_softmax_part: keys [4, 3)"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(v, mask, {0, 3}, nullptr);
              }),
              HasSubstr("masked_softmax_part: stats is null"));
  EXPECT_THAT(ErrorOf([&] {
                masked_softmax_part(ScoreView::f32(nullptr, v.shape), mask,
                                    {0, 3}, stats.data());
              }),
              HasSubstr("masked_softmax_part: scores.data is null"));
  const SoftmaxPartStats* parts[] = {stats.data(), nullptr};
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 0);
              }),
              HasSubstr("finish_softmax_part: parts[1] is null"));
  parts[1] = stats.data();
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 2);
              }),
              HasSubstr("finish_softmax_part: part 2 is not below the part "
                        "count 2"));
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, {}, 0);
              }),
              HasSubstr("finish_softmax_part: no parts"));
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 9}, parts, 0);
              }),
              HasSubstr("finish_softmax_part: keys [0, 9)"));
  const float nan_sink[] = {0.0f, std::nanf("")};
  SoftmaxOptions o;
  o.sink_logits = nan_sink;
  EXPECT_THAT(ErrorOf([&] {
                finish_softmax_part(v, mask, {0, 3}, parts, 0, o);
              }),
              HasSubstr("finish_softmax_part: sink_logits[1] (head 1) is nan"));
  EXPECT_EQ(scores, copy);
  EXPECT_EQ(stats[0].sum, 7.0);
  const KeptKeys kept{{KeyInterval{1, 3}, KeyInterval{5, 6}}, 2};
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 0, 0); }),
              HasSubstr("split_kept_keys: parts is 0"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 3, 3); }),
              HasSubstr("split_kept_keys: part 3 is not below parts 3"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 6, 0, 3, 1.5); }),
              HasSubstr("split_kept_keys: masked_key_cost 1.500000 is not in "
                        "[0, 1]"));
  EXPECT_THAT(ErrorOf([&] { split_kept_keys(kept, 5, 0, 2); }),
              HasSubstr("split_kept_keys: kept interval 1 [5, 6) is empty, "
                        "out of order or beyond k_len 5"));
}

}  // namespace
}  // namespace rlx
