// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask and masked_softmax against the scalar oracle
// (tests/reference/reference.h), once per supported target, over the layouts
// a tensor can have: every structured mask and row type at k_len 1..3N+1,
// rows at every alignment and beside unmapped pages, row strides whose gaps
// hold a sentinel that must stay untouched, dense masks broadcast on each
// axis (by extent 1 or by a zero stride), long rows, explicit query offsets,
// and row ranges split at odd places; kept_keys of structured masks. Apply
// is bit-exact; softmax is within the bound stated in docs/KERNELS.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "tests/common/error_of.h"
#include "tests/common/guarded_pages.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"
#include "tests/scores/score_kernels_cases.h"

namespace rlx {
namespace {

using ::rlx::testing::CheckApply;
using ::rlx::testing::CheckSoftmax;
using ::rlx::testing::Config;
using ::rlx::testing::DenseMask;
using ::rlx::testing::Describe;
using ::rlx::testing::ElemSize;
using ::rlx::testing::ErrorOf;
using ::rlx::testing::FillScores;
using ::rlx::testing::MakeDense;
using ::rlx::testing::MakeTensor;
using ::rlx::testing::RandomScore;
using ::rlx::testing::SoftmaxMismatch;
using ::rlx::testing::StructuredMasks;
using ::rlx::testing::Tensor;
using ::testing::HasSubstr;

class ScoreKernelsTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(ScoreKernelsTest);

// k_len 1..3N+1 for the widest target (N = 16 f32 lanes), every structured
// mask, every type, misaligned, with gaps, in place and out of place.
TEST_P(ScoreKernelsTest, StructuredMasksMatchTheOracleAtEveryLength) {
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (std::size_t k_len = 1; k_len <= 49; ++k_len) {
      for (const MaskSpec& mask : StructuredMasks(k_len)) {
        Config c;
        c.type = type;
        const std::size_t q_len = mask.kind == MaskKind::kDecode ? 1 : 3;
        c.shape = {2, 2, q_len, k_len};
        c.mask = mask;
        c.misalign = k_len % 3;
        c.gap = k_len % 2 ? 3 : 0;
        c.scores = [](std::size_t b, std::size_t h, std::size_t q,
                      std::size_t k) {
          return RandomScore(((b * 7 + h) * 131 + q) * 1009 + k);
        };
        c.name = "structured";
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, k_len % 2 == 0));
      }
    }
  }
}

// Rows starting at every element offset within a 64-byte line (AVX-512
// takes the keys before a row's first aligned vector as a masked head), with
// segments shorter than, equal to and longer than a vector.
TEST_P(ScoreKernelsTest, EveryRowAlignmentMatchesTheOracle) {
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (std::size_t misalign = 0; misalign <= 32; ++misalign) {
      for (std::size_t k_len : {1u, 3u, 15u, 16u, 17u, 40u, 100u}) {
        for (const MaskSpec& mask :
             {MaskSpec::none(), MaskSpec::decode(k_len / 2, k_len - 1),
              MaskSpec::decode(k_len / 2, k_len - 1, 5)}) {
          Config c;
          c.type = type;
          c.shape = {1, 3, 1, k_len};
          c.mask = mask;
          c.misalign = misalign;
          c.gap = 0;
          c.scores = [](std::size_t b, std::size_t h, std::size_t q,
                        std::size_t k) {
            return RandomScore(((b * 3 + h) * 7 + q) * 8191 + k + 5);
          };
          c.name = "alignment";
          ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
          ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, misalign % 2 == 1));
        }
      }
    }
  }
}

// Where `bytes` bytes sit flush against one of `mem`'s unmapped pages:
// ending at it (`at_end`) or starting after it.
std::uint8_t* BesideGuard(const testing::GuardedPages& mem, std::size_t bytes,
                          bool at_end) {
  return at_end ? mem.end() - bytes : mem.begin();
}

// Copies `bytes` bytes of `src` there.
void* PlaceBesideGuard(const testing::GuardedPages& mem, const void* src,
                       std::size_t bytes, bool at_end) {
  return std::memcpy(BesideGuard(mem, bytes, at_end), src, bytes);
}

