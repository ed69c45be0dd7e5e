// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_attn_mask._core: the C++ API (include/rlx/) on NumPy arrays and torch
// tensors, in place on the caller's memory. Every array argument is borrowed
// (bindings/python/src/arrays.h) and checked before the call; the kernels run
// with the GIL released.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings/python/src/arrays.h"
#include "bindings/python/src/mask.h"
#include "rlx/attn_mask.h"
#include "rlx/block_mask.h"
#include "rlx/bucket_ladder.h"
#include "rlx/score_kernels.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
#include "rlx/targets.h"

namespace rlx::python {
namespace {

using namespace pybind11::literals;  // NOLINT: "name"_a

using Rows = std::optional<std::pair<std::size_t, std::size_t>>;

RowRange RowsOf(const Rows& rows, const Shape4& shape) {
  return rows ? RowRange{rows->first, rows->second} : RowRange::all(shape);
}

Mask MaskOf(const MaskSpec& spec) {
  Mask m;
  m.spec = spec;
  return m;
}

const Mask& MaskOr(const std::optional<Mask>& mask) {
  static const Mask kNone;
  return mask ? *mask : kNone;
}

// The softmax keywords, borrowed and checked against scores of `shape`.
struct Options {
  SoftmaxOptions options;
  ArrayPtr sink_logits, alibi_slopes, row_lse;
};

Options OptionsOf(const char* who, const Shape4& shape, float scale,
                  float softcap, const py::object& sink_logits,
                  const py::object& alibi_slopes, const py::object& row_lse,
                  bool zero_masked) {
  Options o;
  o.options.scale = scale;
  o.options.softcap = softcap;
  o.options.zero_masked = zero_masked;
  if (!sink_logits.is_none()) {
    o.sink_logits = Array::From(sink_logits, who, "sink_logits");
    CheckVector(*o.sink_logits, who, "sink_logits", DType::kF32, shape.heads,
                false);
    o.options.sink_logits = static_cast<const float*>(o.sink_logits->data());
  }
  if (!alibi_slopes.is_none()) {
    o.alibi_slopes = Array::From(alibi_slopes, who, "alibi_slopes");
    CheckVector(*o.alibi_slopes, who, "alibi_slopes", DType::kF32, shape.heads,
                false);
    o.options.alibi_slopes = static_cast<const float*>(o.alibi_slopes->data());
  }
  if (!row_lse.is_none()) {
    o.row_lse = Array::From(row_lse, who, "row_lse");
    CheckVector(*o.row_lse, who, "row_lse", DType::kF32, shape.rows(), true);
    o.options.row_lse = static_cast<float*>(o.row_lse->data());
  }
  return o;
}

// The softmax from src into out; errors name the Python function `kWho`
// and its argument `src_name`.
py::object SoftmaxInto(const char* kWho, const char* src_name,
                       const py::object& src, const py::object& out,
                       const std::optional<Mask>& mask, float scale,
                       float softcap, const py::object& sink_logits,
                       const py::object& alibi_slopes,
                       const py::object& row_lse, bool zero_masked,
                       const Rows& rows) {
  const ArrayPtr in_array = Array::From(src, kWho, src_name);
  const ScoreView in = ScoreViewOf(*in_array, kWho, src_name, false);
  const ArrayPtr out_array = Array::From(out, kWho, "out");
  const ScoreView out_view = ScoreViewOf(*out_array, kWho, "out", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, in.shape);
  const Options o = OptionsOf(kWho, in.shape, scale, softcap, sink_logits,
                              alibi_slopes, row_lse, zero_masked);
  const RowRange range = RowsOf(rows, in.shape);
  {
    py::gil_scoped_release release;
    masked_softmax(in, out_view, spec, o.options, range);
  }
  return out;
}

py::object MaskedSoftmaxInto(const py::object& src, const py::object& out,
                             const std::optional<Mask>& mask, float scale,
                             float softcap, const py::object& sink_logits,
                             const py::object& alibi_slopes,
                             const py::object& row_lse, bool zero_masked,
                             const Rows& rows) {
  return SoftmaxInto("masked_softmax_into", "src", src, out, mask, scale,
                     softcap, sink_logits, alibi_slopes, row_lse, zero_masked,
                     rows);
}

// In place, or into `out` when given (C++'s masked_softmax(in, out, ...)).
py::object MaskedSoftmax(const py::object& scores,
                         const std::optional<Mask>& mask, const py::object& out,
                         float scale, float softcap,
                         const py::object& sink_logits,
                         const py::object& alibi_slopes,
                         const py::object& row_lse, bool zero_masked,
                         const Rows& rows) {
  constexpr const char* kWho = "masked_softmax";
  if (!out.is_none()) {
    return SoftmaxInto(kWho, "scores", scores, out, mask, scale, softcap,
                       sink_logits, alibi_slopes, row_lse, zero_masked, rows);
  }
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, view.shape);
  const Options o = OptionsOf(kWho, view.shape, scale, softcap, sink_logits,
                              alibi_slopes, row_lse, zero_masked);
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    masked_softmax(view, spec, o.options, range);
  }
  return scores;
}

