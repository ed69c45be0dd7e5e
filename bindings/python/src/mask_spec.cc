// SPDX-License-Identifier: MIT OR Apache-2.0
// The Python class MaskSpec: rlx::MaskSpec's builders on a Mask, which holds
// the arrays the spec points into (mask.h).
#include <pybind11/pybind11.h>

#include <cstddef>

#include "bindings/python/src/mask.h"
#include "bindings/python/src/module.h"
#include "rlx/scores.h"

namespace rlx::python {

using namespace pybind11::literals;  // NOLINT: "name"_a

void DefineMaskSpec(py::module_& m) {
  using DenseArg = Mask::DenseArg;
  py::class_<Mask>(m, "MaskSpec",
                   "How scores are masked (rlx::MaskSpec). Builders are "
                   "static methods; with_* return a modified copy. A mask "
                   "keeps every array it refers to alive and reads it in "
                   "place at each call.")
      .def(py::init<>(), "The None kind: every key kept (MaskSpec.none()).")
      .def_static(
          "none", [] { return Mask(); }, "Every key kept.")
      .def_static(
          "causal", [] { return MaskOf(MaskSpec::causal()); },
          "Keeps key k of query row q iff k <= q_off + q (q_off = k_len - "
          "q_len unless with_query_offsets gives it).")
      .def_static(
          "sliding_window",
          [](std::size_t w) { return MaskOf(MaskSpec::sliding_window(w)); },
          "window"_a,
          "Causal, and keeps at most the `window` keys before the query "
          "besides the query itself (window_keys W = window + 1); window 0 "
          "is causal.")
      .def_static(
          "decode",
          [](std::size_t past, std::size_t upper, std::size_t window) {
            return MaskOf(MaskSpec::decode(past, upper, window));
          },
          "past"_a, "upper"_a, "window"_a = 0,
          "The bucketed decode mask without materialising it: the new token "
          "at key slot `upper` (position `past`) attends to the cached keys "
          "[past - min(window, past), past) and itself; slots [past, upper) "
          "are padding. Scores must have k_len == upper + 1; window 0 = no "
          "window. A call raises ValueError if past > upper.")
      .def_static(
          "keep",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kKeep); },
          "m"_a,
          "A dense keep mask, read in place: float32 (kept iff m >= 0.5, so "
          "NaN is masked), uint8 or bool (kept iff m != 0); 1- to 4-D, each "
          "extent the scores' or 1 (broadcast).")
      .def_static(
          "bias",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kBias); },
          "b"_a,
          "A dense additive float32 bias, read in place and broadcast like "
          "keep; -inf masks a key.")
      .def_static(
          "keep_bits",
          [](const py::object& a) { return Mask::Dense(a, DenseArg::kBits); },
          "words"_a,
          "A bit-packed keep mask of uint64 (or int64) words: key k is bit "
          "k % 64 of word k // 64, ceil(k_len / 64) words per row; "
          "broadcast like keep.")
      .def("with_query_offsets", &Mask::WithQueryOffsets, "offsets"_a,
           "A copy whose query row q of batch b sits at position offsets[b] "
           "+ q (int64, C-contiguous, batch values; may be negative); None "
           "restores k_len - q_len.")
      .def(
          "with_window_keys",
          [](const Mask& self, std::size_t W) {
            Mask c = self;
            c.spec = self.spec.with_window_keys(W);
            return c;
          },
          "W"_a,
          "A copy that also keeps only keys with p_q - p_k < W (W counts the "
          "query, as llama.cpp, gemma.cpp and ONNX Runtime count their "
          "window); 0 = no window.")
      .def(
          "with_window_keys_after",
          [](const Mask& self, std::size_t A) {
            Mask c = self;
            c.spec = self.spec.with_window_keys_after(A);
            return c;
          },
          "A"_a,
          "A copy that also keeps only keys with p_k - p_q < A (A counts "
          "the query); 0 = none. Without causal, with_window_keys(w + 1)"
          ".with_window_keys_after(w + 1) is the two-sided window |p_q - "
          "p_k| <= w (EmbeddingGemma, ModernBERT's local attention).")
      .def(
          "with_chunk",
          [](const Mask& self, std::size_t C) {
            Mask c = self;
            c.spec = self.spec.with_chunk(C);
            return c;
          },
          "C"_a,
          "A copy that also keeps only keys in the query's chunk: p_k // C "
          "== p_q // C (chunked attention); 0 = no chunks.")
      .def(
          "with_sink_keys",
          [](const Mask& self, std::size_t S) {
            Mask c = self;
            c.spec = self.spec.with_sink_keys(S);
            return c;
          },
          "S"_a,
          "A copy that also keeps the first S positions (p_k < S and p_k <= "
          "p_q: attention sinks, StreamingLLM) whatever the window or chunk "
          "says; 0 = none.")
      .def("with_prefix", &Mask::WithPrefix, "prefix_end"_a,
           "A copy that also keeps, within batch b's prefix, every key for "
           "every query (p_q < P and p_k < P, P = prefix_end[b]: "
           "bidirectional prefix, PaliGemma-style); int64, C-contiguous, "
           "batch values; None removes the rule.")
      .def("with_segments", &Mask::WithSegments, "q_segments"_a, "k_segments"_a,
           "A copy that keeps only keys of the query's segment (packed "
           "sequences): int32 ids, C-contiguous, batch * q_len and batch * "
           "k_len values; None removes the rule.")
      .def("with_positions", &Mask::WithPositions, "q_positions"_a,
           "k_positions"_a,
           "A copy with explicit logical positions (paged or ring KV "
           "caches): int64, C-contiguous, batch * q_len and batch * k_len "
           "values; a negative k position is an empty slot, never kept. "
           "Either may be None (that side keeps its implicit positions).")
      .def("with_block_list", &Mask::WithBlockList, "num_blocks"_a, "indices"_a,
           "full_num_blocks"_a = py::none(), "full_indices"_a = py::none(),
           py::kw_only(), "q_block"_a, "k_block"_a,
           "A copy restricted to listed key blocks (FlexAttention's "
           "BlockMask; NSA/MoBA block selection): int32, C-contiguous "
           "num_blocks [batch, heads, q_blocks] and indices [batch, heads, "
           "q_blocks, max_blocks] (batch or heads 1 broadcasts), and "
           "optionally full_num_blocks / full_indices of the same shapes. "
           "Query row q is in query block q // q_block; key block j holds "
           "keys [j * k_block, (j + 1) * k_block). A key of a full block is "
           "kept without the position rules or a dense keep part (empty "
           "slots and other segments stay masked; a bias and ALiBi still "
           "add); a key of a partial block goes through every rule; a key "
           "of no listed block is masked and never read. classify_blocks' "
           "lists (as int32) give back the mask they classify. Calls raise "
           "ValueError for q_blocks != ceil(q_len / q_block), counts outside "
           "[0, max_blocks], indices outside the key blocks or a block "
           "listed twice, and write nothing.")
      .def("with_groups", &Mask::WithGroups, "q_groups"_a, "k_groups"_a,
           "A copy that also keeps a key of the query's group whatever the "
           "causal, window, chunk, prefix and sink rules say (Gemma 3's "
           "images: a token sees its whole image): int32 ids, 0 = no group, "
           "C-contiguous, batch * q_len and batch * k_len values. Empty "
           "slots, segments and the dense part still apply. Both or None "
           "(removes the rule).")
      .def("with_key_indices", &Mask::WithKeyIndices, "indices"_a,
           "shape"_a = py::none(),
           "A copy with a key list (top-k sparse attention): row (b, h, q) "
           "keeps only the keys named in its n slots, ANDed with every other "
           "rule. indices: int32, C-contiguous, (batch or 1, heads or 1, "
           "q_len or 1, n) values (1 broadcasts), read in place and kept "
           "alive; shape None takes the extents of a 4-d array. -1 is an "
           "unused slot, a key named twice counts once, any other value "
           "outside [0, k_len) raises ValueError and writes nothing. n = 0 "
           "lists no key (every row fully masked). The softmax reads and "
           "writes only the listed keys; with zero_masked=False only the "
           "listed keys inside kept_keys are written. Not with a block list, "
           "nor in the split softmax. indices None removes the list.")
      .def(
          "with_keep",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kKeep);
          },
          "m"_a,
          "A copy with a dense keep mask (as MaskSpec.keep takes it) on top "
          "of the rules; a mask has at most one dense part.")
      .def(
          "with_bias",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kBias);
          },
          "b"_a,
          "A copy with a dense float32 bias (as MaskSpec.bias takes it) "
          "added to the kept scores.")
      .def(
          "with_keep_bits",
          [](const Mask& self, const py::object& a) {
            return self.WithDense(a, DenseArg::kBits);
          },
          "words"_a,
          "A copy with a bit-packed keep mask (as MaskSpec.keep_bits takes "
          "it) on top of the rules.")
      .def_property_readonly(
          "window", [](const Mask& self) { return self.spec.window; },
          "The sliding_window / decode window (0 = none).")
      .def_property_readonly(
          "past", [](const Mask& self) { return self.spec.past; },
          "decode: the number of cached keys (0 for the other kinds).")
      .def_property_readonly(
          "upper", [](const Mask& self) { return self.spec.upper; },
          "decode: the bucket's extent, the new token's key slot (0 for the "
          "other kinds).")
      .def_property_readonly(
          "window_keys", [](const Mask& self) { return self.spec.window_keys; },
          "W of with_window_keys (0 = none).")
      .def_property_readonly(
          "window_keys_after",
          [](const Mask& self) { return self.spec.window_keys_after; },
          "A of with_window_keys_after (0 = none).")
      .def_property_readonly(
          "chunk", [](const Mask& self) { return self.spec.chunk; },
          "C of with_chunk (0 = none).")
      .def_property_readonly(
          "sink_keys", [](const Mask& self) { return self.spec.sink_keys; },
          "S of with_sink_keys (0 = none).")
      .def("__repr__", &Mask::Repr);
}

}  // namespace rlx::python