// Both kernels on contiguous scores (and a dense mask) placed flush against
// an unmapped page, compared with the oracle: a read or write past a row's
// last key, or before its first, faults.
void CheckBesideUnmappedPages(const Config& c, bool at_end) {
  Tensor t = MakeTensor(c.type, c.shape, 0, 0);
  FillScores(t.view, c.scores);
  const std::size_t bytes = c.shape.rows() * c.shape.k_len * ElemSize(c.type);
  std::vector<std::uint8_t> want_bytes;
  const ScoreView want_apply = testing::SameViewIn(t, want_bytes);
  reference::apply_mask(want_apply, c.mask, RowRange::all(c.shape), c.fill);

  MaskSpec mask = c.mask;
  const std::size_t mask_bytes =
      c.mask.kind == MaskKind::kKeepU8 ? c.shape.k_len
      : c.mask.kind == MaskKind::kKeepF32 || c.mask.kind == MaskKind::kBias
          ? c.shape.k_len * sizeof(float)
          : 0;
  testing::GuardedPages mask_mem(mask_bytes);
  if (mask_bytes != 0) {
    mask.data = PlaceBesideGuard(mask_mem, c.mask.data, mask_bytes, at_end);
  }

  testing::GuardedPages in_mem(bytes), out_mem(bytes);
  ScoreView in = t.view, out = t.view;
  in.data = PlaceBesideGuard(in_mem, t.view.data, bytes, at_end);
  apply_mask(in, mask, c.fill);
  ASSERT_EQ("", testing::ApplyMismatch(in, want_apply, c.mask))
      << Describe(c) << " at_end=" << at_end;

  std::vector<std::uint8_t> softmax_bytes;
  const ScoreView want = testing::SameViewIn(t, softmax_bytes);
  reference::masked_softmax(want, want, c.mask, c.options,
                            RowRange::all(c.shape));
  in.data = PlaceBesideGuard(in_mem, t.view.data, bytes, at_end);
  out.data = BesideGuard(out_mem, bytes, at_end);
  masked_softmax(in, out, mask, c.options, RowRange::all(c.shape));
  ASSERT_EQ("", SoftmaxMismatch(t.view, out, want, c.mask, c.options))
      << Describe(c) << " out of place, at_end=" << at_end;
  masked_softmax(in, mask, c.options);
  ASSERT_EQ("", SoftmaxMismatch(t.view, in, want, c.mask, c.options))
      << Describe(c) << " in place, at_end=" << at_end;
}

// Rows that end where an unmapped page starts, or start where one ends: a
// partial vector must not touch the bytes past the row even where a full
// one would fault. Every length up to 3N+1, masks whose kept intervals end
// at the row's last key, dense masks beside a guard of their own.
TEST_P(ScoreKernelsTest, RowsBesideUnmappedPagesTouchNothingOutside) {
  std::mt19937 rng(4321);
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (std::size_t k_len = 1; k_len <= 49; ++k_len) {
      const Shape4 row{1, 1, 1, k_len};
      DenseMask keep = MakeDense(MaskKind::kKeepU8, row, rng, 0.5);
      DenseMask bias = MakeDense(MaskKind::kBias, row, rng, 0.7);
      for (const MaskSpec& mask :
           {MaskSpec::none(), MaskSpec::decode(k_len / 2, k_len - 1),
            MaskSpec::decode(0, k_len - 1), MaskSpec::sliding_window(3),
            keep.spec, bias.spec}) {
        Config c;
        c.type = type;
        c.shape = {1, 3, 1, k_len};
        c.mask = mask;
        c.scores = [](std::size_t b, std::size_t h, std::size_t q,
                      std::size_t k) {
          return RandomScore(((b * 3 + h) * 5 + q) * 6007 + k + 11);
        };
        c.name = "beside unmapped pages";
        for (bool at_end : {true, false}) {
          ASSERT_NO_FATAL_FAILURE(CheckBesideUnmappedPages(c, at_end));
        }
      }
    }
  }
}

TEST_P(ScoreKernelsTest, DenseMasksMatchTheOracleWithEveryBroadcast) {
  std::mt19937 rng(1234);
  const Shape4 scores{2, 3, 4, 0};
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (MaskKind kind :
         {MaskKind::kKeepF32, MaskKind::kKeepU8, MaskKind::kBias}) {
      for (std::size_t k_len : {1u, 5u, 16u, 17u, 33u, 49u, 100u}) {
        // Full, RLX's [batch, 1, 1, k], [batch, 1, q, k], [1, heads, 1, k].
        const Shape4 mask_shapes[] = {{2, 3, 4, k_len},
                                      {2, 1, 1, k_len},
                                      {2, 1, 4, k_len},
                                      {1, 3, 1, k_len},
                                      {1, 1, 1, k_len}};
        for (const Shape4& ms : mask_shapes) {
          for (double keep : {0.0, 0.3, 1.0}) {
            DenseMask dense = MakeDense(kind, ms, rng, keep);
            Config c;
            c.type = type;
            c.shape = {scores.batch, scores.heads, scores.q_len, k_len};
            c.mask = dense.spec;
            c.misalign = k_len % 2;
            c.gap = 2;
            c.fill = -1e9f;
            c.scores = [](std::size_t b, std::size_t h, std::size_t q,
                          std::size_t k) {
              return RandomScore(((b * 5 + h) * 17 + q) * 4099 + k + 77);
            };
            c.name = "dense keep=" + std::to_string(keep);
            ASSERT_NO_FATAL_FAILURE(CheckApply(c, true));
            ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, true, true));
          }
        }
      }
    }
  }
}