py::object ApplyMask(const py::object& scores, const Mask& mask, float fill,
                     const Rows& rows) {
  constexpr const char* kWho = "apply_mask";
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = mask.Bind(kWho, view.shape);
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    apply_mask(view, spec, range, fill);
  }
  return scores;
}

py::list KeptKeysOf(const Mask& mask, std::size_t batch_index, std::size_t q,
                    std::size_t q_len, std::size_t k_len) {
  constexpr const char* kWho = "kept_keys";
  const MaskSpec spec =
      mask.Bind(kWho, Shape4{batch_index + 1, 1, q_len, k_len}, &batch_index);
  const KeptKeys kept = kept_keys(spec, batch_index, q, q_len, k_len);
  py::list out;
  for (std::size_t i = 0; i < kept.count; ++i) {
    out.append(py::make_tuple(kept.intervals[i].begin, kept.intervals[i].end));
  }
  return out;
}

struct BlockMask {
  std::size_t q_blocks = 0, k_blocks = 0;
  py::array_t<std::uint32_t> kv_num_blocks, kv_indices, full_kv_num_blocks,
      full_kv_indices;
};

Shape4 Shape4Of(const std::vector<std::size_t>& shape, const char* who) {
  if (shape.size() != 4) {
    ThrowValue(std::string(who) +
               ": shape must be (batch, heads, q_len, k_len), got " +
               std::to_string(shape.size()) + " extents");
  }
  return {shape[0], shape[1], shape[2], shape[3]};
}

BlockMask ClassifyBlocks(const Mask& mask,
                         const std::vector<std::size_t>& shape_list,
                         std::size_t batch_index, std::size_t head,
                         std::size_t tq, std::size_t tk) {
  constexpr const char* kWho = "classify_blocks";
  const Shape4 shape = Shape4Of(shape_list, kWho);
  const MaskSpec spec = mask.Bind(kWho, shape);
  BlockMask b;
  b.q_blocks = tq == 0 ? 0 : shape.q_len / tq + (shape.q_len % tq != 0);
  b.k_blocks = tk == 0 ? 0 : shape.k_len / tk + (shape.k_len % tk != 0);
  const auto q = static_cast<py::ssize_t>(b.q_blocks);
  const auto k = static_cast<py::ssize_t>(b.k_blocks);
  b.kv_num_blocks = py::array_t<std::uint32_t>(q);
  b.full_kv_num_blocks = py::array_t<std::uint32_t>(q);
  b.kv_indices = py::array_t<std::uint32_t>({q, k});
  b.full_kv_indices = py::array_t<std::uint32_t>({q, k});
  BlockMaskView view{b.q_blocks,
                     b.k_blocks,
                     b.kv_num_blocks.mutable_data(),
                     b.kv_indices.mutable_data(),
                     b.full_kv_num_blocks.mutable_data(),
                     b.full_kv_indices.mutable_data()};
  {
    py::gil_scoped_release release;
    classify_blocks(spec, shape, batch_index, head, tq, tk, view);
  }
  return b;
}

