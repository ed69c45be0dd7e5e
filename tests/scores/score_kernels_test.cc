// SPDX-License-Identifier: MIT OR Apache-2.0
// apply_mask and masked_softmax against the scalar oracle
// (tests/reference/reference.h), once per supported target: every mask kind and
// row type, k_len 1..3N+1 and 2^16 + 3, misaligned data, row strides whose gaps
// hold a sentinel that must stay untouched, broadcasting on each axis, explicit
// query offsets, fully masked rows, scores near the float limits, softcap and
// scale, and row ranges split at odd places. Apply is bit-exact; softmax is
// within the bound stated in docs/KERNELS.md.
#include "rlx/score_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>  // _mm_getcsr
#endif

#include "tests/common/error_of.h"
#include "tests/common/guarded_pages.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"

namespace rlx {
namespace {

using testing::ElemSize;
using testing::Get;
using ::testing::HasSubstr;
using testing::MakeTensor;
using testing::Offset;
using testing::SoftmaxMismatch;
using testing::Tensor;
using testing::TypeName;
using testing::UntouchedOutside;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Sets every element (not the gaps) of `v` to f(b, h, q, k).
void FillScores(const ScoreView& v,
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

DenseMask MakeDense(MaskKind kind, const Shape4& shape, std::mt19937& rng,
                    double keep_probability) {
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

class ScoreKernelsTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(ScoreKernelsTest);

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

std::string Describe(const Config& c) {
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
void ForSplitRows(std::size_t rows, const std::function<void(RowRange)>& run) {
  const std::size_t cut1 = rows / 3, cut2 = std::max(cut1, rows - rows / 5);
  run({0, cut1});
  run({cut1, cut2});
  run({cut2, rows});
}

void CheckApply(const Config& c, bool split) {
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

void CheckSoftmax(const Config& c, bool split, bool out_of_place) {
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

std::vector<MaskSpec> StructuredMasks(std::size_t k_len) {
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
float RandomScore(std::uint64_t seed) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (16.0f / (1 << 24)) - 8.0f;
}

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

// A NaN fill or a NaN bias stays NaN, whatever its payload: f32 rows store
// the fill's bits, 16-bit rows its conversion as the oracle's codec does it
// (rounding the f32 bits of a NaN as a number would carry its payload into
// the exponent, a signalling 0x7F800001 becoming inf, or past the sign,
// 0x7FFFFFFF becoming -0 and 0xFFFFFFFF +0).
TEST_P(ScoreKernelsTest, NaNFillsAndBiasesStayNaN) {
  const std::uint32_t nan_bits[] = {0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u,
                                    0x7FFFFFFFu, 0xFF800001u, 0xFFFFFFFFu};
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (std::size_t k_len : {1u, 7u, 37u, 100u}) {
      for (const std::uint32_t bits : nan_bits) {
        float nan;
        std::memcpy(&nan, &bits, sizeof(nan));
        Config c;
        c.type = type;
        c.shape = {1, 2, 1, k_len};
        c.misalign = k_len % 3;
        c.scores = [](std::size_t, std::size_t h, std::size_t, std::size_t k) {
          return RandomScore(h * 101 + k);
        };
        c.name = "NaN bits " + std::to_string(bits);
        // Masked keys take the fill.
        c.mask = MaskSpec::decode(k_len / 2, k_len - 1);
        c.fill = nan;
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
        // A bias of NaN on every third key, -inf or a number elsewhere.
        std::vector<float> bias(k_len);
        for (std::size_t k = 0; k < k_len; ++k) {
          bias[k] = k % 3 == 0 ? nan : k % 3 == 1 ? -kInf : 0.25f * k;
        }
        c.mask = MaskSpec::bias(bias.data(), {1, 1, 1, k_len});
        c.fill = -kInf;
        ASSERT_NO_FATAL_FAILURE(CheckApply(c, false));
      }
    }
  }
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

// Kept f32 rows sum to 1 within 1e-6 at any length (docs/KERNELS.md) only
// because no f32 lane sum adds more than a few values before it is widened
// into f64. These rows make longer f32 sums fail: key 0's exp is 1 and
// every other kept key's is 0.9 * 2^-24, less than half an ulp of 1, so a
// lane that holds 1 drops each one added after it, and a lane sum of more
// than about 20 values takes the row past 1 + 1e-6. The kept keys follow the
// vector map's worst case (src/softmax/softmax_vector_map-inl.h) for N lanes:
// in each word of 64 vectors, three full vectors and three holding one kept
// key, at lane 0, none visited four at a time. Every mask source that reads
// them: keep bits and explicit positions (the map), keep bytes and a bias
// (dense rows), and the whole row kept (the plain passes), for each N a target
// may have.
TEST_P(ScoreKernelsTest, KeptRowsSumToOneWhereF32SumsWouldDropKeys) {
  constexpr std::size_t kLen = 8192;
  const float tiny = std::log(0.9f * std::ldexp(1.0f, -24));
  for (std::size_t lanes : {1u, 4u, 8u, 16u, 32u, 64u}) {
    std::vector<std::uint8_t> keep(kLen, 0);
    for (std::size_t v = 0; v < kLen / lanes; v += 64) {
      for (std::size_t j = 0; j < 6 && (v + j + 1) * lanes <= kLen; ++j) {
        for (std::size_t l = 0; l < (j < 3 ? lanes : 1); ++l) {
          keep[(v + j) * lanes + l] = 1;
        }
      }
    }
    std::vector<std::uint64_t> bits((kLen + 63) / 64, 0);
    std::vector<float> bias(kLen);
    std::vector<std::int64_t> k_pos(kLen);
    for (std::size_t k = 0; k < kLen; ++k) {
      bits[k / 64] |= std::uint64_t{keep[k]} << (k % 64);
      bias[k] = keep[k] != 0 ? 0.0f : -kInf;
      k_pos[k] = keep[k] != 0 ? static_cast<std::int64_t>(k) : -1;
    }
    const std::int64_t q_pos = kLen;
    const Shape4 row{1, 1, 1, kLen};
    const MaskSpec masks[] = {
        MaskSpec::keep_bits(bits.data(), row),
        MaskSpec::causal().with_positions(&q_pos, k_pos.data()),
        MaskSpec::keep(keep.data(), row), MaskSpec::bias(bias.data(), row),
        MaskSpec::none()};
    for (const MaskSpec& mask : masks) {
      for (std::size_t misalign : {0u, 1u}) {
        Config c;
        c.shape = {1, 2, 1, kLen};
        c.mask = mask;
        c.misalign = misalign;
        c.scores = [tiny](std::size_t, std::size_t, std::size_t,
                          std::size_t k) { return k == 0 ? 0.0f : tiny; };
        c.name = "f32 sums, " + std::to_string(lanes) + " lanes";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
      }
    }
  }
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

TEST_P(ScoreKernelsTest, ScoresNearTheFloatLimitsDoNotOverflow) {
  for (float big : {3.0e38f, 1.0e30f, -3.0e38f}) {
    Config c;
    c.shape = {1, 1, 2, 37};
    c.mask = MaskSpec::causal();
    c.scores = [big](std::size_t, std::size_t, std::size_t q, std::size_t k) {
      return (k % 3 == 0) ? big : ((k + q) % 2 ? -big : big * 0.5f);
    };
    c.name = "limits";
    ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
  }
}

// A row's maximum on one kept key far above the rest (by 100: a pass 1 that
// missed it overflows the exps): a Decode row's token, which the plain rows
// read into the partial last vector of the keys before it, the first and
// the last of those keys, and the last key of a causal row. Every type, at
// every count of keys in that partial vector, short (plain) and long rows,
// both fill modes.
TEST_P(ScoreKernelsTest, AMaximumOnAnyKeptKeyIsFound) {
  struct Case {
    std::size_t q_len, past, upper;
    std::size_t hot[3];  // key index of the maximum, per query
  };
  std::vector<Case> cases;
  for (std::size_t past = 1; past <= 40; ++past) {
    const std::size_t upper = past + 1 + past % 5;
    cases.push_back({1, past, upper, {upper}});
    cases.push_back({1, past, upper, {0}});
    cases.push_back({1, past, upper, {past - 1}});
  }
  for (std::size_t hot :
       {std::size_t{0}, std::size_t{1499}, std::size_t{1503}}) {
    cases.push_back({1, 1500, 1503, {hot}});
  }
  // Every key of a row short enough for the plain batches and long enough
  // for their four-vector loops (two of them on AVX-512), which may take
  // the keys in an order of their own.
  for (std::size_t hot = 0; hot < 130; ++hot) {
    cases.push_back({1, 130, 133, {hot}});
  }
  cases.push_back({3, 0, 0, {0, 1, 2}});  // causal, 45 keys: the diagonal
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (const Case& k : cases) {
      for (bool zero_masked : {true, false}) {
        Config c;
        c.type = type;
        const bool decode = k.q_len == 1;
        const std::size_t k_len = decode ? k.upper + 1 : 45;
        c.shape = {1, 3, k.q_len, k_len};
        c.mask =
            decode ? MaskSpec::decode(k.past, k.upper) : MaskSpec::causal();
        c.options.zero_masked = zero_masked;
        c.misalign = k.past % 3;
        const std::size_t q_shift = k_len - k.q_len;
        c.scores = [k, decode, q_shift](std::size_t, std::size_t h,
                                        std::size_t q, std::size_t key) {
          const std::size_t hot = decode ? k.hot[0] : q_shift + k.hot[q];
          return key == hot ? 100.0f : RandomScore((h * 7 + q) * 5003 + key);
        };
        c.name = "hot key " + std::to_string(k.hot[0]) + " past " +
                 std::to_string(k.past) + " zero_masked " +
                 std::to_string(zero_masked);
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, k.past % 2 == 1));
      }
    }
  }
}

TEST_P(ScoreKernelsTest, SoftcapAndScaleApplyBeforeMasking) {
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16}) {
    for (const SoftmaxOptions& o :
         {SoftmaxOptions{0.125f, 0.0f}, SoftmaxOptions{1.0f, 30.0f},
          SoftmaxOptions{0.5f, 5.0f}, SoftmaxOptions{-2.0f, 0.0f}}) {
      std::mt19937 rng(7);
      DenseMask bias = MakeDense(MaskKind::kBias, {1, 1, 3, 29}, rng, 0.7);
      for (const MaskSpec& mask :
           {MaskSpec::causal(), MaskSpec::decode(10, 28, 4), bias.spec}) {
        Config c;
        c.type = type;
        c.shape = {1, 2, mask.kind == MaskKind::kDecode ? 1u : 3u, 29};
        c.mask = mask;
        c.options = o;
        c.scores = [](std::size_t, std::size_t h, std::size_t q,
                      std::size_t k) {
          return 12.0f * RandomScore(h * 100 + q * 29 + k);
        };
        c.name = "softcap/scale";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false));
      }
    }
  }
}

// The Rust executor masks with -1e9 then softcaps, turning the masked score
// into -c and leaking weight onto it; here masked keys get exactly 0.
TEST_P(ScoreKernelsTest, SoftcapNeverLeaksWeightToMaskedKeys) {
  std::vector<float> s(8, 1.0f);
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 8}), MaskSpec::decode(2, 7),
                 {1.0f, 1.0f});
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[6], 0.0f);
  EXPECT_NEAR(s[0] + s[1] + s[7], 1.0f, 1e-6f);
}

