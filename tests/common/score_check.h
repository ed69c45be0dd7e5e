// SPDX-License-Identifier: MIT OR Apache-2.0
// Score tensors with sentinel-filled gaps, and the comparison of kernel
// results with the oracle: shared by the tests and the fuzzer (tests/fuzz/),
// so both hold the kernels to the same bound. No
// GoogleTest here: checks return a description of the first mismatch, or "".
//
// The softmax bound (docs/KERNELS.md): each kept probability p of a row with
// largest transformed |score| T is within p_ref * (2^-22 (2 + 2T) + u) +
// floor of the double-precision oracle, where u is the output type's
// rounding (0 for f32, 2^-7 for bf16, 2^-10 for f16) and floor covers the
// flush below FLT_MIN (2e-38; f16 subnormals 2^-24). Masked keys are exactly
// +0; kept f32 rows sum to 1 within 1e-6; NaN rows stay NaN.
#ifndef RLX_TESTS_COMMON_SCORE_CHECK_H_
#define RLX_TESTS_COMMON_SCORE_CHECK_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "rlx/score_kernels.h"
#include "src/util/half_codec.h"
#include "tests/reference/reference.h"

namespace rlx::testing {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

inline std::size_t ElemSize(ScoreType t) {
  return t == ScoreType::kF32 ? 4 : 2;
}

inline const char* TypeName(ScoreType t) {
  return t == ScoreType::kF32 ? "f32" : t == ScoreType::kBF16 ? "bf16" : "f16";
}

// Every byte outside the elements of a view: f32 0x7F7F7F7F (3.4e38),
// 16-bit 0x7F7F (a NaN in bf16 and f16).
constexpr std::uint8_t kSentinel = 0x7F;

// A score tensor in a byte buffer: `misalign` elements past a 64-byte
// aligned start, rows `gap` elements apart beyond k_len, heads and batches
// with a gap of their own.
struct Tensor {
  std::vector<std::uint8_t> bytes;
  ScoreView view;
};

inline Tensor MakeTensor(ScoreType type, const Shape4& shape, std::size_t gap,
                         std::size_t misalign) {
  Strides3 st;
  st.row = shape.k_len + gap;
  st.head = st.row * shape.q_len + gap;
  st.batch = st.head * shape.heads + gap;
  const std::size_t elems = misalign + st.batch * shape.batch + gap;
  Tensor t;
  t.bytes.assign(elems * ElemSize(type) + 64, kSentinel);
  std::uint8_t* base = t.bytes.data();
  base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64;
  t.view = {base + misalign * ElemSize(type), type, shape, st};
  return t;
}

// The same view over a copy of the tensor's bytes.
inline ScoreView SameViewIn(const Tensor& t, std::vector<std::uint8_t>& copy) {
  copy = t.bytes;
  ScoreView v = t.view;
  v.data = copy.data() +
           (static_cast<const std::uint8_t*>(t.view.data) - t.bytes.data());
  return v;
}

inline std::size_t Offset(const ScoreView& v, std::size_t b, std::size_t h,
                          std::size_t q, std::size_t k) {
  return b * v.strides.batch + h * v.strides.head + q * v.strides.row + k;
}

inline double Get(const ScoreView& v, std::size_t off) {
  return reference::element_at(v, off);
}

// Sets element `off` to x rounded to the row type (nearest even), where a
// finite x stays finite: a magnitude that would round to infinity becomes
// the type's largest finite value. NaN and infinities are kept.
inline void Set(const ScoreView& v, std::size_t off, float x) {
  if (v.type == ScoreType::kF32) {
    static_cast<float*>(v.data)[off] = x;
    return;
  }
  const bool bf16 = v.type == ScoreType::kBF16;
  std::uint16_t bits = bf16 ? rlx_bf16_from_f32(x) : rlx_f16_from_f32(x);
  const std::uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  if (std::isfinite(x) && (bits & 0x7FFF) == inf) --bits;  // largest finite
  static_cast<std::uint16_t*>(v.data)[off] = bits;
}

inline std::string Num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

// Whether key k lies inside `kept` (what kept_keys reports for its row):
// kept-only writes (zero_masked = false) write exactly those keys.
inline bool Contains(const KeptKeys& kept, std::size_t k) {
  for (std::size_t i = 0; i < kept.count; ++i) {
    if (k >= kept.intervals[i].begin && k < kept.intervals[i].end) return true;
  }
  return false;
}

// Compares a masked softmax result `got` with the oracle's `want`, both
// computed from `before`, under the bound above, where T, the largest
// transformed |score|, also counts the ALiBi term, the bias and the sink:
// each shifts the exp argument. Masked keys: +0, except that with
// zero_masked = false those outside the row's kept_keys are not checked
// here (the caller checks that they were left alone); kept rows sum to at most
// 1 (exactly 1 within 1e-6 without a sink). `lse` / `lse_want`: the row_lse
// outputs, compared within the same bound plus their f32 rounding.
inline std::string SoftmaxMismatch(const ScoreView& before,
                                   const ScoreView& got, const ScoreView& want,
                                   const MaskSpec& mask,
                                   const SoftmaxOptions& options,
                                   const float* lse = nullptr,
                                   const float* lse_want = nullptr) {
  const Shape4& s = before.shape;
  const double type_rounding = got.type == ScoreType::kF32    ? 0.0
                               : got.type == ScoreType::kBF16 ? 0x1p-7
                                                              : 0x1p-10;
  const double floor = got.type == ScoreType::kF16 ? 0x1p-24 : 2e-38;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q) {
        const std::size_t r = (b * s.heads + h) * s.q_len + q;
        // Described only on a mismatch: formatting per key dominated the
        // fuzzer's time.
        const auto row = [&] {
          return "row (" + std::to_string(b) + "," + std::to_string(h) + "," +
                 std::to_string(q) + ")";
        };
        // The largest transformed kept |score| (with its ALiBi and bias
        // terms) bounds the f32 rounding of the exp argument t - max.
        double t_max = 0.0, sum = 0.0;
        bool any_kept = false;
        const KeptKeys written = kept_keys(mask, b, q, s.q_len, s.k_len);
        for (std::size_t k = 0; k < s.k_len; ++k) {
          if (!reference::is_kept(mask, s, b, h, q, k)) continue;
          any_kept = true;
          double t = Get(before, Offset(before, b, h, q, k)) * options.scale;
          if (options.softcap > 0.0f) {
            t = options.softcap * std::tanh(t / options.softcap);
          }
          t = std::fabs(t) +
              std::fabs(reference::alibi_at(mask, s, options, b, h, q, k)) +
              std::fabs(reference::bias_at(mask, s, b, h, q, k));
          // Infinite scores give exact 0 (or NaN rows): no rounding to bound.
          if (std::isfinite(t)) t_max = std::max(t_max, t);
        }
        if (options.sink_logits != nullptr &&
            std::isfinite(options.sink_logits[h])) {
          t_max = std::max(t_max, std::fabs(options.sink_logits[h]) + t_max);
        }
        const double rel = 0x1p-22 * (2.0 + 2.0 * t_max) + type_rounding;
        bool row_nan = false;
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const double p = Get(got, Offset(got, b, h, q, k));
          const double p_ref = Get(want, Offset(want, b, h, q, k));
          const auto where = [&] {
            return row() + " key " + std::to_string(k) + ": got " + Num(p) +
                   ", oracle " + Num(p_ref);
          };
          if (!reference::is_kept(mask, s, b, h, q, k)) {
            // Kept-only writes: the keys inside kept_keys (with a key list
            // or a block list, the listed ones).
            if ((options.zero_masked ||
                 (Contains(written, k) &&
                  reference::is_listed(mask, b, h, q, k))) &&
                (p != 0.0 || std::signbit(p))) {
              return "masked " + where();
            }
            continue;
          }
          if (std::isnan(p_ref)) {
            if (!std::isnan(p)) return "NaN did not propagate to " + where();
            row_nan = true;
            continue;
          }
          if (!(std::fabs(p - p_ref) <= p_ref * rel + floor)) {
            return "out of bound at " + where();
          }
          sum += p;
        }
        if (any_kept && !row_nan && got.type == ScoreType::kF32) {
          const bool sinks =
              options.sink_logits != nullptr &&
              options.sink_logits[h] != -std::numeric_limits<float>::infinity();
          if (sinks ? !(sum <= 1.0 + 1e-6)
                    : (sum > 0 && !(std::fabs(sum - 1.0) <= 1e-6))) {
            return row() + " sums to " + Num(sum);
          }
        }
        if (lse != nullptr) {
          const double l = lse[r], l_ref = lse_want[r];
          const auto where = [&] {
            return row() + " lse: got " + Num(l) + ", oracle " + Num(l_ref);
          };
          if (std::isnan(l_ref) || std::isinf(l_ref)) {
            if (!(std::isnan(l) && std::isnan(l_ref)) && l != l_ref) {
              return where();
            }
          } else if (!(std::fabs(l - l_ref) <= 0x1p-22 * (2.0 + 2.0 * t_max) +
                                                   0x1p-23 * std::fabs(l_ref) +
                                                   1e-30)) {
            return where();
          }
        }
      }
  return "";
}

