// SPDX-License-Identifier: MIT OR Apache-2.0
// libFuzzer target: decodes a shape, strides, a mask kind with its
// parameters, softmax options and score values from the input, then runs
// apply_mask and masked_softmax on every supported target and compares each
// with the scalar oracle (tests/score_check.h). Also feeds bad arguments,
// among them extents and strides whose element count or byte span exceeds
// PTRDIFF_MAX (no such tensor exists; offsets into it would wrap), and
// checks they throw std::invalid_argument and touch no memory: nothing is
// written, and a read far outside the buffer would fault under the
// sanitizers. Any mismatch aborts with a description. Built with clang
// (-fsanitize=fuzzer) when RLX_ATTN_MASK_FUZZ is ON.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/targets.h"
#include "src/reference.h"
#include "tests/score_check.h"

namespace rlx {
namespace {

using testing::MakeTensor;
using testing::SameViewIn;
using testing::Tensor;

// Reads the fuzzer's bytes; past the end it reads zeros, so every input
// decodes to some case.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size)
      : data_(data), size_(size) {}
  std::uint32_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [0, n).
  std::size_t Pick(std::size_t n) {
    const std::uint32_t v = Byte() | (Byte() << 8);
    return n == 0 ? 0 : v % n;
  }
  bool Bit() { return Byte() & 1; }
  float Score() {
    const std::uint32_t tag = Byte();
    if (tag == 255) {
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                3.0e38f,
                                -3.0e38f,
                                0.0f,
                                -0.0f,
                                1e-40f};
      return specials[Byte() % 8];
    }
    const std::int16_t v = static_cast<std::int16_t>(Byte() | (Byte() << 8));
    return v / 1024.0f;  // [-32, 32)
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

struct Case {
  ScoreType type;
  Shape4 shape;
  std::size_t gap, misalign;
  MaskSpec mask;
  SoftmaxOptions options;
  float fill;
  std::vector<float> dense;            // kKeepF32 / kBias values
  std::vector<std::uint8_t> dense_u8;  // kKeepU8 values
  std::vector<std::int64_t> offsets;
  std::vector<float> scores;  // contiguous [b, h, q, k]
};

Case Decode(Reader& r) {
  Case c;
  c.type = static_cast<ScoreType>(r.Pick(3));
  const auto kind = static_cast<MaskKind>(r.Pick(7));
  c.shape = {1 + r.Pick(3), 1 + r.Pick(3), 1 + r.Pick(4), 1 + r.Pick(80)};
  if (r.Byte() == 0x80) c.shape.k_len += r.Pick(2000);  // sometimes long
  c.gap = r.Pick(3);
  c.misalign = r.Pick(4);
  const std::size_t k_len = c.shape.k_len;
  switch (kind) {
    case MaskKind::kNone:
      c.mask = MaskSpec::none();
      break;
    case MaskKind::kCausal:
    case MaskKind::kSlidingWindow:
      c.mask = kind == MaskKind::kCausal
                   ? MaskSpec::causal()
                   : MaskSpec::sliding_window(r.Pick(k_len + 3));
      if (r.Bit()) {
        for (std::size_t b = 0; b < c.shape.batch; ++b) {
          c.offsets.push_back(static_cast<std::int64_t>(r.Pick(k_len + 12)) -
                              6);
        }
      }
      break;
    case MaskKind::kDecode:
      c.mask = MaskSpec::decode(r.Pick(k_len), k_len - 1, r.Pick(k_len + 2));
      break;
    default: {
      // Each of batch, heads, q: the scores' extent or 1 (broadcast).
      const Shape4 m{r.Bit() ? c.shape.batch : 1, r.Bit() ? c.shape.heads : 1,
                     r.Bit() ? c.shape.q_len : 1, k_len};
      const std::size_t n = m.batch * m.heads * m.q_len * m.k_len;
      if (kind == MaskKind::kKeepU8) {
        for (std::size_t i = 0; i < n; ++i) {
          c.dense_u8.push_back(r.Bit() ? static_cast<std::uint8_t>(r.Byte())
                                       : 0);
        }
        c.mask = MaskSpec::keep(c.dense_u8.data(), m);
      } else {
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t b = r.Byte();
          if (kind == MaskKind::kKeepF32) {
            const float values[] = {0.0f,
                                    1.0f,
                                    0.5f,
                                    0.49999997f,
                                    std::numeric_limits<float>::quiet_NaN(),
                                    -3.0f,
                                    2.0f,
                                    1.0f};
            c.dense.push_back(values[b % 8]);
          } else {
            c.dense.push_back(b % 5 == 0
                                  ? -std::numeric_limits<float>::infinity()
                                  : (static_cast<float>(b) - 128) / 16);
          }
        }
        c.mask = kind == MaskKind::kKeepF32 ? MaskSpec::keep(c.dense.data(), m)
                                            : MaskSpec::bias(c.dense.data(), m);
      }
    }
  }
  if (!c.offsets.empty()) c.mask = c.mask.with_query_offsets(c.offsets.data());
  const float scales[] = {1.0f, 0.125f, -1.0f, 3.5f};
  const float softcaps[] = {0.0f, 0.0f, 5.0f, 30.0f};
  c.options = {scales[r.Pick(4)], softcaps[r.Pick(4)]};
  c.fill = r.Bit() ? -1e9f : -std::numeric_limits<float>::infinity();
  const std::size_t n = c.shape.rows() * k_len;
  for (std::size_t i = 0; i < n; ++i) c.scores.push_back(r.Score());
  return c;
}

[[noreturn]] void Fail(const Case& c, const std::string& what) {
  const Shape4& s = c.shape;
  std::fprintf(stderr,
               "score_kernels_fuzzer: %s (target %s)\n  type %s shape [%zu, "
               "%zu, %zu, %zu] gap %zu misalign %zu kind %d window %zu past "
               "%zu upper %zu offsets %zu scale %g softcap %g fill %g\n  "
               "scores:",
               what.c_str(), active_target().c_str(), testing::TypeName(c.type),
               s.batch, s.heads, s.q_len, s.k_len, c.gap, c.misalign,
               static_cast<int>(c.mask.kind), c.mask.window, c.mask.past,
               c.mask.upper, c.offsets.size(), c.options.scale,
               c.options.softcap, c.fill);
  for (std::size_t i = 0; i < c.scores.size() && i < 64; ++i) {
    std::fprintf(stderr, " %g", c.scores[i]);
  }
  const Shape4& m = c.mask.shape;
  std::fprintf(stderr, "\n  mask [%zu, %zu, %zu, %zu]:", m.batch, m.heads,
               m.q_len, m.k_len);
  for (std::size_t i = 0; i < c.dense.size() && i < 64; ++i) {
    std::fprintf(stderr, " %g", c.dense[i]);
  }
  for (std::size_t i = 0; i < c.dense_u8.size() && i < 64; ++i) {
    std::fprintf(stderr, " %u", c.dense_u8[i]);
  }
  std::fprintf(stderr, "\n");
  std::abort();
}

Tensor ScoresOf(const Case& c) {
  Tensor t = MakeTensor(c.type, c.shape, c.gap, c.misalign);
  const Shape4& s = c.shape;
  std::size_t i = 0;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                       c.scores[i++]);
        }
  return t;
}

