// SPDX-License-Identifier: MIT OR Apache-2.0
// The softmax extensions (docs/SEMANTICS.md, "Softmax extensions") on the
// standard workloads they are measured against, per target:
//   masked_softmax/D2sink/<target>       D2 with a sink logit per head
//   masked_softmax/D2keptonly/<target>   D2 with zero_masked = false
//   masked_softmax/D2fullkeptonly/<target>  D2full likewise, and D1keptonly,
//       D2wkeptonly, D3keptonly and the 16-bit D1, D2 and D2w rows'
//       (D2wbf16keptonly, ...): kept_softmax_floor writes only the kept
//       keys, as these do (the default mode adds the zero fill:
//       zero_fill_floor)
//   masked_softmax/P4alibi/<target>      P4's scores under causal + ALiBi
//       from slopes (P4 itself adds the same terms as a materialised bias)
//   split_row/D3/<target>/threads:1      one row of D3's shape (32769 keys,
//       Decode past 17000), one masked_softmax call with row_lse;
//       split_row/D3x32/...: a row 32 times longer (past 544000)
//   split_row/D3/<target>/threads:2      the same row split at the middle of
//       its kept keys, the parts on two threads, then merge_softmax_parts
//       on the calling thread
//   split_row_parallel_merge/D3/<target>/threads:2  likewise, but each
//       thread rescales its own part (a second round): the merge needs
//       only the other part's lse (given with a one-key stand-in view)
//   split_row_in_place/D3/<target>/threads:N  the same row split into N
//       key ranges of equal cost (split_kept_keys, the zero fill's cost
//       for masked keys), finished in place
//       (rlx/softmax_split.h): each thread runs masked_softmax_part, a
//       barrier, then finish_softmax_part; one round of the pool
//   masked_softmax/D1head16/<target>, .../D1head301/<target>  the first 16
//       (one AVX3 vector) or 301 (D1's kept count) keys of each D1 row, as
//       a strided view with no mask: a row's fixed cost, and its cost with
//       D1's kept keys but no Decode token segment and no fill
//   kept_softmax_floor/D1head16/<target>, .../D1head301/<target>  the
//       floor's plain softmax (bench/floors/floors.h) on exactly those keys, in
//       place at D1's row stride: what the kernel's per-row and per-call
//       work costs over the floor with the same keys in the same memory
//   kept_softmax_floor_in_place/<workload>/<target>  (D1, D2, D2w, D3 and
//       their bf16 and f16 rows) the floor's plain softmax in place on each
//       row's largest kept interval (without the Decode token key), at the
//       workload's own row stride and alignment: what the floor itself pays
//       for the layout the kernel is given (kept_softmax_floor slices the
//       kept keys out, converted to f32); 16-bit rows converted as they are
//       read and written (bench/floors/floors.h KeptSoftmaxFloor16)
//   kept_softmax_floor_contract/<workload>/<target>  (D1, D2, D2w, D3,
//       their bf16 and f16 rows, and D2full)
//       the floor's recipe in place over every kept interval of each row
//       (the Decode token key too) under masked_softmax's contract: no
//       masked key read or written, the kernel's f64-widened sum, 16-bit
//       rows converted into a work buffer and back as the kernel converts
//       them (bench/floors/floors.h ContractSoftmaxFloor); against the
//       kept-only rows, what the kernel's own row loop and per-row work cost
// Each compares with masked_softmax/<workload>/<target> in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/floors/floors.h"
#include "bench/harness/bench_util.h"
#include "bench/harness/splitter.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "rlx/score_kernels.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"

