// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over the rows of a mask with a key list: each row reads,
// transforms, exponentiates and writes its listed keys alone (top-k sparse
// attention: 2,048 of 128k keys). Per row:
//   1. the listed keys inside the row's kept intervals (the implicit-position
//      rules: an interval test on the index), compacted by vector compares;
//   2. duplicates removed, unless the keys strictly increase (a vector
//      compare of adjacent slots: the order top-k indexers return);
//   3. the per-element parts of the rules (explicit positions, segments,
//      dense keep part, bias) and ALiBi, per key (ListedKeyRules);
//   4. the scores gathered (GatherIndex where the target gathers natively),
//      softcap(scale * x) + ALiBi + bias, their maximum;
//   5. exp and sum with the exp pass's numerics (SoftmaxExp2, the sums
//      widened every kLaneSumValues values, FinishSum's sink and row_lse);
//   6. the probabilities scattered; the default mode zeroes the rest of the
//      row first, the kept-only mode writes the listed keys inside kept_keys
//      alone (those the per-element rules mask as +0).
// Rows whose list, query and dense row coincide with the previous row's
// (the heads of a decode step sharing one indexer list) reuse steps 1-3.
// Re-included per target by src/softmax/key_list_softmax.cc.

#if defined(RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_INL_H_
#undef RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_INL_H_
#else
#define RLX_SRC_SOFTMAX_KEY_LIST_SOFTMAX_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/key_list.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/key_list_softmax.h"
#include "src/softmax/softmax_exp-inl.h"
#include "src/softmax/softmax_passes-inl.h"
#include "src/util/half_codec.h"
#include "src/util/row_convert-inl.h"
#include "src/util/store_run-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether the target gathers in hardware: elsewhere GatherIndex is a lane
// loop, and a plain scalar loop does the same with fewer shuffles.
constexpr bool kNativeGather =
    (HWY_TARGET & (HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL | HWY_SVE | HWY_SVE2 |
                   HWY_SVE_256 | HWY_SVE2_128)) != 0;

// Whether a row prefetches the next row's listed lines into L2 when the
// next row reads the same keys (see the row loop): the heads of a decode
// step sharing one list then overlap their scattered misses
// (docs/PERFORMANCE.md, "Key lists").
constexpr bool kPrefetchNextRow = true;

// The listed keys of slots[0, n) inside `cover` (at most three intervals),
// in slot order, into keys (n + kKeyListPad entries); returns their count.
template <class DI>
HWY_INLINE std::size_t ListedInCover(DI di, const std::int32_t* slots,
                                     std::size_t n, const KeptKeys& cover,
                                     std::int32_t* HWY_RESTRICT keys) {
  // Inclusive int32 bounds; integer Ge/Le do not compile on x86: the tests
  // are !(k < first) and !(k > last).
  std::int32_t first[KeptKeys::kMaxIntervals], last[KeptKeys::kMaxIntervals];
  std::size_t count = 0;
  constexpr std::size_t kMax = std::numeric_limits<std::int32_t>::max();
  for (std::size_t j = 0; j < cover.count; ++j) {
    const KeyInterval& iv = cover.intervals[j];
    if (iv.begin > kMax || iv.begin >= iv.end) continue;
    first[count] = static_cast<std::int32_t>(iv.begin);
    last[count++] = static_cast<std::int32_t>(std::min(iv.end - 1, kMax));
  }
  if (count == 0) return 0;
  const std::size_t N = hn::Lanes(di);
  const auto in_cover = [&](hn::Vec<DI> k) HWY_ATTR {
    auto m = hn::Not(hn::Or(hn::Lt(k, hn::Set(di, first[0])),
                            hn::Gt(k, hn::Set(di, last[0]))));
    for (std::size_t j = 1; j < count; ++j) {
      m = hn::Or(m, hn::Not(hn::Or(hn::Lt(k, hn::Set(di, first[j])),
                                   hn::Gt(k, hn::Set(di, last[j])))));
    }
    return m;
  };
  std::size_t c = 0, s = 0;
  for (; s + N <= n; s += N) {
    const auto k = hn::LoadU(di, slots + s);
    c += hn::CompressStore(k, in_cover(k), di, keys + c);
  }
  for (; s < n; ++s) {
    const std::int32_t k = slots[s];
    bool in = false;
    for (std::size_t j = 0; j < count; ++j) in |= k >= first[j] && k <= last[j];
    if (in) keys[c++] = k;
  }
  return c;
}

