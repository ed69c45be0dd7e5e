// SPDX-License-Identifier: MIT OR Apache-2.0
// What the tests of the softmax extensions (tests/softmax/softmax_*_test.cc:
// sinks, ALiBi, row_lse, kept-only writes, split rows and their merge) share:
// random masks over every rule and dense part, random scores of every row
// type, and masked_softmax of whole rows, or of rows split into parts and
// finished in place, against the double-precision oracle
// (tests/reference/reference.cc).
#ifndef RLX_TESTS_SOFTMAX_SOFTMAX_EXT_CASES_H_
#define RLX_TESTS_SOFTMAX_SOFTMAX_EXT_CASES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_split.h"
#include "tests/common/score_check.h"
#include "tests/reference/reference.h"

namespace rlx::testing {

inline constexpr ScoreType kTypes[] = {ScoreType::kF32, ScoreType::kBF16,
                                       ScoreType::kF16};

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

inline void RandomMask(std::mt19937_64& rng, const Shape4& s, ExtMask& m) {
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

inline testing::Tensor RandomScores(std::mt19937_64& rng, ScoreType type,
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

// "[batch,heads,q_len,k_len]". Appended to "[" rather than `"[" + ...`:
// inlined into some callers, the latter trips a false -Wrestrict in GCC 12.
inline std::string ShapeName(const Shape4& s) {
  std::string name = "[";
  name += std::to_string(s.batch) + "," + std::to_string(s.heads) + "," +
          std::to_string(s.q_len) + "," + std::to_string(s.k_len) + "]";
  return name;
}

// masked_softmax of random scores under (mask, options) against the oracle
// under (ref_mask, ref_options), in place: SoftmaxMismatch's verdict ("" on
// a match), checked under the oracle's mask and options.
inline std::string KernelMismatch(std::mt19937_64& rng, ScoreType type,
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
inline std::string OracleMismatch(const testing::Tensor& t,
                                  const MaskSpec& mask, SoftmaxOptions options,
                                  bool out_of_place = false) {
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
inline std::vector<float> RandomSinks(std::mt19937_64& rng, std::size_t heads) {
  static constexpr float kChoices[] = {-kInf, -30.0f, -2.0f, 0.0f,
                                       0.5f,  3.0f,   25.0f, 1e4f};
  std::vector<float> out(heads);
  for (auto& v : out) v = kChoices[rng() % 8];
  return out;
}

// Key ranges: balanced splits of the row (0, 0)'s kept keys (the ranges of
// one call apply to all its rows), or random cut points.
inline std::vector<KeyRange> RandomKeyRanges(std::mt19937_64& rng,
                                             const MaskSpec& mask,
                                             const Shape4& s,
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
inline void RunSplit(const ScoreView& v, const MaskSpec& mask,
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

// Random scores of `type` under `mask`: masked_softmax of the whole rows,
// or (split) 2-3 parts finished in place, against the oracle, row_lse too.
inline std::string WholeOrSplitMismatch(std::mt19937_64& rng, ScoreType type,
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

}  // namespace rlx::testing

#endif  // RLX_TESTS_SOFTMAX_SOFTMAX_EXT_CASES_H_