TEST_P(ScoreKernelsTest, FullyMaskedRowsAreZeroNeverNaN) {
  std::vector<float> s(3 * 20, 5.0f);
  const std::vector<std::uint8_t> none(20, 0);
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 3, 20}),
                 MaskSpec::keep(none.data(), {1, 1, 1, 20}), {1.0f, 50.0f});
  for (float p : s) ASSERT_EQ(p, 0.0f);
  std::vector<float> bias(20, -kInf), t(20, 1.0f);
  masked_softmax(ScoreView::f32(t.data(), {1, 1, 1, 20}),
                 MaskSpec::bias(bias.data(), {1, 1, 1, 20}), {});
  for (float p : t) ASSERT_EQ(p, 0.0f);
  // A query before key 0 under Causal.
  const std::int64_t offset = -1;
  std::vector<float> u(4, 2.0f);
  masked_softmax(ScoreView::f32(u.data(), {1, 1, 1, 4}),
                 MaskSpec::causal().with_query_offsets(&offset), {});
  for (float p : u) ASSERT_EQ(p, 0.0f);
}

// Scores far from 0: the one-FMA exp argument rounds -max log2 e, a shift
// common to the row that must cancel (up to |max log2 e| = 2^20, 7.2e5 here),
// and beyond it the two-step argument takes over (8e5, 3e6). Rows with a
// materialised bias take the one-FMA form over their stored transformed
// scores under the same limit: a causal -inf bias with finite terms, the
// offset in the scores or in the bias, and a softcap (applied before the
// bias) on the biased rows.
TEST_P(ScoreKernelsTest, LargeScoresKeepTheirPrecision) {
  const Shape4 shape{1, 2, 3, 70};
  std::vector<float> causal_bias(shape.rows() * shape.k_len);
  for (std::size_t r = 0; r < shape.rows(); ++r) {
    for (std::size_t k = 0; k < shape.k_len; ++k) {
      // Row r is query q = r % 3 at position 67 + q of 70 keys.
      causal_bias[r * shape.k_len + k] =
          k > 67 + r % 3 ? -kInf : -0.01f * static_cast<float>(k % 7);
    }
  }
  for (float offset : {1.0e3f, -5.0e4f, 7.2e5f, -7.2e5f, 8.0e5f, 3.0e6f}) {
    for (float scale : {1.0f, 0.125f}) {
      for (int biased = 0; biased < 4; ++biased) {
        // 0: causal rule; 1: bias, offset scores; 2: bias, offset bias;
        // 3: as 1 with a softcap of 30.
        std::vector<float> bias = causal_bias;
        if (biased == 2) {
          for (float& b : bias) b += offset;  // -inf stays -inf
        }
        Config c;
        c.shape = shape;
        c.mask = biased == 0 ? MaskSpec::causal()
                             : MaskSpec::bias(bias.data(), shape);
        c.options = SoftmaxOptions{scale, biased == 3 ? 30.0f : 0.0f};
        const float score_offset = biased == 2 ? 0.0f : offset;
        c.scores = [score_offset](std::size_t, std::size_t h, std::size_t q,
                                  std::size_t k) {
          return score_offset + RandomScore(h * 1000 + q * 70 + k);
        };
        c.name = "large offset";
        ASSERT_NO_FATAL_FAILURE(CheckSoftmax(c, false, false))
            << offset << " biased " << biased;
      }
    }
  }
}