// Whether keys[0, c) strictly increase: then they hold no duplicate.
template <class DI>
HWY_INLINE bool StrictlyIncreasing(DI di, const std::int32_t* keys,
                                   std::size_t c) {
  const std::size_t N = hn::Lanes(di);
  std::size_t j = 0;
  auto bad = hn::Zero(di);
  for (; j + N < c; j += N) {
    const auto a = hn::LoadU(di, keys + j);
    const auto b = hn::LoadU(di, keys + j + 1);
    bad = hn::Or(bad, hn::VecFromMask(di, hn::Not(hn::Lt(a, b))));
  }
  if (!hn::AllTrue(di, hn::Eq(bad, hn::Zero(di)))) return false;
  for (; j + 1 < c; ++j) {
    if (keys[j] >= keys[j + 1]) return false;
  }
  return true;
}

// A row's listed keys after steps 1-3: keys[0, kept) are kept by every rule
// (adds[j]: their ALiBi and bias terms, when has_adds), masked[0, masked)
// are listed keys inside the cover that the per-element rules mask.
struct ListedRow {
  std::size_t kept = 0, masked = 0;
  bool has_adds = false;
};

// The softmax of the listed keys of rows of type kType.
template <ScoreType kType>
HWY_NOINLINE void KeyListRowsOf(const ScoreView& in, const ScoreView& out,
                                const MaskSpec& mask,
                                const SoftmaxOptions& options, RowRange rows,
                                const detail::KeyListScratch& sc) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const std::size_t N = hn::Lanes(df);
  const Shape4& shape = in.shape;
  const std::size_t n = shape.k_len;
  const Shape4& ls = mask.key_indices_shape;
  const std::size_t slots = ls.k_len;
  constexpr std::size_t elem_bytes = sizeof(Elem<kType>);
  const auto* in_base = static_cast<const char*>(in.data);
  auto* out_base = static_cast<char*>(out.data);
  const FlushToZeroScope flush_to_zero;  // for SoftmaxExp2
  const detail::Rules rules = detail::RulesOf(mask);
  const bool per_key = detail::ListedKeyRules::Needed(rules);
  const bool alibi = options.alibi_slopes != nullptr;
  const detail::CallKeptKeys kept_of(mask, rules, shape.q_len, n);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  ListedRow row;
  bool have_row = false;
  std::size_t row_list = 0, row_b = 0, row_q = 0, row_m = 0;
  detail::RowWalk walk(shape, in.strides, out.strides, mask, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end; ++r, walk.Advance()) {
    const detail::RowIndex& i = walk.index();
    const detail::RowOffsets& at = walk.at();
    const auto* s =
        reinterpret_cast<const Elem<kType>*>(in_base + at.in * elem_bytes);
    auto* o = reinterpret_cast<Elem<kType>*>(out_base + at.out * elem_bytes);
    const std::size_t list = detail::KeyListRowOffset(ls, i);
    // Steps 1-3, unless the previous row's hold (ALiBi's terms are per
    // head).
    if (!(have_row && !alibi && list == row_list && i.b == row_b &&
          i.q == row_q && at.mask == row_m)) {
      const KeptKeys cover = kept_of.Of(i.b, i.q);
      std::size_t c =
          ListedInCover(di, mask.key_indices + list, slots, cover, sc.keys);
      if (!StrictlyIncreasing(di, sc.keys, c)) {
        c = detail::DedupKeys(sc.keys, c, sc.seen);
      }
      row = ListedRow{c, 0, per_key || alibi};
      if (row.has_adds) {
        const detail::ListedKeyRules key_rules(mask, rules, i, shape.q_len, n);
        const float slope = alibi ? options.alibi_slopes[i.h] : 0.0f;
        std::size_t kept = 0;
        for (std::size_t j = 0; j < c; ++j) {
          const auto k = static_cast<std::size_t>(sc.keys[j]);
          if (per_key && !key_rules.Keep(k)) {
            sc.masked[row.masked++] = sc.keys[j];
            continue;
          }
          float add = key_rules.Bias(k);
          if (alibi) add = key_rules.Alibi(slope, k) + add;
          sc.keys[kept] = sc.keys[j];
          sc.adds[kept++] = add;
        }
        row.kept = kept;
      }
      have_row = true;
      row_list = list;
      row_b = i.b;
      row_q = i.q;
      row_m = at.mask;
    }
    const std::size_t c = row.kept;
    // The next row's listed lines, when it reads the same keys (the heads
    // of a decode step sharing a list): fetched into L2 over this row's
    // gathers, so that two rows' scattered misses overlap.
    const char* next_in = nullptr;
    if (kPrefetchNextRow && r + 1 < rows.end) {
      const detail::RowIndex next = detail::NextRowIndex(shape, i);
      if (next.b == i.b && next.q == i.q &&
          detail::KeyListRowOffset(ls, next) == list &&
          walk.next_at().mask == at.mask && !alibi) {
        next_in = in_base + walk.next_at().in * elem_bytes;
      }
    }
    // Whole vectors over keys[0, c): the pad repeats a listed key (any key
    // of the row may be read) and its lanes are set aside.
    const std::size_t c_vec = (c + N - 1) / N * N;
    for (std::size_t j = c; j < c_vec; ++j) {
      sc.keys[j] = sc.keys[0];
      sc.adds[j] = 0.0f;
    }
    // Step 4: t = softcap(scale * x) + ALiBi + bias, -inf past c.
    if (!(kType == ScoreType::kF32 && kNativeGather)) {
      for (std::size_t j = 0; j < c_vec; ++j) {
        const Elem<kType> e = s[sc.keys[j]];
        if constexpr (kType == ScoreType::kF32) {
          sc.vals[j] = e;
        } else if constexpr (kType == ScoreType::kBF16) {
          sc.vals[j] = rlx_f32_from_bf16(e);
        } else {
          sc.vals[j] = rlx_f32_from_f16(e);
        }
      }
    }
    auto max_v = hn::Set(df, -kInf);
    auto nan_v = hn::Zero(df);
    for (std::size_t j = 0; j < c_vec; j += N) {
      if (next_in != nullptr) {
        for (std::size_t u = 0; u < N; ++u) {
          __builtin_prefetch(
              next_in + static_cast<std::size_t>(sc.keys[j + u]) * elem_bytes,
              0, 2);
        }
      }
      hn::Vec<decltype(df)> x;
      if constexpr (kType == ScoreType::kF32 && kNativeGather) {
        x = hn::GatherIndex(df, reinterpret_cast<const float*>(s),
                            hn::LoadU(di, sc.keys + j));
      } else {
        x = hn::LoadU(df, sc.vals + j);
      }
      auto t = Transform(df, x, options.scale, options.softcap);
      if (row.has_adds) t = hn::Add(t, hn::LoadU(df, sc.adds + j));
      if (j + N > c)
        t = hn::IfThenElse(hn::FirstN(df, c - j), t, hn::Set(df, -kInf));
      nan_v = hn::Or(nan_v, hn::VecFromMask(df, hn::IsNaN(t)));
      max_v = hn::Max(max_v, t);
      hn::StoreU(t, df, sc.vals + j);
    }
    const bool nan =
        !hn::AllTrue(di, hn::Eq(hn::BitCast(di, nan_v), hn::Zero(di)));
    const float row_max = MaxOfLanesExact(df, max_v);
    const float sink = options.sink_logits != nullptr
                           ? options.sink_logits[i.h]
                           : -std::numeric_limits<float>::infinity();
    float* lse = options.row_lse != nullptr ? options.row_lse + r : nullptr;
    // The value every kept key gets when the row has no finite maximum: a
    // kept NaN or +inf makes NaN, no kept key (or all -inf) zeros.
    float uniform = 0.0f;
    bool is_uniform = true;
    float inv_sum = 1.0f;
    if (nan || row_max == kInf) {
      uniform = kNaN;
      if (lse != nullptr) *lse = kNaN;
    } else if (row_max == -kInf) {
      if (lse != nullptr) *lse = -kInf;
    } else {
      // Step 5: as SoftmaxSegments' pass 2 over stored transformed scores.
      const float max = std::max(row_max, sink);
      const bool plain = PlainArgumentMax(max);
      const auto log2e = hn::Set(df, static_cast<float>(kLog2e));
      const auto neg_max_log2e = hn::Set(df, NegMaxLog2e(max));
      const auto max_vec = hn::Set(df, max);
      const auto exp_of = [&](hn::Vec<decltype(df)> t) HWY_ATTR {
        return plain ? SoftmaxExp2(df, hn::MulAdd(t, log2e, neg_max_log2e))
                     : SoftmaxExp2(df, hn::Mul(hn::Sub(t, max_vec), log2e));
      };
      const WideTag<decltype(df)> dd;
      auto sum_lo = hn::Zero(dd), sum_hi = hn::Zero(dd);
      std::size_t j = 0;
      while (j + 4 * N <= c_vec) {
        auto s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
        for (std::size_t step = 0; step < kLaneSumValues && j + 4 * N <= c_vec;
             ++step, j += 4 * N) {
          const auto e0 = exp_of(hn::LoadU(df, sc.vals + j));
          const auto e1 = exp_of(hn::LoadU(df, sc.vals + j + N));
          const auto e2 = exp_of(hn::LoadU(df, sc.vals + j + 2 * N));
          const auto e3 = exp_of(hn::LoadU(df, sc.vals + j + 3 * N));
          hn::StoreU(e0, df, sc.vals + j);
          hn::StoreU(e1, df, sc.vals + j + N);
          hn::StoreU(e2, df, sc.vals + j + 2 * N);
          hn::StoreU(e3, df, sc.vals + j + 3 * N);
          s0 = hn::Add(s0, e0);
          s1 = hn::Add(s1, e1);
          s2 = hn::Add(s2, e2);
          s3 = hn::Add(s3, e3);
        }
        AddWide(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), sum_lo, sum_hi);
      }
      auto rest = hn::Zero(df);
      for (; j < c_vec; j += N) {
        const auto e = exp_of(hn::LoadU(df, sc.vals + j));
        hn::StoreU(e, df, sc.vals + j);
        rest = hn::Add(rest, e);  // lanes past c are exp(-inf) = 0
      }
      AddWide(df, rest, sum_lo, sum_hi);
      if (FinishSum(WideTotal(dd, sum_lo, sum_hi), max, plain, sink, lse,
                    &inv_sum)) {
        is_uniform = false;
      } else {
        uniform = kNaN;
      }
    }
    // Step 6. The default mode zeroes the row, then writes the kept keys;
    // the kept-only mode writes the listed keys inside the cover alone.
    if (options.zero_masked) {
      FillRun<kType>(o, 0, n, Elem<kType>{});
    } else {
      for (std::size_t j = 0; j < row.masked; ++j)
        o[sc.masked[j]] = Elem<kType>{};
    }
    if (is_uniform) {
      if (uniform == 0.0f && options.zero_masked) continue;
      const Elem<kType> u = ElemFromF32<kType>(uniform);
      for (std::size_t j = 0; j < c; ++j) o[sc.keys[j]] = u;
      continue;
    }
    const auto inv = hn::Set(df, inv_sum);
    if constexpr (kType == ScoreType::kF32) {
      for (std::size_t j = 0; j < c_vec; j += N) {
        hn::StoreU(hn::Mul(hn::LoadU(df, sc.vals + j), inv), df, sc.vals + j);
      }
      for (std::size_t j = 0; j < c; ++j) o[sc.keys[j]] = sc.vals[j];
    } else {
      for (std::size_t j = 0; j < c_vec; j += N) {
        StoreRow<kType>(df, hn::Mul(hn::LoadU(df, sc.vals + j), inv),
                        sc.packed + j);
      }
      for (std::size_t j = 0; j < c; ++j) o[sc.keys[j]] = sc.packed[j];
    }
  }
}

void KeyListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                        const MaskSpec& mask, const SoftmaxOptions& options,
                        RowRange rows, const detail::KeyListScratch& scratch) {
  switch (in.type) {
    case ScoreType::kF32:
      return KeyListRowsOf<ScoreType::kF32>(in, out, mask, options, rows,
                                            scratch);
    case ScoreType::kBF16:
      return KeyListRowsOf<ScoreType::kBF16>(in, out, mask, options, rows,
                                             scratch);
    case ScoreType::kF16:
      return KeyListRowsOf<ScoreType::kF16>(in, out, mask, options, rows,
                                            scratch);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