// DESIGN's "broadcast over any of batch/heads/q by a zero stride": a mask
// of the scores' full shape whose strides are 0 on an axis reads one slice
// for every index of it, as a mask of extent 1 there would (np.broadcast_to
// makes such arrays). Bit masks too; a row stride between 0 and a row's
// width is still an error.
TEST_P(ScoreKernelsTest, DenseMasksBroadcastByZeroStrides) {
  std::mt19937 rng(4321);
  for (std::size_t k_len : {5u, 64u, 130u}) {
    const Shape4 shape{2, 3, 4, k_len};
    const std::size_t words = (k_len + 63) / 64;
    // The data: one [2, 1, 4, k] f32 / u8 slice, and [1, 1, 1, words] bits.
    DenseMask keep = MakeDense(MaskKind::kKeepF32, {2, 1, 4, k_len}, rng, 0.5);
    DenseMask u8 = MakeDense(MaskKind::kKeepU8, {2, 1, 4, k_len}, rng, 0.5);
    DenseMask bias = MakeDense(MaskKind::kBias, {2, 1, 4, k_len}, rng, 0.6);
    std::vector<std::uint64_t> bits(words);
    for (auto& w : bits) w = (std::uint64_t{rng()} << 32) | rng();
    const Strides3 over_heads{4 * k_len, 0, k_len};  // [2, 3, 4, k] at head 0
    const Strides3 over_rows{0, 0, 0};
    const MaskSpec masks[] = {
        MaskSpec::keep(keep.f32.data(), shape).with_strides(over_heads),
        MaskSpec::keep(u8.u8.data(), shape).with_strides(over_heads),
        MaskSpec::bias(bias.f32.data(), shape).with_strides(over_heads),
        MaskSpec::keep(keep.f32.data(), shape).with_strides(over_rows),
        MaskSpec::keep_bits(bits.data(), shape).with_strides(over_rows),
        MaskSpec::causal()
            .with_keep_bits(bits.data(), shape)
            .with_strides(over_rows),
    };
    for (const MaskSpec& mask : masks) {
      for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16}) {
        Config c;
        c.type = type;
        c.shape = shape;
        c.mask = mask;
        c.fill = -1e9f;
        c.scores = [](std::size_t b, std::size_t h, std::size_t q,
                      std::size_t k) {
          return RandomScore(((b * 7 + h) * 11 + q) * 4111 + k + 5);
        };
        c.name = "zero strides, k_len " + std::to_string(k_len);
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, true));
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, true, true));
      }
    }
    // Every query row reads row 0 of head 0: the same bits as a mask of one
    // row, on the same memory (the kernels' vector splits follow the rows'
    // alignment; the keep bytes of a mask row are built once and reused by
    // the rows that read it, whichever form the broadcast takes).
    std::vector<float> pristine(shape.rows() * k_len), a(pristine.size());
    for (std::size_t i = 0; i < a.size(); ++i) pristine[i] = RandomScore(i);
    a = pristine;
    masked_softmax(
        ScoreView::f32(a.data(), shape),
        MaskSpec::keep(keep.f32.data(), shape).with_strides(over_rows));
    const std::vector<float> zero_strides = a;
    a = pristine;
    masked_softmax(ScoreView::f32(a.data(), shape),
                   MaskSpec::keep(keep.f32.data(), {1, 1, 1, k_len}));
    EXPECT_EQ(zero_strides, a);
  }
  // A row stride below the row's width and not 0 stays an error.
  std::vector<float> s(2 * 130, 1.5f);
  const std::vector<float> before = s;
  const std::vector<std::uint64_t> bits(6, ~std::uint64_t{0});
  const ScoreView scores = ScoreView::f32(s.data(), {1, 1, 2, 130});
  EXPECT_THAT(testing::ErrorOf([&] {
                masked_softmax(scores,
                               MaskSpec::keep_bits(bits.data(), {1, 1, 2, 130})
                                   .with_strides({0, 0, 2}));
              }),
              HasSubstr("keep_bits row stride 2 words is below "
                        "ceil(k_len / 64) = 3"));
  EXPECT_THAT(
      testing::ErrorOf([&] {
        apply_mask(
            scores,
            MaskSpec::keep(s.data(), {1, 1, 2, 130}).with_strides({0, 0, 129}));
      }),
      HasSubstr("mask row stride 129 is below k_len 130"));
  EXPECT_EQ(s, before);
}