#if defined(__x86_64__) || defined(_M_X64)
// AVX-512 kernels set MXCSR.FTZ while they run; the caller's MXCSR (here
// with FTZ clear, then with DAZ set) comes back unchanged.
TEST_P(ScoreKernelsTest, SoftmaxRestoresTheCallersFloatingPointMode) {
  const unsigned saved = _mm_getcsr();
  for (unsigned csr : {saved & ~0x8040u, (saved & ~0x8000u) | 0x0040u}) {
    _mm_setcsr(csr);
    std::vector<float> s(100);
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = -1.5f * k;  // underflows
    masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 100}), MaskSpec::none(),
                   {});
    const unsigned after = _mm_getcsr();
    _mm_setcsr(saved);
    EXPECT_EQ(after & ~0x3Fu, csr & ~0x3Fu);  // ignoring exception flags
    EXPECT_EQ(s[99], 0.0f);
    EXPECT_GT(s[0], 0.7f);
  }
}
#endif

TEST_P(ScoreKernelsTest, NaNOrInfinityInAKeptScorePropagates) {
  // Whatever the NaN's sign and payload (the exp builds 2^n from bits).
  for (std::uint32_t bits : {0x7FC00000u, 0xFFC001FFu, 0x7F800001u}) {
    float nan;
    std::memcpy(&nan, &bits, sizeof(nan));
    std::vector<float> r(40, 1.5f);
    r[33] = nan;
    masked_softmax(ScoreView::f32(r.data(), {1, 1, 1, 40}), MaskSpec::none(),
                   {});
    for (float p : r) EXPECT_TRUE(std::isnan(p)) << std::hex << bits;
  }

  std::vector<float> s = {1.0f, NAN, 2.0f, 3.0f, 0.0f};
  masked_softmax(ScoreView::f32(s.data(), {1, 1, 1, 5}), MaskSpec::none(), {});
  EXPECT_TRUE(std::isnan(s[0]) && std::isnan(s[2]) && std::isnan(s[4]));
  // The same NaN under a masked key is ignored.
  std::vector<float> t = {1.0f, NAN, 2.0f};
  masked_softmax(ScoreView::f32(t.data(), {1, 1, 1, 3}), MaskSpec::decode(1, 2),
                 {});
  EXPECT_EQ(t[1], 0.0f);
  EXPECT_NEAR(t[0] + t[2], 1.0f, 1e-6f);
  // A NaN whose row is otherwise -inf: Max may drop the NaN, the row is
  // still NaN (and masked keys of a dense mask still 0).
  for (std::size_t n : {3u, 20u}) {
    std::vector<float> u(n, -kInf);
    u[n - 2] = NAN;
    std::vector<std::uint8_t> keep(n, 1);
    keep[0] = 0;
    masked_softmax(ScoreView::f32(u.data(), {1, 1, 1, n}),
                   MaskSpec::keep(keep.data(), {1, 1, 1, n}), {});
    EXPECT_EQ(u[0], 0.0f);
    for (std::size_t k = 1; k < n; ++k) EXPECT_TRUE(std::isnan(u[k])) << k;
  }
  // A -inf bias masks even a +inf score (no inf - inf NaN).
  std::vector<float> v = {kInf, 1.0f};
  const float bias[] = {-kInf, 0.0f};
  masked_softmax(ScoreView::f32(v.data(), {1, 1, 1, 2}),
                 MaskSpec::bias(bias, {1, 1, 1, 2}), {});
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], 1.0f);
}

