// SPDX-License-Identifier: MIT OR Apache-2.0
// Bucket ladders and the decode masks of bucketed decode: Bucket,
// BucketLadder, ladder_cost, bucket_decode_mask(_windowed) and
// fill_bucket_decode_mask.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings/python/src/arrays.h"
#include "bindings/python/src/module.h"
#include "rlx/attn_mask.h"
#include "rlx/bucket_ladder.h"

namespace rlx::python {
namespace {

using namespace pybind11::literals;  // NOLINT: "name"_a

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

}  // namespace

void DefineLadders(py::module_& m) {
  m.def(
      "bucket_decode_mask",
      [](std::size_t past_seq, std::size_t upper) {
        return ToArray(bucket_decode_mask(past_seq, upper));
      },
      "past_seq"_a, "upper"_a,
      "The causal decode keep mask padded to bucket `upper`: float32 "
      "[upper + 1], 1.0 at i < past_seq and at i == upper (the new token), "
      "0.0 elsewhere. ValueError if past_seq > upper.");
  m.def(
      "bucket_decode_mask_windowed",
      [](std::size_t past_seq, std::size_t upper, std::size_t window) {
        return ToArray(bucket_decode_mask_windowed(past_seq, upper, window));
      },
      "past_seq"_a, "upper"_a, "window"_a,
      "The sliding-window decode keep mask: float32 [upper + 1], 1.0 at lo "
      "<= i < past_seq and at i == upper, lo = past_seq - min(window, "
      "past_seq); window 0 = no window. ValueError if past_seq > upper.");
  m.def("fill_bucket_decode_mask", &FillBucketDecodeMask, "out"_a, "past_seq"_a,
        "upper"_a, "window"_a = 0,
        "Writes bucket_decode_mask_windowed(past_seq, upper, window) into "
        "out (writable contiguous float32 [upper + 1]) in place, with the "
        "SIMD kernel, allocating nothing. ValueError, writing nothing, for "
        "another length or past_seq > upper.");

  py::class_<Bucket>(m, "Bucket", "A half-open range of keys [start, end).")
      .def(py::init([](std::uint64_t start, std::uint64_t end) {
             return Bucket{start, end};
           }),
           "start"_a, "end"_a, "The bucket [start, end).")
      .def_readonly("start", &Bucket::start, "The bucket's first key.")
      .def_readonly("end", &Bucket::end, "One past the bucket's last key.")
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
      .def(py::init(custom), "buckets"_a,
           "The ladder of the given buckets, (start, end) pairs or Bucket "
           "objects. ValueError, naming the bucket, for no buckets, an "
           "empty bucket, or unsorted or overlapping ones; gaps are "
           "allowed.")
      .def_static("custom", custom, "buckets"_a,
                  "The ladder of the given buckets, (start, end) pairs or "
                  "Bucket objects.")
      .def_static("power_of_two", &BucketLadder::power_of_two, "min"_a, "max"_a,
                  "Extents from next_pow2(min) doubling until >= max; the "
                  "first bucket starts at 1, each next at the previous "
                  "extent + 1: (8, 256) gives [1,9) [9,17) ... [129,257). "
                  "Requires 1 <= min <= max.")
      .def_static("geometric", &BucketLadder::geometric, "max"_a, "count"_a,
                  "`count` geometric steps from 1 to max: extent i is the "
                  "smallest e with e**count >= max**i, computed exactly; "
                  "repeated extents are dropped. (512, 3) gives extents 8, "
                  "64, 512.")
      .def_static("fit", &Fit, "lengths"_a, "max_buckets"_a,
                  "cost"_a = "decode",
                  "The cheapest ladder of at most max_buckets buckets for the "
                  "observed lengths (a sequence or 1-D uint64/int64 array of "
                  "lengths, (length, count) pairs, or a {length: count} "
                  "dict); cost is \"decode\", \"prefill\" or a callable "
                  "cost(upper) -> float.")
      .def_static("capped", &BucketLadder::capped, "max_key"_a, "max_padding"_a,
                  "The fewest buckets covering [1, max_key] in which no key "
                  "k is padded by more than max_padding * k (max_padding "
                  "read as the decimal it prints as, so 0.1 is exactly "
                  "1/10). ValueError when more than MAX_CAPPED_BUCKETS "
                  "buckets would be needed.")
      .def_readonly_static("MAX_CAPPED_BUCKETS",
                           &BucketLadder::kMaxCappedBuckets)
      .def_static("least_max_padding", &BucketLadder::least_max_padding,
                  "max_key"_a, "max_buckets"_a,
                  "The least max_padding for which capped(max_key, "
                  "max_padding) has at most max_buckets buckets.")
      .def("bucket_for", &BucketLadder::bucket_for, "key"_a,
           "The index of the bucket holding key, or None when no bucket "
           "does; O(log n).")
      .def(
          "buckets",
          [](const BucketLadder& l) {
            return std::vector<Bucket>(l.buckets().begin(), l.buckets().end());
          },
          "The buckets, in order, as a list.")
      .def("size", &BucketLadder::size, "The number of buckets.")
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
  cost.def("decode", &ladder_cost::decode, "upper"_a,
           "A decode step's cost at extent upper: upper.");
  cost.def("prefill", &ladder_cost::prefill, "upper"_a,
           "A prefill's cost at extent upper: upper ** 2.");
}

}  // namespace rlx::python