// Compares an apply_mask result with the oracle's, element by element:
// bit-exact, except that a Bias result that is NaN in both may differ in its
// payload (hardware conversions keep payloads, the oracle does not). Keep
// masks leave kept bits untouched, so they are compared bit for bit.
inline std::string ApplyMismatch(const ScoreView& got, const ScoreView& want,
                                 const MaskSpec& mask) {
  const Shape4& s = got.shape;
  const std::size_t es = ElemSize(got.type);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          const std::size_t off = Offset(got, b, h, q, k);
          const auto* g = static_cast<const std::uint8_t*>(got.data) + off * es;
          const auto* w =
              static_cast<const std::uint8_t*>(want.data) + off * es;
          if (std::memcmp(g, w, es) == 0) continue;
          if ((mask.kind == MaskKind::kBias ||
               mask.dense == DenseKind::kBias) &&
              std::isnan(Get(got, off)) && std::isnan(Get(want, off))) {
            continue;
          }
          return "element (" + std::to_string(b) + "," + std::to_string(h) +
                 "," + std::to_string(q) + "," + std::to_string(k) + "): got " +
                 Num(Get(got, off)) + ", oracle " + Num(Get(want, off));
        }
  return "";
}

// Kept-only writes (zero_masked = false): whether every key outside its
// row's kept_keys (or, with a key list, unlisted) still holds its bits in `got`
// as in `before` (the same view over another copy of the tensor).
inline std::string KeptOnlyUnwritten(const ScoreView& before,
                                     const ScoreView& got,
                                     const MaskSpec& mask) {
  const Shape4& s = got.shape;
  const std::size_t es = ElemSize(got.type);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t q = 0; q < s.q_len; ++q) {
      const KeptKeys written = kept_keys(mask, b, q, s.q_len, s.k_len);
      for (std::size_t h = 0; h < s.heads; ++h)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          // With a key list or a block list, only the row's listed keys
          // inside kept_keys.
          if (Contains(written, k) && reference::is_listed(mask, b, h, q, k)) {
            continue;
          }
          const std::size_t off = Offset(got, b, h, q, k);
          if (std::memcmp(
                  static_cast<const std::uint8_t*>(got.data) + off * es,
                  static_cast<const std::uint8_t*>(before.data) + off * es,
                  es) != 0) {
            return "key (" + std::to_string(b) + "," + std::to_string(h) + "," +
                   std::to_string(q) + "," + std::to_string(k) +
                   ") outside kept_keys was written: " + Num(Get(got, off)) +
                   ", was " + Num(Get(before, off));
          }
        }
    }
  return "";
}

// Whether every byte of `t` outside the elements of `view` (gaps, and the
// bytes before and after) still holds the sentinel.
inline std::string UntouchedOutside(const Tensor& t, const ScoreView& view) {
  const std::size_t es = ElemSize(view.type);
  const auto* base = static_cast<const std::uint8_t*>(view.data);
  const std::size_t head = base - t.bytes.data();
  for (std::size_t i = 0; i < head; ++i) {
    if (t.bytes[i] != kSentinel) return "wrote before the view";
  }
  std::vector<bool> is_element((t.bytes.size() - head) / es, false);
  const Shape4& s = view.shape;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k)
          is_element[Offset(view, b, h, q, k)] = true;
  for (std::size_t e = 0; e < is_element.size(); ++e) {
    if (is_element[e]) continue;
    for (std::size_t byte = 0; byte < es; ++byte) {
      if (base[e * es + byte] != kSentinel) {
        return "gap element " + std::to_string(e) + " was written";
      }
    }
  }
  return "";
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_COMMON_SCORE_CHECK_H_