// Rows run in batches (src/softmax/softmax_plain_rows-inl.h: decode heads,
// causal rows) give each row what it gets alone, whatever its neighbours: rows
// that leave the batch for the general code (every kept score -inf, a NaN,
// +inf, scores beyond the plain argument's 7e5) beside ordinary ones, rows
// over and under the batch's row and key limits, with sinks and row_lse,
// in both fill modes, every row type; and the oracle holds. Long f32 rows
// (up to 2730 keys) batch three at a time (2101 keys, and 2730), and one
// key more is general; 16-bit rows over 1024 keys are general.
TEST_P(ScoreKernelsTest, BatchedRowsEqualEachRowAlone) {
  struct Case {
    Shape4 shape;
    MaskSpec mask;
  };
  const Case cases[] = {{{1, 19, 1, 301}, MaskSpec::decode(200, 300)},
                        {{2, 11, 1, 1030}, MaskSpec::decode(1000, 1029, 600)},
                        {{1, 2, 37, 70}, MaskSpec::causal()},
                        {{1, 3, 9, 1100}, MaskSpec::none()},
                        {{1, 7, 1, 2800}, MaskSpec::decode(2100, 2799)},
                        {{1, 7, 1, 2730}, MaskSpec::none()},
                        {{1, 4, 1, 2731}, MaskSpec::none()}};
  for (ScoreType type : {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
    for (const Case& c : cases) {
      for (bool zero_masked : {true, false}) {
        const Shape4& sh = c.shape;
        const std::size_t rows = sh.rows();
        Tensor t = MakeTensor(type, sh, /*gap=*/3, /*misalign=*/1);
        for (std::size_t b = 0; b < sh.batch; ++b)
          for (std::size_t h = 0; h < sh.heads; ++h)
            for (std::size_t q = 0; q < sh.q_len; ++q)
              for (std::size_t k = 0; k < sh.k_len; ++k) {
                const std::size_t r = (b * sh.heads + h) * sh.q_len + q;
                float x = RandomScore(r * 100003 + k);
                if (r % 7 == 2) x = -kInf;
                if (r % 7 == 4 && k == sh.k_len / 2) x = NAN;
                if (r % 7 == 5 && k == 0) x = kInf;
                if (r % 7 == 6) x += 1e6f;
                testing::Set(t.view, Offset(t.view, b, h, q, k), x);
              }
        std::vector<float> sinks(sh.heads);
        for (std::size_t h = 0; h < sinks.size(); ++h) {
          sinks[h] = h % 2 ? -kInf : 0.25f * static_cast<float>(h);
        }
        SoftmaxOptions options;
        options.scale = 0.75f;
        options.zero_masked = zero_masked;
        options.sink_logits = sinks.data();
        // In the same buffer: where the general code aligns its vectors
        // depends on the row's address.
        std::vector<std::uint8_t> input_bytes;
        const ScoreView input = testing::SameViewIn(t, input_bytes);
        std::vector<float> lse_all(rows, 7.0f), lse_alone(rows, 7.0f);
        options.row_lse = lse_all.data();
        masked_softmax(t.view, c.mask, options);
        const std::vector<std::uint8_t> all = t.bytes;
        std::copy(input_bytes.begin(), input_bytes.end(), t.bytes.begin());
        options.row_lse = lse_alone.data();
        for (std::size_t r = 0; r < rows; ++r) {
          masked_softmax(t.view, c.mask, options, RowRange{r, r + 1});
        }
        const std::string what = std::string(testing::TypeName(type)) +
                                 " k_len " + std::to_string(sh.k_len) +
                                 " zero_masked " + std::to_string(zero_masked);
        for (std::size_t e = 0; e < all.size(); ++e) {
          ASSERT_EQ(all[e], t.bytes[e]) << what << ", byte " << e;
        }
        for (std::size_t r = 0; r < rows; ++r) {
          ASSERT_EQ(std::memcmp(&lse_all[r], &lse_alone[r], 4), 0)
              << what << ", row_lse " << r;
        }
        std::vector<std::uint8_t> want_bytes;
        const ScoreView want = testing::SameViewIn(t, want_bytes);
        std::copy(input_bytes.begin(), input_bytes.end(), want_bytes.begin());
        SoftmaxOptions ref = options;
        ref.row_lse = nullptr;
        reference::masked_softmax(want, want, c.mask, ref, RowRange::all(sh));
        ASSERT_EQ("",
                  testing::SoftmaxMismatch(input, t.view, want, c.mask, ref))
            << what;
      }
    }
  }
}

TEST_P(ScoreKernelsTest, ApplyKeepsKeptBitsIncludingNaNPayloads) {
  std::vector<std::uint16_t> s = {0x7E01, 0xFC01, 0x0001, 0x8000, 0x3C00};
  const std::uint8_t keep[] = {1, 1, 1, 1, 0};
  ScoreView v{s.data(), ScoreType::kF16, {1, 1, 1, 5}, {5, 5, 5}};
  apply_mask(v, MaskSpec::keep(keep, {1, 1, 1, 5}));
  EXPECT_EQ(s[0], 0x7E01);
  EXPECT_EQ(s[1], 0xFC01);
  EXPECT_EQ(s[2], 0x0001);
  EXPECT_EQ(s[3], 0x8000);
  EXPECT_EQ(s[4], 0xFC00) << "-inf in f16";
}

using testing::ErrorOf;

TEST_P(ScoreKernelsTest, BadInputThrowsNamingTheValuesAndWritesNothing) {
  std::vector<float> s(64, 3.0f);
  const std::vector<float> before = s;
  const Shape4 shape{1, 2, 2, 8};
  const ScoreView good = ScoreView::f32(s.data(), shape);
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  ScoreView null_data = good;
  null_data.data = nullptr;
  expect([&] { masked_softmax(null_data, MaskSpec::none()); },
         "masked_softmax: scores.data is null");
  expect([&] { apply_mask(null_data, MaskSpec::none()); },
         "apply_mask: scores.data is null");
  ScoreView zero_k = good;
  zero_k.shape.k_len = 0;
  expect([&] { apply_mask(zero_k, MaskSpec::causal()); }, "k_len is 0");
  ScoreView narrow = good;
  narrow.strides.row = 7;
  expect([&] { masked_softmax(narrow, MaskSpec::causal()); },
         "row stride 7 is below k_len 8");
  expect([&] { masked_softmax(good, MaskSpec::decode(8, 7)); },
         "decode mask past 8 exceeds upper 7");
  expect([&] { apply_mask(good, MaskSpec::decode(2, 9)); },
         "decode mask upper 9 needs k_len upper + 1, but k_len is 8");
  const std::vector<float> m(3 * 8, 1.0f);
  expect(
      [&] {
        apply_mask(good, MaskSpec::keep(m.data(), {1, 3, 1, 8}));
      },
      "mask shape [1, 3, 1, 8] does not broadcast to scores [1, 2, 2, 8]");
  expect(
      [&] {
        apply_mask(good, MaskSpec::keep(m.data(), {1, 1, 1, 7}));
      },
      "does not broadcast");
  expect(
      [&] {
        apply_mask(good,
                   MaskSpec::keep(static_cast<float*>(nullptr), {1, 1, 1, 8}));
      },
      "dense mask data is null");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {}, RowRange{2, 5});
      },
      "row range [2, 5) is not within the 4 rows");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {NAN, 0.0f});
      },
      "scale nan is not finite");
  expect(
      [&] {
        masked_softmax(good, MaskSpec::none(), {1.0f, -1.0f});
      },
      "softcap -1.000000 must be finite and >= 0");
  std::vector<std::uint16_t> half(64);
  ScoreView bf = ScoreView::bf16s(reinterpret_cast<bf16*>(half.data()), shape);
  expect(
      [&] {
        masked_softmax(good, bf, MaskSpec::none(), {}, RowRange::all(shape));
      },
      "in and out differ in type");
  EXPECT_THAT(ErrorOf([] { kept_keys(MaskSpec::causal(), 0, 3, 3, 8); }),
              HasSubstr("kept_keys: query row 3 is not below q_len 3"));
}

