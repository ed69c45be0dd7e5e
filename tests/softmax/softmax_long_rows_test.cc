// SPDX-License-Identifier: MIT OR Apache-2.0
// Rows longer than the kernels' stack buffers (src/softmax/general_loop-inl.h):
// 16-bit rows keep their exp values in the thread's exp buffer
// (src/softmax/thread_exp_buffer.h), whose failed allocation writes nothing;
// rows on both sides of the stack scratch's edge; every rule and option.
// On every compiled target and row type, against the double-precision
// oracle (tests/reference/reference.cc).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/softmax/thread_exp_buffer.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/softmax/softmax_ext_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::ExtMask;
using ::rlx::testing::kTypes;
using ::rlx::testing::OracleMismatch;
using ::rlx::testing::RandomMask;
using ::rlx::testing::RandomScores;
using ::rlx::testing::RandomSinks;
using ::rlx::testing::ShapeName;

class SoftmaxExtTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(SoftmaxExtTest);

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
// keys, keep bytes in tiles of 8192: src/softmax/general_loop-inl.h): 16-bit
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

}  // namespace
}  // namespace rlx
