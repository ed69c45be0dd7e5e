// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_ladder_fit_bench: how long choosing a ladder from traffic takes, one
// core. BucketLadder::fit on 10^6 observed lengths up to 131072 into 32
// buckets (the target: well under a second), from the raw lengths and
// from their histogram, for two length distributions:
//   uniform: every length in [1, 131072] equally likely, so about 131000
//            distinct lengths (m): the dynamic program's worst case here;
//   chat:    log-normal prompt lengths (median 1024, sigma 1.2) clamped to
//            [1, 131072]: many short lengths, a long tail.
// Plus capped and least_max_padding over the same keys. items_per_second
// counts observed lengths (fit) or buckets (capped).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rlx/bucket_ladder.h"

namespace rlx::bench {
namespace {

constexpr std::size_t kObservations = 1000000;
constexpr std::uint64_t kMaxLength = 131072;
constexpr std::size_t kBuckets = 32;

const std::vector<std::uint64_t>& Lengths(bool chat) {
  static const auto make = [](bool chat) {
    std::mt19937_64 rng(chat ? 2 : 1);
    std::uniform_int_distribution<std::uint64_t> uniform(1, kMaxLength);
    std::lognormal_distribution<double> lognormal(std::log(1024.0), 1.2);
    std::vector<std::uint64_t> lengths(kObservations);
    for (std::uint64_t& len : lengths) {
      len = chat ? static_cast<std::uint64_t>(std::clamp(
                       lognormal(rng), 1.0, static_cast<double>(kMaxLength)))
                 : uniform(rng);
    }
    return lengths;
  };
  static const std::vector<std::uint64_t> uniform = make(false);
  static const std::vector<std::uint64_t> chat_lengths = make(true);
  return chat ? chat_lengths : uniform;
}

std::vector<LengthCount> Histogram(const std::vector<std::uint64_t>& lengths) {
  std::map<std::uint64_t, std::uint64_t> counts;
  for (std::uint64_t len : lengths) ++counts[len];
  std::vector<LengthCount> out;
  for (const auto& [length, count] : counts) out.push_back({length, count});
  return out;
}

void BM_Fit(benchmark::State& state, bool chat, LadderCost cost) {
  const std::vector<std::uint64_t>& lengths = Lengths(chat);
  for (auto _ : state) {
    BucketLadder ladder = BucketLadder::fit(lengths, kBuckets, cost);
    benchmark::DoNotOptimize(ladder);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(lengths.size()));
  state.counters["distinct"] = static_cast<double>(Histogram(lengths).size());
}

void BM_FitCounts(benchmark::State& state, bool chat, LadderCost cost) {
  const std::vector<LengthCount> counts = Histogram(Lengths(chat));
  for (auto _ : state) {
    BucketLadder ladder = BucketLadder::fit(counts, kBuckets, cost);
    benchmark::DoNotOptimize(ladder);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kObservations));
  state.counters["distinct"] = static_cast<double>(counts.size());
}

void BM_Capped(benchmark::State& state) {
  std::size_t buckets = 0;
  for (auto _ : state) {
    BucketLadder ladder = BucketLadder::capped(kMaxLength, 0.01);
    buckets = ladder.size();
    benchmark::DoNotOptimize(ladder);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(buckets));
}

void BM_LeastMaxPadding(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        BucketLadder::least_max_padding(kMaxLength, kBuckets));
  }
}

void Register() {
  for (const bool chat : {false, true}) {
    const std::string lengths = chat ? "chat" : "uniform";
    for (const auto& [name, cost] :
         {std::pair<const char*, LadderCost>{"decode", ladder_cost::decode},
          {"prefill", ladder_cost::prefill}}) {
      benchmark::RegisterBenchmark(
          ("fit/" + lengths + "/" + name + "/lengths").c_str(), BM_Fit, chat,
          cost)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(
          ("fit/" + lengths + "/" + name + "/counts").c_str(), BM_FitCounts,
          chat, cost)
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark("capped/0.01", BM_Capped)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("least_max_padding/32", BM_LeastMaxPadding)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace rlx::bench

int main(int argc, char** argv) {
  rlx::bench::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