void CheckOneTarget(const Case& c, std::size_t split) {
  const RowRange all = RowRange::all(c.shape);
  const std::size_t cut = split % (all.end + 1);
  {  // apply_mask: bit-exact, rows split at `cut`.
    Tensor got = ScoresOf(c);
    std::vector<std::uint8_t> want_bytes;
    const ScoreView want = SameViewIn(got, want_bytes);
    apply_mask(got.view, c.mask, {0, cut}, c.fill);
    apply_mask(got.view, c.mask, {cut, all.end}, c.fill);
    reference::apply_mask(want, c.mask, all, c.fill);
    const std::string mismatch = testing::ApplyMismatch(got.view, want, c.mask);
    if (!mismatch.empty()) Fail(c, "apply_mask: " + mismatch);
    const std::string outside = testing::UntouchedOutside(got, got.view);
    if (!outside.empty()) Fail(c, "apply_mask: " + outside);
  }
  {  // masked_softmax in place, rows split at `cut`.
    Tensor got = ScoresOf(c);
    std::vector<std::uint8_t> before_bytes, want_bytes;
    const ScoreView before = SameViewIn(got, before_bytes);
    const ScoreView want = SameViewIn(got, want_bytes);
    masked_softmax(got.view, c.mask, c.options, {0, cut});
    masked_softmax(got.view, c.mask, c.options, {cut, all.end});
    reference::masked_softmax(want, want, c.mask, c.options, all);
    const std::string mismatch =
        testing::SoftmaxMismatch(before, got.view, want, c.mask, c.options);
    if (!mismatch.empty()) Fail(c, "masked_softmax: " + mismatch);
    const std::string outside = testing::UntouchedOutside(got, got.view);
    if (!outside.empty()) Fail(c, "masked_softmax: " + outside);
  }
}

constexpr std::size_t kMaxSize = PTRDIFF_MAX;

// A size at or beyond what the library accepts: the extremes of size_t and
// ptrdiff_t, powers of two whose products wrap, or `least` (the smallest
// value that is too large in its place) plus a little.
std::size_t Extreme(Reader& r, std::size_t least) {
  const std::size_t values[] = {least,
                                least + 1 + r.Pick(1000),
                                std::size_t{1} << 61,
                                std::size_t{1} << 62,
                                std::size_t{1} << 63,
                                kMaxSize,
                                kMaxSize + 1,
                                std::numeric_limits<std::size_t>::max()};
  return std::max(least, values[r.Pick(8)]);
}