void MergeSoftmaxParts(const py::sequence& parts, const py::object& merged_lse,
                       const py::object& sink_logits) {
  constexpr const char* kWho = "merge_softmax_parts";
  std::vector<ArrayPtr> held;
  std::vector<SoftmaxPart> views;
  for (const py::handle part : parts) {
    const auto pair = py::reinterpret_borrow<py::sequence>(part);
    if (!py::isinstance<py::sequence>(part) || py::len(pair) != 2) {
      throw py::type_error(std::string(kWho) +
                           ": each part must be a (probs, row_lse) pair");
    }
    ArrayPtr probs = Array::From(pair[0], kWho, "probs");
    const ScoreView view = ScoreViewOf(*probs, kWho, "probs", true);
    ArrayPtr lse = Array::From(pair[1], kWho, "row_lse");
    CheckVector(*lse, kWho, "row_lse", DType::kF32, view.shape.rows(), false);
    views.push_back({view, static_cast<const float*>(lse->data())});
    held.push_back(std::move(probs));
    held.push_back(std::move(lse));
  }
  float* merged = nullptr;
  const float* sinks = nullptr;
  if (!views.empty()) {
    const Shape4& shape = views[0].probs.shape;
    if (!merged_lse.is_none()) {
      ArrayPtr m = Array::From(merged_lse, kWho, "merged_lse");
      CheckVector(*m, kWho, "merged_lse", DType::kF32, shape.rows(), true);
      merged = static_cast<float*>(m->data());
      held.push_back(std::move(m));
    }
    if (!sink_logits.is_none()) {
      ArrayPtr s = Array::From(sink_logits, kWho, "sink_logits");
      CheckVector(*s, kWho, "sink_logits", DType::kF32, shape.heads, false);
      sinks = static_cast<const float*>(s->data());
      held.push_back(std::move(s));
    }
  }
  py::gil_scoped_release release;
  merge_softmax_parts(std::span<const SoftmaxPart>(views), merged, sinks);
}

// Split rows finished in place ------------------------------------------------

using Keys = std::pair<std::size_t, std::size_t>;

// A stats array is float64, C-contiguous, (log_scale, sum) per row: e.g.
// np.empty((batch * heads * q_len, 2)), read and written in place.
static_assert(sizeof(SoftmaxPartStats) == 2 * sizeof(double) &&
              offsetof(SoftmaxPartStats, log_scale) == 0 &&
              offsetof(SoftmaxPartStats, sum) == sizeof(double));

SoftmaxPartStats* StatsOf(const Array& a, const char* who,
                          const std::string& name, const Shape4& shape,
                          bool writable) {
  CheckVector(a, who, name.c_str(), DType::kF64, 2 * shape.rows(), writable);
  if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(SoftmaxPartStats) !=
      0) {
    ThrowValue(std::string(who) + ": " + name +
               " is not aligned to its float64 elements");
  }
  return static_cast<SoftmaxPartStats*>(a.data());
}

py::tuple SplitKeptKeys(const std::vector<Keys>& kept, std::size_t k_len,
                        std::size_t part, std::size_t parts,
                        double masked_key_cost) {
  constexpr const char* kWho = "split_kept_keys";
  if (kept.size() > KeptKeys::kMaxIntervals) {
    ThrowValue(std::string(kWho) + ": kept has " + std::to_string(kept.size()) +
               " intervals, at most " +
               std::to_string(KeptKeys::kMaxIntervals) +
               " (as kept_keys gives them)");
  }
  KeptKeys k;
  k.count = kept.size();
  for (std::size_t i = 0; i < kept.size(); ++i) {
    k.intervals[i] = {kept[i].first, kept[i].second};
  }
  const KeyRange range =
      split_kept_keys(k, k_len, part, parts, masked_key_cost);
  return py::make_tuple(range.begin, range.end);
}