namespace rlx::bench {
namespace {

void BM_WithOptions(benchmark::State& state, const Workload* w,
                    const std::string& target, MaskSpec mask,
                    SoftmaxOptions options) {
  TargetScope scope(target);
  const ScoreView view = FreshScores(*w);
  for (auto _ : state) {
    masked_softmax(view, mask, options);
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

// The first `keys` keys of each row of w, unmasked (D1head16, D1head301).
void BM_RowHead(benchmark::State& state, const Workload* w,
                const std::string& target, std::size_t keys) {
  TargetScope scope(target);
  const ScoreView all = FreshScores(*w);
  Shape4 head = w->shape;
  head.k_len = std::min(keys, w->shape.k_len);
  const ScoreView view =
      ScoreView::f32(static_cast<float*>(all.data), head, all.strides);
  for (auto _ : state) {
    masked_softmax(view, MaskSpec::none());
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(head.rows() * head.k_len),
              sizeof(float), static_cast<double>(head.rows() * head.k_len));
}

// The floor on the same keys as BM_RowHead, in place in a copy of w's rows
// with one vector of padding: the floor reads and writes up to one vector
// past a row's keys (into the next row, or past the last one when a row
// keeps all its keys, as in the smoke pass's shrunken rows).
void BM_RowHeadFloor(benchmark::State& state, const Workload* w,
                     const std::string& target, std::size_t keys) {
  TargetScope scope(target);
  constexpr std::size_t kPadFloats = 64;  // the widest vector: 2048-bit SVE
  auto* data =
      static_cast<float*>(Scratch(1, w->bytes() + kPadFloats * sizeof(float)));
  std::memcpy(data, Data(*w).scores, w->bytes());  // D1: f32, contiguous
  const std::size_t rows = w->shape.rows();
  const std::size_t len = std::min(keys, w->shape.k_len);
  std::vector<std::size_t> begin(rows), lens(rows, len);
  for (std::size_t r = 0; r < rows; ++r) begin[r] = r * w->shape.k_len;
  for (auto _ : state) {
    KeptSoftmaxFloorUnaligned(data, begin.data(), lens.data(), rows);
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(rows * len), sizeof(float),
              static_cast<double>(rows * len));
}

// Element k of scores of type `type`, as a double.
double ScoreAt(const void* data, ScoreType type, std::size_t k) {
  switch (type) {
    case ScoreType::kF32:
      return static_cast<const float*>(data)[k];
    case ScoreType::kBF16:
      return ToF32(static_cast<const bf16*>(data)[k]);
    case ScoreType::kF16:
      return ToF32(static_cast<const f16*>(data)[k]);
  }
  return 0.0;
}

// The floor in place in a copy of w's rows, on each row's largest kept
// interval (a Decode row's window or context, without its token key):
// what the floor's recipe costs at the rows' own layout and stride, where
// the kernel has to work. With the padding of BM_RowHeadFloor.
void BM_InPlaceFloor(benchmark::State& state, const Workload* w,
                     const std::string& target) {
  TargetScope scope(target);
  constexpr std::size_t kPadFloats = 64;  // the widest vector: 2048-bit SVE
  void* data = Scratch(1, w->bytes() + kPadFloats * sizeof(float));
  std::memcpy(data, Data(*w).scores, w->bytes());  // contiguous
  const Shape4& s = w->shape;
  std::vector<std::size_t> begin, lens;
  std::size_t keys = 0, longest = 0;
  for (std::size_t r = 0; r < s.rows(); ++r) {
    const KeptKeys kept = kept_keys(Data(*w).mask, r / (s.heads * s.q_len),
                                    r % s.q_len, s.q_len, s.k_len);
    KeyInterval largest;
    for (std::size_t j = 0; j < kept.count; ++j) {
      if (kept.intervals[j].size() > largest.size()) {
        largest = kept.intervals[j];
      }
    }
    begin.push_back(r * s.k_len + largest.begin);
    lens.push_back(largest.size());
    keys += largest.size();
    longest = std::max(longest, largest.size());
  }
  float* work = nullptr;
  const auto run = [&] {
    if (w->type == ScoreType::kF32) {
      KeptSoftmaxFloorUnaligned(static_cast<float*>(data), begin.data(),
                                lens.data(), begin.size());
    } else {
      KeptSoftmaxFloor16(static_cast<std::uint16_t*>(data), w->type,
                         begin.data(), lens.data(), begin.size(), work);
    }
  };
  if (w->type != ScoreType::kF32) {
    work =
        static_cast<float*>(Scratch(2, (longest + kPadFloats) * sizeof(float)));
  }
  // One call checked first, so that the floor times a real softmax: each
  // row's interval sums to 1 (within the 16-bit rows' rounding).
  run();
  for (std::size_t r = 0; r < begin.size(); ++r) {
    double sum = 0.0;
    for (std::size_t k = begin[r]; k < begin[r] + lens[r]; ++k) {
      sum += ScoreAt(data, w->type, k);
    }
    if (!RowSumsToOne(state, "kept_softmax_floor_in_place/" + w->name, r, sum,
                      1e-2)) {
      return;
    }
  }
  std::memcpy(data, Data(*w).scores, w->bytes());
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(keys),
              static_cast<double>(w->element_bytes()),
              static_cast<double>(keys));
}

// The floor's recipe in place in a copy of w's rows over every kept
// interval (a Decode row's token key too), under masked_softmax's contract
// (bench/floors/floors.h ContractSoftmaxFloor): no masked key read or written,
// and the kernel's f64-widened sum; 16-bit rows converted into a work buffer
// and back, as the kernel converts them. Against it, the kept-only
// kernel's distance is its own row loop and per-row work, not what its
// contract asks.
void BM_ContractFloor(benchmark::State& state, const Workload* w,
                      const std::string& target) {
  TargetScope scope(target);
  const std::size_t es = w->element_bytes();
  void* data = Scratch(1, w->bytes());
  const void* scores = Data(*w).scores;
  std::memcpy(data, scores, w->bytes());  // contiguous
  const Shape4& s = w->shape;
  std::vector<std::size_t> begin;
  std::vector<KeptKeys> kept;
  std::size_t keys = 0;
  for (std::size_t r = 0; r < s.rows(); ++r) {
    begin.push_back(r * s.k_len);
    kept.push_back(kept_keys(Data(*w).mask, r / (s.heads * s.q_len),
                             r % s.q_len, s.q_len, s.k_len));
    keys += kept.back().size();
  }
  // The 16-bit rows' f32 work: key k at work[k], 64-byte aligned as the
  // kernel's work buffer.
  float* work = w->type == ScoreType::kF32
                    ? nullptr
                    : static_cast<float*>(Scratch(2, s.k_len * sizeof(float)));
  const auto run = [&] {
    ContractSoftmaxFloor(data, w->type, begin.data(), kept.data(), begin.size(),
                         work);
  };
  // One call checked first: each row's kept keys sum to 1 (within the
  // 16-bit rows' rounding), and every other key is still the input's (the
  // contract this floor is for).
  run();
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  const auto* pristine = static_cast<const std::uint8_t*>(scores);
  for (std::size_t r = 0; r < begin.size(); ++r) {
    double sum = 0.0;
    std::size_t next = 0;  // the next kept interval of row r
    for (std::size_t k = 0; k < s.k_len; ++k) {
      const std::size_t at = begin[r] + k;
      while (next < kept[r].count && kept[r].intervals[next].end <= k) ++next;
      const bool is_kept =
          next < kept[r].count && kept[r].intervals[next].begin <= k;
      if (is_kept) {
        sum += ScoreAt(data, w->type, at);
      } else if (std::memcmp(bytes + at * es, pristine + at * es, es) != 0) {
        FailBenchmark(state, "kept_softmax_floor_contract/" + w->name +
                                 ": row " + std::to_string(r) +
                                 " wrote masked key " + std::to_string(k));
        return;
      }
    }
    if (!RowSumsToOne(state, "kept_softmax_floor_contract/" + w->name, r, sum,
                      w->type == ScoreType::kF32 ? 1e-5 : 1e-2)) {
      return;
    }
  }
  std::memcpy(data, scores, w->bytes());
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(keys), static_cast<double>(es),
              static_cast<double>(keys));
}

// Per head, for the whole process (the options point into them).
const std::vector<float>& Sinks() {
  static const std::vector<float> sinks(64, 0.5f);
  return sinks;
}

// P4's slopes: head h adds -2^-(h+1) * distance (bench/harness/workloads.cc).
const std::vector<float>& P4Slopes() {
  static const std::vector<float> slopes = [] {
    std::vector<float> s(64);
    for (std::size_t h = 0; h < s.size(); ++h) {
      s[h] = std::ldexp(1.0f, -static_cast<int>(h + 1));
    }
    return s;
  }();
  return slopes;
}

// One Decode row (past, upper = keys - 1) split over `threads` (1: whole)
// as the header says; in place, each iteration on the previous one's
// output.
struct SplitRowCase {
  const char* name;
  std::size_t keys, past;
};

void BM_SplitRow(benchmark::State& state, SplitRowCase c,
                 const std::string& target, std::size_t threads,
                 bool parallel_merge) {
  TargetScope scope(target);
  const std::size_t keys = c.keys, past = c.past, upper = keys - 1,
                    split = past / 2;
  std::vector<float> row(ExpInputs(keys), ExpInputs(keys) + keys);
  float lse[2] = {0.0f, 0.0f};
  float stand_in[2] = {0.0f, 0.0f};  // one key per part
  const ScoreView views[2] = {
      ScoreView::f32(row.data(), {1, 1, 1, split}),
      ScoreView::f32(row.data() + split, {1, 1, 1, keys - split})};
  // Part 0: every key a real past key (the query at the whole row's
  // position); part 1: the rest of the Decode layout, shifted by split.
  const std::int64_t query_offset[] = {static_cast<std::int64_t>(past)};
  const MaskSpec masks[2] = {MaskSpec::none().with_query_offsets(query_offset),
                             MaskSpec::decode(past - split, upper - split)};
  const auto softmax_part = [&](std::size_t part) {
    SoftmaxOptions options;
    options.row_lse = &lse[part];
    masked_softmax(views[part], masks[part], options);
  };
  // Part `part` rescaled alone: the other part enters with its lse only.
  const auto merge_part = [&](std::size_t part) {
    const std::size_t other = 1 - part;
    const SoftmaxPart parts[] = {
        {views[part], &lse[part]},
        {ScoreView::f32(&stand_in[part], {1, 1, 1, 1}), &lse[other]}};
    merge_softmax_parts(parts);
  };
  bool merging = false;  // which round the workers run
  Splitter splitter(threads, [&](std::size_t part) {
    merging ? merge_part(part) : softmax_part(part);
  });
  const ScoreView whole = ScoreView::f32(row.data(), {1, 1, 1, keys});
  const MaskSpec whole_mask = MaskSpec::decode(past, upper);
  for (auto _ : state) {
    if (threads == 1) {
      SoftmaxOptions options;
      options.row_lse = &lse[0];
      masked_softmax(whole, whole_mask, options);
    } else {
      merging = false;
      splitter.Run();
      if (parallel_merge) {
        merging = true;
        splitter.Run();
      } else {
        const SoftmaxPart parts[] = {{views[0], &lse[0]}, {views[1], &lse[1]}};
        merge_softmax_parts(parts);
      }
    }
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(keys), sizeof(float),
              static_cast<double>(past + 1));
}

// One Decode row as BM_SplitRow's, split into `threads` balanced key ranges
// and finished in place, with row_lse (written by part 0's finish).
void BM_SplitRowInPlace(benchmark::State& state, SplitRowCase c,
                        const std::string& target, std::size_t threads) {
  TargetScope scope(target);
  const std::size_t keys = c.keys;
  std::vector<float> row(ExpInputs(keys), ExpInputs(keys) + keys);
  const ScoreView view = ScoreView::f32(row.data(), {1, 1, 1, keys});
  const MaskSpec mask = MaskSpec::decode(c.past, keys - 1);
  const KeptKeys kept = kept_keys(mask, 0, 0, 1, keys);
  std::vector<KeyRange> ranges;
  for (std::size_t p = 0; p < threads; ++p) {
    ranges.push_back(split_kept_keys(kept, keys, p, threads));
  }
  std::vector<SoftmaxPartStats> stats(threads);
  std::vector<const SoftmaxPartStats*> parts;
  for (const SoftmaxPartStats& s : stats) parts.push_back(&s);
  float lse = 0.0f;
  SpinBarrier barrier(static_cast<std::uint32_t>(threads));
  Splitter splitter(threads, [&](std::size_t p) {
    masked_softmax_part(view, mask, ranges[p], &stats[p]);
    barrier.ArriveAndWait();
    SoftmaxOptions options;
    if (p == 0) options.row_lse = &lse;
    finish_softmax_part(view, mask, ranges[p], parts, p, options);
  });
  for (auto _ : state) {
    splitter.Run();
    benchmark::ClobberMemory();
  }
  SetCounters(state, static_cast<double>(keys), sizeof(float),
              static_cast<double>(c.past + 1));
}

void Add(const Workload& w, const std::string& target, const char* name,
         const MaskSpec& mask, const SoftmaxOptions& options) {
  Configure(RegisterTracked(BenchName({"masked_softmax", name, target}).c_str(),
                            BM_WithOptions, &w, target, mask, options));
}

void Register(const Workload& w, const std::string& target) {
  SoftmaxOptions kept_only;
  kept_only.zero_masked = false;
  if (w.name == "D2") {
    SoftmaxOptions sinks;
    sinks.sink_logits = Sinks().data();
    Add(w, target, "D2sink", Data(w).mask, sinks);
  }
  // The decode workloads and their 16-bit variants (D2wbf16, ...).
  const std::size_t suffix = w.type == ScoreType::kBF16  ? 4
                             : w.type == ScoreType::kF16 ? 3
                                                         : 0;
  const std::string base = w.name.substr(0, w.name.size() - suffix);
  if (base == "D1" || base == "D2" || base == "D2w" || base == "D3") {
    // Kept-only rows: the default mode's time without its fill (the 16-bit
    // rows' too, whose bars are read against their floor plus the fill).
    Add(w, target, (w.name + "keptonly").c_str(), Data(w).mask, kept_only);
    Configure(RegisterTracked(
        BenchName({"kept_softmax_floor_in_place", w.name, target}).c_str(),
        BM_InPlaceFloor, &w, target));
  }
  if (base == "D1" || base == "D2" || base == "D2w" || base == "D3" ||
      w.name == "D2full") {
    Configure(RegisterTracked(
        BenchName({"kept_softmax_floor_contract", w.name, target}).c_str(),
        BM_ContractFloor, &w, target));
  }
  if (w.name == "D1") {
    for (const std::size_t keys : {std::size_t{16}, std::size_t{301}}) {
      const std::string name = "D1head" + std::to_string(keys);
      Configure(
          RegisterTracked(BenchName({"masked_softmax", name, target}).c_str(),
                          BM_RowHead, &w, target, keys));
      Configure(RegisterTracked(
          BenchName({"kept_softmax_floor", name, target}).c_str(),
          BM_RowHeadFloor, &w, target, keys));
    }
  } else if (w.name == "D2full") {
    Add(w, target, "D2fullkeptonly", Data(w).mask, kept_only);
  } else if (w.name == "P4") {
    SoftmaxOptions alibi;
    alibi.alibi_slopes = P4Slopes().data();
    Add(w, target, "P4alibi", MaskSpec::causal(), alibi);
  } else if (w.name == "D3") {
    // D3's row shape, and one 32 times longer (shrunk like the workloads
    // in the smoke pass).
    const std::size_t s = SmokeMode() ? 16 : 1;
    for (const SplitRowCase c :
         {SplitRowCase{"D3", 32768 / s + 1, 17000 / s},
          SplitRowCase{"D3x32", 32 * 32768 / s + 1, 32 * 17000 / s}}) {
      for (const auto& [threads, parallel] :
           {std::pair{1, false}, {2, false}, {2, true}}) {
        std::string suffix = "threads:" + std::to_string(threads);
        Configure(RegisterTracked(
            BenchName({parallel ? "split_row_parallel_merge" : "split_row",
                       c.name, target, suffix})
                .c_str(),
            BM_SplitRow, c, target, static_cast<std::size_t>(threads),
            parallel));
      }
      for (const std::size_t threads : {1, 2}) {
        Configure(
            RegisterTracked(BenchName({"split_row_in_place", c.name, target,
                                       "threads:" + std::to_string(threads)})
                                .c_str(),
                            BM_SplitRowInPlace, c, target, threads));
      }
    }
  }
}

const bool kAdded = AddSuite({.rank = 35, .per_target = &Register});

}  // namespace
}  // namespace rlx::bench