// Views whose element count or byte span exceeds PTRDIFF_MAX cannot exist;
// offsets into them would wrap to small, wrong addresses. Each is rejected
// by name and value before a byte of the 64-float buffer is touched.
TEST(ImpossibleViewsTest, ScoreViewsBeyondPtrdiffMaxAreRejected) {
  constexpr std::size_t kMax = PTRDIFF_MAX;
  constexpr std::size_t k2p61 = std::size_t{1} << 61;
  constexpr std::size_t k2p62 = std::size_t{1} << 62;
  constexpr std::size_t k2p63 = std::size_t{1} << 63;
  const std::string max = "PTRDIFF_MAX (9223372036854775807)";
  std::vector<float> s(64, 3.0f);
  const std::vector<float> before = s;
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  // The byte offset of batch 1, 2^61 floats in, is 2^63.
  const ScoreView far_batch =
      ScoreView::f32(s.data(), {2, 1, 1, 8}, {k2p61, 8, 8});
  const std::string far_batch_error =
      "scores shape [2, 1, 1, 8] at strides [2305843009213693952, 8, 8] "
      "spans more than " +
      max + " bytes of 4-byte elements";
  expect([&] { masked_softmax(far_batch, MaskSpec::none()); },
         "masked_softmax: " + far_batch_error);
  expect([&] { apply_mask(far_batch, MaskSpec::causal()); },
         "apply_mask: " + far_batch_error);
  // One row of 2^63 keys.
  const ScoreView huge_row =
      ScoreView::f32(s.data(), {1, 1, 1, k2p63}, {0, 0, k2p63});
  expect([&] { masked_softmax(huge_row, MaskSpec::none()); },
         "masked_softmax: scores shape [1, 1, 1, 9223372036854775808] has "
         "more than " +
             max + " elements");
  // batch * heads wraps to 0 rows (and to 4 rows with 2^62 + 1 batches).
  expect(
      [&] {
        masked_softmax(ScoreView::f32(s.data(), {k2p62, 8, 1, 8}),
                       MaskSpec::none());
      },
      "masked_softmax: scores shape [4611686018427387904, 8, 1, 8] has "
      "more than " +
          max + " elements");
  expect(
      [&] {
        apply_mask(ScoreView::f32(s.data(), {k2p62 + 1, 4, 1, 8}),
                   MaskSpec::none());
      },
      "apply_mask: scores shape [4611686018427387905, 4, 1, 8] has more "
      "than " +
          max + " elements");
  // A head stride times its extent past the limit, and a bf16 row of 2^62
  // keys (2^63 bytes; as f32 elements it would still be countable).
  expect(
      [&] {
        masked_softmax(ScoreView::f32(s.data(), {1, 3, 1, 8}, {0, kMax / 2, 8}),
                       MaskSpec::none());
      },
      "at strides [0, 4611686018427387903, 8] spans more than");
  std::vector<std::uint16_t> half(64);
  const ScoreView bf_row{
      half.data(), ScoreType::kBF16, {1, 1, 1, k2p62}, {0, 0, k2p62}};
  EXPECT_THAT(ErrorOf([&] { apply_mask(bf_row, MaskSpec::none()); }),
              HasSubstr("bytes of 2-byte elements"));
  // Out of place: the view that cannot exist is named.
  const ScoreView good = ScoreView::f32(s.data(), {2, 1, 1, 8});
  expect(
      [&] {
        masked_softmax(good, far_batch, MaskSpec::none(), {}, RowRange{0, 2});
      },
      "masked_softmax: out shape [2, 1, 1, 8] at strides");
  // The limit itself: the largest f32 row that fits is accepted (an empty
  // row range touches nothing), one key more is not.
  const ScoreView largest =
      ScoreView::f32(s.data(), {1, 1, 1, kMax / 4}, {0, 0, kMax / 4});
  EXPECT_EQ(ErrorOf([&] {
              apply_mask(largest, MaskSpec::none(), {0, 0});
            }),
            "(no error)");
  ScoreView too_large = largest;
  too_large.shape.k_len = kMax / 4 + 1;
  expect(
      [&] {
        apply_mask(too_large, MaskSpec::none(), {0, 0});
      },
      "spans more than");
}

