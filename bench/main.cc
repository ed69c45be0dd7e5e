// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_attn_bench's main: registers every suite (bench/suites.h) in report
// order and records what the figures were measured with (CPU model,
// compiler, Highway, targets) in the benchmark context, so that the JSON
// carries it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/suites.h"
#include "bench/workloads.h"
#include "hwy/highway.h"
#include "rlx/targets.h"

namespace rlx::bench {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out;
}

// "model name" (x86) or the first of "Model"/"CPU part" (Arm) in
// /proc/cpuinfo; "unknown" elsewhere.
std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string fallback = "unknown";
  for (std::string line; std::getline(cpuinfo, line);) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "model name") return value;
    if ((key == "Model" || key == "CPU part") && fallback == "unknown") {
      fallback = key;
      fallback += ' ';
      fallback += value;
    }
  }
  return fallback;
}

std::string Compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown";
#endif
}

void AddContext() {
  benchmark::AddCustomContext("cpu_model", CpuModel());
  benchmark::AddCustomContext("compiler", Compiler());
  benchmark::AddCustomContext("highway", std::to_string(HWY_MAJOR) + "." +
                                             std::to_string(HWY_MINOR) + "." +
                                             std::to_string(HWY_PATCH));
  benchmark::AddCustomContext("compiled_targets", Join(compiled_targets()));
  benchmark::AddCustomContext("supported_targets", Join(supported_targets()));
  benchmark::AddCustomContext("bench_targets", Join(BenchTargets()));
  benchmark::AddCustomContext("smoke", SmokeMode() ? "1" : "0");
  // Report order (bench/report.py), which a randomly interleaved run loses.
  std::vector<std::string> names;
  for (const Workload& w : Workloads()) names.push_back(w.name);
  benchmark::AddCustomContext("workloads", Join(names));
}

void RegisterSuites() {
  std::vector<Suite> suites = Suites();
  std::stable_sort(
      suites.begin(), suites.end(),
      [](const Suite& a, const Suite& b) { return a.rank < b.rank; });
  const std::vector<std::string> targets = BenchTargets();
  for (const Workload& w : Workloads()) {
    for (const Suite& suite : suites) {
      if (suite.per_workload != nullptr) suite.per_workload(w);
    }
    for (const std::string& target : targets) {
      for (const Suite& suite : suites) {
        if (suite.per_target != nullptr) suite.per_target(w, target);
      }
    }
  }
  for (const Suite& suite : suites) {
    if (suite.once != nullptr) suite.once();
  }
}

}  // namespace
}  // namespace rlx::bench

int main(int argc, char** argv) {
  rlx::bench::AddContext();
  rlx::bench::RegisterSuites();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return rlx::bench::BenchmarkFailed() ? 1 : 0;
}