py::object MaskedSoftmaxPart(const py::object& scores,
                             const std::optional<Mask>& mask, const Keys& keys,
                             const py::object& stats, float scale,
                             float softcap, const py::object& sink_logits,
                             const py::object& alibi_slopes, bool zero_masked,
                             const Rows& rows) {
  constexpr const char* kWho = "masked_softmax_part";
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, view.shape);
  const Options o = OptionsOf(kWho, view.shape, scale, softcap, sink_logits,
                              alibi_slopes, py::none(), zero_masked);
  const ArrayPtr s = Array::From(stats, kWho, "stats");
  SoftmaxPartStats* out = StatsOf(*s, kWho, "stats", view.shape, true);
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    masked_softmax_part(view, spec, KeyRange{keys.first, keys.second}, out,
                        o.options, range);
  }
  return scores;
}

py::object FinishSoftmaxPart(
    const py::object& scores, const std::optional<Mask>& mask, const Keys& keys,
    const py::sequence& parts, std::size_t part, float scale, float softcap,
    const py::object& sink_logits, const py::object& alibi_slopes,
    const py::object& row_lse, bool zero_masked, const Rows& rows) {
  constexpr const char* kWho = "finish_softmax_part";
  const ArrayPtr a = Array::From(scores, kWho, "scores");
  const ScoreView view = ScoreViewOf(*a, kWho, "scores", true);
  const MaskSpec spec = MaskOr(mask).Bind(kWho, view.shape);
  const Options o = OptionsOf(kWho, view.shape, scale, softcap, sink_logits,
                              alibi_slopes, row_lse, zero_masked);
  std::vector<ArrayPtr> held;
  std::vector<const SoftmaxPartStats*> stats;
  for (const py::handle p : parts) {
    const std::string name = "parts[" + std::to_string(stats.size()) + "]";
    ArrayPtr s = Array::From(p, kWho, name.c_str());
    stats.push_back(StatsOf(*s, kWho, name, view.shape, false));
    held.push_back(std::move(s));
  }
  const RowRange range = RowsOf(rows, view.shape);
  {
    py::gil_scoped_release release;
    finish_softmax_part(view, spec, KeyRange{keys.first, keys.second},
                        std::span<const SoftmaxPartStats* const>(stats), part,
                        o.options, range);
  }
  return scores;
}