TEST(ImpossibleViewsTest, DenseMasksBeyondPtrdiffMaxAreRejected) {
  constexpr std::size_t kMax = PTRDIFF_MAX;
  constexpr std::size_t k2p61 = std::size_t{1} << 61;
  std::vector<float> s(16, 3.0f);
  const std::vector<float> before = s;
  const ScoreView scores = ScoreView::f32(s.data(), {2, 1, 1, 8});
  const std::vector<float> m(16, 1.0f);
  const auto expect = [&](const std::function<void()>& f,
                          const std::string& text) {
    const std::string error = ErrorOf(f);
    EXPECT_THAT(error, HasSubstr(text));
    EXPECT_EQ(s, before) << "a rejected call wrote: " << error;
  };
  const std::string far =
      "mask shape [2, 1, 1, 8] at strides [2305843009213693952, 8, 8] spans "
      "more than PTRDIFF_MAX (9223372036854775807) bytes of 4-byte elements";
  for (const MaskSpec& mask :
       {MaskSpec::keep(m.data(), {2, 1, 1, 8}).with_strides({k2p61, 8, 8}),
        MaskSpec::bias(m.data(), {2, 1, 1, 8}).with_strides({k2p61, 8, 8})}) {
    expect([&] { apply_mask(scores, mask); }, "apply_mask: " + far);
    expect([&] { masked_softmax(scores, mask); }, "masked_softmax: " + far);
    expect([&] { kept_keys(mask, 1, 0, 1, 8); }, "kept_keys: " + far);
  }
  // u8 masks count single bytes: a batch stride of 2^63 - 8 plus 8 keys is
  // 2^63 bytes, one too many; 2^63 - 9 fits.
  const std::vector<std::uint8_t> u8(16, 1);
  const MaskSpec u8_far =
      MaskSpec::keep(u8.data(), {2, 1, 1, 8}).with_strides({kMax - 7, 8, 8});
  expect([&] { apply_mask(scores, u8_far); },
         "apply_mask: mask shape [2, 1, 1, 8] at strides "
         "[9223372036854775800, 8, 8] spans more than PTRDIFF_MAX "
         "(9223372036854775807) bytes of 1-byte elements");
  const MaskSpec u8_fits =
      MaskSpec::keep(u8.data(), {2, 1, 1, 8}).with_strides({kMax - 8, 8, 8});
  EXPECT_EQ(ErrorOf([&] {
              apply_mask(scores, u8_fits, RowRange{0, 0});
            }),
            "(no error)");
  // Mask extents whose product wraps.
  const Shape4 wraps{std::size_t{1} << 62, 8, 1, 8};
  const ScoreView wide{s.data(), ScoreType::kF32, wraps, {0, 0, 8}};
  expect([&] { apply_mask(wide, MaskSpec::keep(m.data(), wraps)); },
         "scores shape [4611686018427387904, 8, 1, 8] has more than");
  expect([&] { kept_keys(MaskSpec::keep(m.data(), wraps), 0, 0, 1, 8); },
         "kept_keys: mask shape [4611686018427387904, 8, 1, 8] has more "
         "than PTRDIFF_MAX (9223372036854775807) elements");
}