TEST_P(ScoreKernelsTest, LongRowsMatchTheOracle) {
  constexpr std::size_t kLong = (std::size_t{1} << 16) + 3;
  std::mt19937 rng(99);
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16}) {
    std::vector<MaskSpec> masks = {MaskSpec::none(),
                                   MaskSpec::decode(40000, kLong - 1, 0),
                                   MaskSpec::decode(40000, kLong - 1, 1000)};
    DenseMask keep = MakeDense(MaskKind::kKeepU8, {1, 1, 1, kLong}, rng, 0.5);
    masks.push_back(keep.spec);
    for (const MaskSpec& mask : masks) {
      Config c;
      c.type = type;
      c.shape = {1, 1, 1, kLong};
      c.mask = mask;
      c.scores = [](std::size_t, std::size_t, std::size_t, std::size_t k) {
        return RandomScore(k);
      };
      c.name = "long";
      ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
      ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
    }
  }
  // Causal prefill with long rows: query positions near the end.
  Config c;
  c.shape = {1, 1, 3, kLong};
  c.mask = MaskSpec::sliding_window(5000);
  c.scores = [](std::size_t, std::size_t, std::size_t q, std::size_t k) {
    return RandomScore(k * 3 + q);
  };
  c.name = "long window";
  ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, true, false));
}

TEST_P(ScoreKernelsTest, ExplicitQueryOffsetsPlaceEachBatch) {
  // Chunked prefill: batch 0's queries start at 0, batch 1's at 9, batch 2's
  // before key 0 (rows entirely masked), batch 3's past the end.
  const std::int64_t offsets[] = {0, 9, -2, 40};
  for (const MaskSpec& base :
       {MaskSpec::causal(), MaskSpec::sliding_window(2)}) {
    Config c;
    c.shape = {4, 2, 5, 21};
    c.mask = base.with_query_offsets(offsets);
    c.scores = [](std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
      return RandomScore(b * 1000 + h * 100 + q * 10 + k);
    };
    c.name = "offsets";
    ASSERT_NO_FATAL_FAILURE(CheckApply(c, true));
    ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, true, false));
    for (std::size_t q = 0; q < 5; ++q) {
      const KeptKeys kept = kept_keys(c.mask, 1, q, 5, 21);
      ASSERT_EQ(kept.count, 1u);
      EXPECT_EQ(kept.intervals[0].end, 9 + q + 1);
    }
    EXPECT_EQ(kept_keys(c.mask, 2, 1, 5, 21).count, 0u) << "abs_q = -1";
  }
}

TEST(KeptKeysTest, StructuredMasksAreIntervals) {
  // Decode keeps [lo, past) and {upper}: two intervals.
  EXPECT_EQ(kept_keys(MaskSpec::decode(5, 9, 2), 0, 0, 1, 10),
            (KeptKeys{{KeyInterval{3, 5}, KeyInterval{9, 10}}, 2}));
  // A full bucket: the two are adjacent and merge.
  EXPECT_EQ(kept_keys(MaskSpec::decode(4, 4), 0, 0, 1, 5),
            (KeptKeys{{KeyInterval{0, 5}, KeyInterval{}}, 1}));
  // Causal prefill: row q of a square tensor keeps [0, q].
  EXPECT_EQ(kept_keys(MaskSpec::causal(), 0, 2, 8, 8),
            (KeptKeys{{KeyInterval{0, 3}, KeyInterval{}}, 1}));
  // Sliding window w keeps w + 1 keys (RLX's convention).
  EXPECT_EQ(kept_keys(MaskSpec::sliding_window(2), 0, 6, 8, 8),
            (KeptKeys{{KeyInterval{4, 7}, KeyInterval{}}, 1}));
  EXPECT_EQ(kept_keys(MaskSpec::none(), 0, 0, 1, 8).size(), 8u);
  // Dense masks: the whole row, for RLX's [batch, k_len] and per-head masks.
  const std::vector<float> m(2 * 3 * 9, 1.0f);
  EXPECT_EQ(kept_keys(MaskSpec::keep(m.data(), {2, 1, 1, 9}), 1, 0, 1, 9),
            (KeptKeys{{KeyInterval{0, 9}, KeyInterval{}}, 1}));
  EXPECT_EQ(
      kept_keys(MaskSpec::bias(m.data(), {2, 3, 1, 9}), 0, 0, 4, 9).size(), 9u);
  EXPECT_THROW(kept_keys(MaskSpec::keep(m.data(), {2, 1, 1, 9}), 2, 0, 1, 9),
               std::invalid_argument)
      << "batch 2 of a 2-batch mask";
}

}  // namespace
}  // namespace rlx