py::array_t<float> ToArray(const std::vector<float>& v) {
  py::array_t<float> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

void FillBucketDecodeMask(const py::object& out, std::size_t past_seq,
                          std::size_t upper, std::size_t window) {
  constexpr const char* kWho = "fill_bucket_decode_mask";
  const ArrayPtr a = Array::From(out, kWho, "out");
  if (a->dtype() != DType::kF32) {
    ThrowDType(std::string(kWho) + ": out must be float32, got " +
               DTypeName(a->dtype()));
  }
  if (a->ndim() != 1 || !a->c_contiguous() || a->readonly()) {
    ThrowValue(std::string(kWho) +
               ": out must be a writable contiguous 1-D array, got shape " +
               ShapeString(*a));
  }
  std::span<float> span(static_cast<float*>(a->data()), a->size());
  py::gil_scoped_release release;
  fill_bucket_decode_mask(span, past_seq, upper, window);
}

// Ladders --------------------------------------------------------------------

std::vector<Bucket> BucketsOf(const py::iterable& buckets) {
  std::vector<Bucket> out;
  for (const py::handle b : buckets) {
    if (py::isinstance<Bucket>(b)) {
      out.push_back(b.cast<Bucket>());
    } else {
      const auto pair = b.cast<std::pair<std::uint64_t, std::uint64_t>>();
      out.push_back({pair.first, pair.second});
    }
  }
  return out;
}

LadderCost CostOf(const py::object& cost) {
  if (py::isinstance<py::str>(cost)) {
    const std::string name = cost.cast<std::string>();
    if (name == "decode") return ladder_cost::decode;
    if (name == "prefill") return ladder_cost::prefill;
    ThrowValue(
        "BucketLadder.fit: cost must be \"decode\", \"prefill\" or a "
        "callable, got \"" +
        name + "\"");
  }
  if (!PyCallable_Check(cost.ptr())) {
    throw py::type_error(
        "BucketLadder.fit: cost must be \"decode\", \"prefill\" or a callable");
  }
  // Called by fit with the GIL held (fit does not release it).
  return [cost](std::uint64_t upper) { return cost(upper).cast<double>(); };
}

BucketLadder Fit(const py::object& lengths, std::size_t max_buckets,
                 const py::object& cost_arg) {
  const LadderCost cost = CostOf(cost_arg);
  if (py::isinstance<py::dict>(lengths)) {
    std::vector<LengthCount> counts;
    for (const auto item : lengths.cast<py::dict>()) {
      counts.push_back({item.first.cast<std::uint64_t>(),
                        item.second.cast<std::uint64_t>()});
    }
    return BucketLadder::fit(std::span<const LengthCount>(counts), max_buckets,
                             cost);
  }
  if (PyObject_CheckBuffer(lengths.ptr())) {
    // A 1-D integer array: read in place.
    const ArrayPtr a = Array::From(lengths, "BucketLadder.fit", "lengths");
    if ((a->dtype() == DType::kU64 || a->dtype() == DType::kI64) &&
        a->ndim() == 1 && a->c_contiguous()) {
      const auto* data = static_cast<const std::uint64_t*>(a->data());
      if (a->dtype() == DType::kI64) {
        for (std::size_t i = 0; i < a->size(); ++i) {
          if (static_cast<std::int64_t>(data[i]) < 0) {
            ThrowValue("BucketLadder.fit: lengths[" + std::to_string(i) +
                       "] is negative");
          }
        }
      }
      return BucketLadder::fit(std::span<const std::uint64_t>(data, a->size()),
                               max_buckets, cost);
    }
  }
  std::vector<std::uint64_t> plain;
  std::vector<LengthCount> counts;
  for (const py::handle item : lengths.cast<py::iterable>()) {
    if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
      const auto pair = item.cast<std::pair<std::uint64_t, std::uint64_t>>();
      counts.push_back({pair.first, pair.second});
    } else {
      plain.push_back(item.cast<std::uint64_t>());
    }
  }
  if (!plain.empty() && !counts.empty()) {
    throw py::type_error(
        "BucketLadder.fit: lengths mixes plain lengths and (length, count) "
        "pairs");
  }
  if (!counts.empty()) {
    return BucketLadder::fit(std::span<const LengthCount>(counts), max_buckets,
                             cost);
  }
  return BucketLadder::fit(std::span<const std::uint64_t>(plain), max_buckets,
                           cost);
}

std::string BucketRepr(const Bucket& b) {
  return "Bucket(" + std::to_string(b.start) + ", " + std::to_string(b.end) +
         ")";
}

// Module ---------------------------------------------------------------------

void DefineMask(py::module_& m) {
  using DenseArg = Mask::DenseArg;
  py::class_<Mask>(m, "MaskSpec",
                   "How scores are masked (rlx::MaskSpec). Builders are "
                   "static methods; with_* return a modified copy. A mask "
                   "keeps every array it refers to alive and reads it in "
                   "place at each call.")
      .def(py::init<>())
      .def_static("none", [] { return Mask(); })
      .def_static("causal", [] { return MaskOf(MaskSpec::causal()); })
      .def_static(
          "sliding_window",
          [](std::size_t w) { return MaskOf(MaskSpec::sliding_window(w)); },
          "window"_a)
      .def_static(
          "decode",
          [](std::size_t past, std::size_t upper, std::size_t window) {
            return MaskOf(MaskSpec::decode(past, upper, window));
          },
          "past"_a, "upper"_a, "window"_a = 0)
      .def_static(
          "keep",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kKeep); },
          "m"_a)
      .def_static(
          "bias",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kBias); },
          "b"_a)
      .def_static(
          "keep_bits",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kBits); },
          "words"_a)
      .def("with_query_offsets", &Mask::WithQueryOffsets, "offsets"_a)
      .def(
          "with_window_keys",
          [](const Mask& self, std::size_t W) {
            Mask c = self;
            c.spec = self.spec.with_window_keys(W);
            return c;
          },
          "W"_a)
      .def(
          "with_chunk",
          [](const Mask& self, std::size_t C) {
            Mask c = self;
            c.spec = self.spec.with_chunk(C);
            return c;
          },
          "C"_a)
      .def(
          "with_sink_keys",
          [](const Mask& self, std::size_t S) {
            Mask c = self;
            c.spec = self.spec.with_sink_keys(S);
            return c;
          },
          "S"_a)
      .def("with_prefix", &Mask::WithPrefix, "prefix_end"_a)
      .def("with_segments", &Mask::WithSegments, "q_segments"_a, "k_segments"_a)
      .def("with_positions", &Mask::WithPositions, "q_positions"_a,
           "k_positions"_a)
      .def(
          "with_keep",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kKeep);
          },
          "m"_a)
      .def(
          "with_bias",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kBias);
          },
          "b"_a)
      .def(
          "with_keep_bits",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kBits);
          },
          "words"_a)
      .def_property_readonly("window",
                             [](const Mask& self) { return self.spec.window; })
      .def_property_readonly("past",
                             [](const Mask& self) { return self.spec.past; })
      .def_property_readonly("upper",
                             [](const Mask& self) { return self.spec.upper; })
      .def_property_readonly(
          "window_keys", [](const Mask& self) { return self.spec.window_keys; })
      .def_property_readonly("chunk",
                             [](const Mask& self) { return self.spec.chunk; })
      .def_property_readonly(
          "sink_keys", [](const Mask& self) { return self.spec.sink_keys; })
      .def("__repr__", &Mask::Repr);
}