TEST(ImpossibleViewsTest, KeptKeysRejectsRowsOfImpossibleTensors) {
  constexpr std::size_t kMaxIndex = std::numeric_limits<std::size_t>::max();
  EXPECT_THAT(ErrorOf([] {
                kept_keys(MaskSpec::causal(), 0, 0, 1, std::size_t{1} << 63);
              }),
              HasSubstr("kept_keys: batch_index 0, q_len 1 and k_len "
                        "9223372036854775808 describe a tensor of more than "
                        "PTRDIFF_MAX (9223372036854775807) elements"));
  EXPECT_THAT(
      ErrorOf([] { kept_keys(MaskSpec::causal(), kMaxIndex, 0, 1, 8); }),
      HasSubstr("kept_keys: batch_index 18446744073709551615"));
  EXPECT_THAT(ErrorOf([] {
                kept_keys(MaskSpec::causal(), std::size_t{1} << 60, 0, 4, 8);
              }),
              HasSubstr("describe a tensor of more than"));
  // Query offsets at the ends of int64 place the row after every key or
  // before key 0, without overflow.
  const std::int64_t last = std::numeric_limits<std::int64_t>::max();
  const std::int64_t first = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(kept_keys(MaskSpec::causal().with_query_offsets(&last), 0, 7, 8, 8),
            (KeptKeys{{KeyInterval{0, 8}, KeyInterval{}}, 1}));
  EXPECT_EQ(kept_keys(MaskSpec::sliding_window(3).with_query_offsets(&last), 0,
                      7, 8, 8)
                .count,
            0u)
      << "a window far past the last key keeps none of them";
  EXPECT_EQ(kept_keys(MaskSpec::causal().with_query_offsets(&first), 0, 7, 8, 8)
                .count,
            0u);
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
