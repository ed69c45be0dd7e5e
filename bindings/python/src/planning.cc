// SPDX-License-Identifier: MIT OR Apache-2.0
// Planning work over a mask, and rows split over threads: kept_keys,
// classify_blocks (BlockMask), merge_softmax_parts, and the split rows
// finished in place (split_kept_keys, masked_softmax_part,
// finish_softmax_part).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings/python/src/arrays.h"
#include "bindings/python/src/mask.h"
#include "bindings/python/src/module.h"
#include "rlx/block_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"

namespace rlx::python {
namespace {

using namespace pybind11::literals;  // NOLINT: "name"_a

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

}  // namespace

void DefinePlanning(py::module_& m) {
  m.def("kept_keys", &KeptKeysOf, "mask"_a, "batch_index"_a, "q"_a, "q_len"_a,
        "k_len"_a,
        "The keys row (batch_index, q) may attend to: a list of at most "
        "three (begin, end) intervals.");

  py::class_<BlockMask>(m, "BlockMask",
                        "Empty, full and partial tiles of one (batch, head) "
                        "in FlexAttention's compact form.")
      .def_readonly("q_blocks", &BlockMask::q_blocks,
                    "ceil(q_len / tq): the number of query blocks.")
      .def_readonly("k_blocks", &BlockMask::k_blocks,
                    "ceil(k_len / tk): the number of key blocks.")
      .def_readonly("kv_num_blocks", &BlockMask::kv_num_blocks,
                    "uint32 [q_blocks]: each query block's number of "
                    "partial key blocks.")
      .def_readonly("kv_indices", &BlockMask::kv_indices,
                    "uint32 [q_blocks, k_blocks]: row i's first "
                    "kv_num_blocks[i] entries are its partial key blocks, "
                    "ascending.")
      .def_readonly("full_kv_num_blocks", &BlockMask::full_kv_num_blocks,
                    "uint32 [q_blocks]: each query block's number of full "
                    "key blocks.")
      .def_readonly("full_kv_indices", &BlockMask::full_kv_indices,
                    "uint32 [q_blocks, k_blocks]: row i's first "
                    "full_kv_num_blocks[i] entries are its full key blocks, "
                    "ascending.")
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
          "qb"_a,
          "The partial key blocks of query block qb (compute, then mask), "
          "ascending.")
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
          "qb"_a,
          "The full key blocks of query block qb (compute, nothing to "
          "mask), ascending; a key block in neither list is empty.");
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
}

}  // namespace rlx::python