void DefineLadders(py::module_& m) {
  py::class_<Bucket>(m, "Bucket", "A half-open range of keys [start, end).")
      .def(py::init([](std::uint64_t start, std::uint64_t end) {
             return Bucket{start, end};
           }),
           "start"_a, "end"_a)
      .def_readonly("start", &Bucket::start)
      .def_readonly("end", &Bucket::end)
      .def("upper", &Bucket::upper, "The compile extent: end - 1.")
      .def("__eq__", [](const Bucket& a, const Bucket& b) { return a == b; })
      .def("__hash__",
           [](const Bucket& b) {
             return py::hash(py::make_tuple(b.start, b.end));
           })
      .def("__repr__", &BucketRepr);

  auto custom = [](const py::iterable& buckets) {
    return BucketLadder(BucketsOf(buckets));
  };
  py::class_<BucketLadder>(m, "BucketLadder",
                           "An ordered list of non-overlapping buckets "
                           "(rlx::BucketLadder).")
      .def(py::init(custom), "buckets"_a)
      .def_static("custom", custom, "buckets"_a,
                  "The ladder of the given buckets, (start, end) pairs or "
                  "Bucket objects.")
      .def_static("power_of_two", &BucketLadder::power_of_two, "min"_a, "max"_a)
      .def_static("geometric", &BucketLadder::geometric, "max"_a, "count"_a)
      .def_static("fit", &Fit, "lengths"_a, "max_buckets"_a,
                  "cost"_a = "decode",
                  "The cheapest ladder of at most max_buckets buckets for the "
                  "observed lengths (a sequence or 1-D uint64/int64 array of "
                  "lengths, (length, count) pairs, or a {length: count} "
                  "dict); cost is \"decode\", \"prefill\" or a callable "
                  "cost(upper) -> float.")
      .def_static("capped", &BucketLadder::capped, "max_key"_a, "max_padding"_a)
      .def_readonly_static("MAX_CAPPED_BUCKETS",
                           &BucketLadder::kMaxCappedBuckets)
      .def_static("least_max_padding", &BucketLadder::least_max_padding,
                  "max_key"_a, "max_buckets"_a)
      .def("bucket_for", &BucketLadder::bucket_for, "key"_a)
      .def("buckets",
           [](const BucketLadder& l) {
             return std::vector<Bucket>(l.buckets().begin(), l.buckets().end());
           })
      .def("size", &BucketLadder::size)
      .def("__len__", &BucketLadder::size)
      .def("__getitem__",
           [](const BucketLadder& l, std::ptrdiff_t i) {
             const auto n = static_cast<std::ptrdiff_t>(l.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("bucket index");
             return l[static_cast<std::size_t>(i)];
           })
      .def("__eq__",
           [](const BucketLadder& a, const BucketLadder& b) {
             return std::equal(a.buckets().begin(), a.buckets().end(),
                               b.buckets().begin(), b.buckets().end());
           })
      .def("__repr__", [](const BucketLadder& l) {
        std::string r = "BucketLadder([";
        for (std::size_t i = 0; i < l.size(); ++i) {
          r += (i ? ", " : "") + BucketRepr(l[i]);
        }
        return r + "])";
      });
  py::module_ cost = m.def_submodule("ladder_cost", "Built-in ladder costs.");
  cost.def("decode", &ladder_cost::decode, "upper"_a);
  cost.def("prefill", &ladder_cost::prefill, "upper"_a);
}

void DefineModule(py::module_& m) {
  m.doc() =
      "rlx-attn-mask: SIMD attention-mask kernels, in place on NumPy "
      "arrays and torch tensors";

  PyObject* bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_TypeError);
  PyObject* dtype_error =
      PyErr_NewException("rlx_attn_mask.DTypeError", bases, nullptr);
  Py_DECREF(bases);
  if (dtype_error == nullptr) throw py::error_already_set();
  SetDTypeErrorType(dtype_error);  // the module's reference keeps it
  m.attr("DTypeError") = py::reinterpret_steal<py::object>(dtype_error);

  DefineMask(m);

  const float neg_inf = -std::numeric_limits<float>::infinity();
  m.def("masked_softmax", &MaskedSoftmax, "scores"_a, "mask"_a = py::none(),
        py::kw_only(), "out"_a = py::none(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "row_lse"_a = py::none(),
        "zero_masked"_a = true, "rows"_a = py::none(),
        "p = softmax(mask(softcap(scale * s))) per row, in place; returns "
        "scores. With out=, from scores into out instead (same shape and "
        "dtype; may be the same memory) and returns out. rows=(begin, end) "
        "over batch * heads * q_len.");
  m.def("masked_softmax_into", &MaskedSoftmaxInto, "src"_a, "out"_a,
        "mask"_a = py::none(), py::kw_only(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "row_lse"_a = py::none(),
        "zero_masked"_a = true, "rows"_a = py::none(),
        "masked_softmax(src, mask, out=out) under the C API's name: from "
        "src into out (same shape and dtype; may be the same memory); "
        "returns out.");
  m.def("apply_mask", &ApplyMask, "scores"_a, "mask"_a, py::kw_only(),
        "fill"_a = neg_inf, "rows"_a = py::none(),
        "Masked scores become fill (a bias is added instead), in place; "
        "returns scores.");
  m.def("kept_keys", &KeptKeysOf, "mask"_a, "batch_index"_a, "q"_a, "q_len"_a,
        "k_len"_a,
        "The keys row (batch_index, q) may attend to: a list of at most "
        "three (begin, end) intervals.");

  py::class_<BlockMask>(m, "BlockMask",
                        "Empty, full and partial tiles of one (batch, head) "
                        "in FlexAttention's compact form.")
      .def_readonly("q_blocks", &BlockMask::q_blocks)
      .def_readonly("k_blocks", &BlockMask::k_blocks)
      .def_readonly("kv_num_blocks", &BlockMask::kv_num_blocks)
      .def_readonly("kv_indices", &BlockMask::kv_indices)
      .def_readonly("full_kv_num_blocks", &BlockMask::full_kv_num_blocks)
      .def_readonly("full_kv_indices", &BlockMask::full_kv_indices)
      .def(
          "partial",
          [](const BlockMask& b, std::size_t qb) {
            if (qb >= b.q_blocks) throw py::index_error("query block");
            const auto n = b.kv_num_blocks.at(qb);
            std::vector<std::uint32_t> out(n);
            for (std::uint32_t i = 0; i < n; ++i)
              out[i] = b.kv_indices.at(qb, i);
            return out;
          },
          "qb"_a)
      .def(
          "full",
          [](const BlockMask& b, std::size_t qb) {
            if (qb >= b.q_blocks) throw py::index_error("query block");
            const auto n = b.full_kv_num_blocks.at(qb);
            std::vector<std::uint32_t> out(n);
            for (std::uint32_t i = 0; i < n; ++i) {
              out[i] = b.full_kv_indices.at(qb, i);
            }
            return out;
          },
          "qb"_a);
  m.def("classify_blocks", &ClassifyBlocks, "mask"_a, "shape"_a,
        "batch_index"_a, "head"_a, "tq"_a, "tk"_a,
        "Classifies the [tq x tk] tiles of (batch_index, head) of scores of "
        "shape (batch, heads, q_len, k_len); returns a BlockMask.");
  m.def("merge_softmax_parts", &MergeSoftmaxParts, "parts"_a,
        "merged_lse"_a = py::none(), "sink_logits"_a = py::none(),
        "Rescales in place the parts [(probs, row_lse), ...] of rows whose "
        "keys were split, so that together they are one softmax per row.");
  m.def("split_kept_keys", &SplitKeptKeys, "kept"_a, "k_len"_a, "part"_a,
        "parts"_a, "masked_key_cost"_a = kMaskedKeyFillCost,
        "Part `part` of a balanced split of a row into `parts` key ranges of "
        "equal cost (a kept key 1, a masked one masked_key_cost: the zero "
        "fill's, 0 for kept-only writes), from the row's kept_keys list: a "
        "(begin, end) tuple.");
  m.attr("MASKED_KEY_FILL_COST") = kMaskedKeyFillCost;
  m.def("masked_softmax_part", &MaskedSoftmaxPart, "scores"_a, "mask"_a,
        "keys"_a, "stats"_a, py::kw_only(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "zero_masked"_a = true,
        "rows"_a = py::none(),
        "Step 1 of a row split over threads, for keys=(begin, end) of every "
        "row: the part's exps in place and its statistics into stats "
        "(float64, (log_scale, sum) per row, e.g. np.empty((rows, 2))). The "
        "mask and options are the whole row's (sink_logits is used by step 2 "
        "only); returns scores.");
  m.def("finish_softmax_part", &FinishSoftmaxPart, "scores"_a, "mask"_a,
        "keys"_a, "parts"_a, "part"_a, py::kw_only(), "scale"_a = 1.0f,
        "softcap"_a = 0.0f, "sink_logits"_a = py::none(),
        "alibi_slopes"_a = py::none(), "row_lse"_a = py::none(),
        "zero_masked"_a = true, "rows"_a = py::none(),
        "Step 2, once every part's step 1 is done: the row's log-sum-exp from "
        "every part's stats (parts, in the same order for every part) into "
        "row_lse (give it to one part only), and part `part`'s keys scaled "
        "into probabilities in place; returns scores.");
  m.def(
      "alibi_slopes",
      [](std::size_t heads, float max_bias) {
        return ToArray(alibi_slopes(heads, max_bias));
      },
      "heads"_a, "max_bias"_a = 8.0f, "ggml's ALiBi slopes, float32 [heads].");

  m.def(
      "bucket_decode_mask",
      [](std::size_t past_seq, std::size_t upper) {
        return ToArray(bucket_decode_mask(past_seq, upper));
      },
      "past_seq"_a, "upper"_a);
  m.def(
      "bucket_decode_mask_windowed",
      [](std::size_t past_seq, std::size_t upper, std::size_t window) {
        return ToArray(bucket_decode_mask_windowed(past_seq, upper, window));
      },
      "past_seq"_a, "upper"_a, "window"_a);
  m.def("fill_bucket_decode_mask", &FillBucketDecodeMask, "out"_a, "past_seq"_a,
        "upper"_a, "window"_a = 0);

  m.def("compiled_targets", &compiled_targets);
  m.def("supported_targets", &supported_targets);
  m.def("active_target", &active_target);
  m.def("dispatched_target", &dispatched_target);
  m.def(
      "force_target", [](const std::string& name) { force_target(name); },
      "name"_a);

  DefineLadders(m);
}

}  // namespace
}  // namespace rlx::python

PYBIND11_MODULE(_core, m) { rlx::python::DefineModule(m); }