// The index of an axis (0 batch, 1 heads, 2 q) with an extent above 1, or -1.
int WideAxis(const Shape4& s, Reader& r) {
  const std::size_t extents[] = {s.batch, s.heads, s.q_len};
  const int first = static_cast<int>(r.Pick(3));
  for (int i = 0; i < 3; ++i) {
    const int axis = (first + i) % 3;
    if (extents[axis] > 1) return axis;
  }
  return -1;
}

std::size_t& Extent(Shape4& s, int axis) {
  return axis == 0 ? s.batch : axis == 1 ? s.heads : s.q_len;
}

std::size_t& Stride(Strides3& s, int axis) {
  return axis == 0 ? s.batch : axis == 1 ? s.head : s.row;
}

// The smallest stride on an axis of `extent` (> 1) that puts the last
// element of a tensor of `elem_size`-byte elements beyond byte PTRDIFF_MAX.
std::size_t LeastFarStride(std::size_t extent, std::size_t elem_size) {
  return kMaxSize / elem_size / (extent - 1) + 1;
}

// A view or dense mask of the case made impossible: an extent, or an
// axis's stride, so large that its element count or last byte offset
// exceeds PTRDIFF_MAX. Returns false when the case has no axis for it.
bool MakeImpossible(const Case& c, Reader& r, ScoreView& v, MaskSpec& mask,
                    std::vector<float>& mask_values) {
  const std::size_t elem = testing::ElemSize(c.type);
  switch (r.Pick(3)) {
    case 0: {  // an extent: k_len alone, or one whose product wraps
      const int axis = static_cast<int>(r.Pick(4));
      std::size_t& extent = axis == 3 ? v.shape.k_len : Extent(v.shape, axis);
      extent = Extreme(r, kMaxSize / elem + 1);
      return true;
    }
    case 1: {  // a stride of the scores
      const int axis = WideAxis(v.shape, r);
      if (axis < 0) return false;
      Stride(v.strides, axis) =
          Extreme(r, LeastFarStride(Extent(v.shape, axis), elem));
      return true;
    }
    default: {  // a dense f32 mask's stride over valid scores
      const int axis = WideAxis(v.shape, r);
      if (axis < 0) return false;
      Shape4 m{1, 1, 1, v.shape.k_len};
      Extent(m, axis) = Extent(v.shape, axis);
      mask_values.assign(16, 1.0f);  // never read: the mask is rejected
      mask = MaskSpec::keep(mask_values.data(), m);
      Stride(mask.strides, axis) =
          Extreme(r, LeastFarStride(Extent(m, axis), sizeof(float)));
      return true;
    }
  }
}

// A corrupted copy of the case must be rejected without writing.
void CheckRejected(const Case& c, Reader& r) {
  Tensor t = ScoresOf(c);
  const std::vector<std::uint8_t> before = t.bytes;
  ScoreView v = t.view;
  MaskSpec mask = c.mask;
  RowRange rows = RowRange::all(c.shape);
  std::vector<float> mask_values;
  switch (r.Pick(6)) {
    case 0:
      v.shape.k_len = 0;
      break;
    case 1:
      v.strides.row = c.shape.k_len - 1;
      v.shape.q_len = 2;
      break;
    case 2:
      rows.end = c.shape.rows() + 1 + r.Pick(3);
      break;
    case 3:
      mask = MaskSpec::decode(c.shape.k_len, c.shape.k_len - 1);
      break;
    case 4:
      if (MakeImpossible(c, r, v, mask, mask_values)) break;
      [[fallthrough]];
    default:
      v.data = nullptr;
  }
  for (int kernel = 0; kernel < 2; ++kernel) {
    try {
      if (kernel == 0) {
        apply_mask(v, mask, rows);
      } else {
        masked_softmax(v, mask, c.options, rows);
      }
      Fail(c, "bad arguments were accepted");
    } catch (const std::invalid_argument&) {
    }
    if (t.bytes != before) Fail(c, "a rejected call wrote");
  }
  // kept_keys for a row of a tensor that cannot exist.
  try {
    if (r.Bit()) {
      kept_keys(c.mask, 0, 0, 1, Extreme(r, kMaxSize + 1));
    } else {
      kept_keys(c.mask, Extreme(r, kMaxSize), 0, c.shape.q_len, c.shape.k_len);
    }
    Fail(c, "kept_keys accepted a row of more than PTRDIFF_MAX elements");
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace
}  // namespace rlx

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  rlx::Reader r(data, size);
  const rlx::Case c = rlx::Decode(r);
  const std::size_t split = r.Pick(64);
  for (const std::string& target : rlx::supported_targets()) {
    rlx::force_target(target);
    rlx::CheckOneTarget(c, split);
  }
  rlx::force_target("");
  rlx::CheckRejected(c, r);
  return 0;
}
