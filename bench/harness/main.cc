// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_attn_bench's main: takes the problems of the user's own off the
// command line (bench/harness/problem.h), registers every suite
// (bench/harness/suites.h) in report order, on the standard workloads or on
// those problems, and records what the figures were measured with (CPU model,
// the core's clock as measured (bench/harness/clock.h), whether the run was
// emulated, compiler, Highway, targets, the library's version and revision) in
// the benchmark context, so that the JSON carries it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/harness/bench_util.h"
#include "bench/harness/clock.h"
#include "bench/harness/problem.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "hwy/highway.h"
#include "rlx/targets.h"

#ifndef RLX_BENCH_LIBRARY_VERSION
#define RLX_BENCH_LIBRARY_VERSION "unknown"
#endif

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

std::string Format(double v, const char* format) {
  char text[64];
  std::snprintf(text, sizeof(text), format, v);
  return text;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// Whether this run is emulated, and why we know: scripts/bench.sh sets
// RLX_BENCH_EMULATOR when it runs the binary under one (qemu-aarch64 ...);
// qemu-user passes the host's /proc/cpuinfo through, so an Arm binary that
// reads an x86 model name runs on an x86 host. Empty: no sign of it.
std::string Emulation(const std::string& model) {
  const std::string emulator = Env("RLX_BENCH_EMULATOR");
  if (!emulator.empty()) return "yes: run under " + emulator;
#if HWY_ARCH_ARM
  for (const char* x86 : {"Intel", "AMD", "EPYC", "Xeon", "x86"}) {
    if (model.find(x86) != std::string::npos) {
      return "yes: an Arm binary reads an x86 model name (" + model + ")";
    }
  }
#else
  (void)model;
#endif
  return "";
}

const char* Arch() {
#if HWY_ARCH_X86_64
  return "x86_64";
#elif HWY_ARCH_ARM_A64
  return "aarch64";
#elif HWY_ARCH_ARM
  return "arm";
#else
  return "other";
#endif
}

void AddClockContext(const std::string& model) {
  const ClockEstimate clock = MeasureClock();
  benchmark::AddCustomContext("cpu_clock_ghz", Format(clock.ghz, "%.3f"));
  benchmark::AddCustomContext("cpu_clock_median_ghz",
                              Format(clock.median_ghz, "%.3f"));
  benchmark::AddCustomContext("cpu_clock_spread", Format(clock.spread, "%.4f"));
  benchmark::AddCustomContext("cpu_clock_two_chains",
                              Format(clock.two_chains, "%.3f"));
  benchmark::AddCustomContext("cpu_clock_plausible",
                              clock.plausible ? "1" : "0");
  if (!clock.plausible) {
    benchmark::AddCustomContext("cpu_clock_note", clock.note);
  }
  benchmark::AddCustomContext(
      "cpu_clock_method",
      "fastest of " + std::to_string(clock.samples) +
          " samples of a chain of dependent 64-bit adds, 1 cycle each, "
          "timed with std::chrono::steady_clock");
  const double stated = ModelNameGhz(model);
  if (stated > 0) {
    benchmark::AddCustomContext("model_name_ghz", Format(stated, "%.3f"));
  }
}

void AddContext(bool measure_clock) {
  const std::string model = CpuModel();
  benchmark::AddCustomContext("cpu_model", model);
  benchmark::AddCustomContext("arch", Arch());
  benchmark::AddCustomContext("library_version", RLX_BENCH_LIBRARY_VERSION);
  const std::string revision = Env("RLX_BENCH_REVISION");
  if (!revision.empty()) benchmark::AddCustomContext("revision", revision);
  const std::string machine = Env("RLX_BENCH_MACHINE");
  if (!machine.empty()) benchmark::AddCustomContext("machine", machine);
  const std::string emulated = Emulation(model);
  benchmark::AddCustomContext("emulated", emulated.empty() ? "no" : emulated);
  if (measure_clock) AddClockContext(model);
  benchmark::AddCustomContext("compiler", Compiler());
  benchmark::AddCustomContext("highway", std::to_string(HWY_MAJOR) + "." +
                                             std::to_string(HWY_MINOR) + "." +
                                             std::to_string(HWY_PATCH));
  benchmark::AddCustomContext("compiled_targets", Join(compiled_targets()));
  benchmark::AddCustomContext("supported_targets", Join(supported_targets()));
  benchmark::AddCustomContext("bench_targets", Join(BenchTargets()));
  benchmark::AddCustomContext("smoke", SmokeMode() ? "1" : "0");
}

// Report order (bench/report.py), which a randomly interleaved run loses,
// and each problem of the user's own as given.
void AddWorkloadContext(const std::vector<const Workload*>& workloads) {
  std::vector<std::string> names;
  for (const Workload* w : workloads) {
    names.push_back(w->name);
    if (w->problem != nullptr) {
      benchmark::AddCustomContext("problem " + w->name, w->problem->descriptor);
    }
  }
  benchmark::AddCustomContext("workloads", Join(names));
}

void RegisterSuites(const std::vector<const Workload*>& workloads,
                    bool standard) {
  std::vector<Suite> suites = Suites();
  std::stable_sort(
      suites.begin(), suites.end(),
      [](const Suite& a, const Suite& b) { return a.rank < b.rank; });
  const std::vector<std::string> targets = BenchTargets();
  for (const Workload* w : workloads) {
    const bool custom = w->problem != nullptr;
    for (const Suite& suite : suites) {
      if (suite.per_workload != nullptr && !custom) suite.per_workload(*w);
    }
    for (const std::string& target : targets) {
      for (const Suite& suite : suites) {
        if (suite.per_target != nullptr && (!custom || suite.custom)) {
          suite.per_target(*w, target);
        }
      }
    }
  }
  if (!standard) return;
  for (const Suite& suite : suites) {
    if (suite.once != nullptr) suite.once();
  }
}

bool HasFlag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
  }
  return false;
}

}  // namespace
}  // namespace rlx::bench

int main(int argc, char** argv) {
  namespace rb = rlx::bench;
  bool standard = true;
  try {
    bool with_standard = false;
    const std::vector<rb::Problem> problems =
        rb::TakeProblemFlags(&argc, argv, &with_standard);
    rb::SetCustomWorkloads(problems);
    standard = problems.empty() || with_standard;
    for (const rb::Workload& w : rb::CustomWorkloads()) {
      if (standard) {
        for (const rb::Workload& s : rb::Workloads()) {
          if (s.name == w.name) {
            throw std::invalid_argument("problem " + w.name +
                                        ": the name of a standard workload "
                                        "(--name)");
          }
        }
      }
      try {
        rb::CheckProblem(w);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("problem " + w.name + " (" +
                                    w.problem->descriptor +
                                    "): the library rejects it: " + e.what());
      }
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rlx_attn_bench: %s\n", e.what());
    return 2;
  }
  if (rb::HasFlag(argc, argv, "--measure_clock")) {
    const rb::ClockEstimate c = rb::MeasureClock();
    std::printf(
        "clock %.3f GHz (median %.3f, spread %.4f, two chains %.3f)%s%s\n",
        c.ghz, c.median_ghz, c.spread, c.two_chains,
        c.plausible ? "" : ": implausible: ", c.note.c_str());
    const double stated = rb::ModelNameGhz(rb::CpuModel());
    std::printf("model name: %s (%s)\n", rb::CpuModel().c_str(),
                stated > 0 ? (std::to_string(stated) + " GHz").c_str()
                           : "states no clock");
    return c.plausible ? 0 : 1;
  }
  std::vector<const rb::Workload*> workloads;
  if (standard) {
    for (const rb::Workload& w : rb::Workloads()) workloads.push_back(&w);
  }
  for (const rb::Workload& w : rb::CustomWorkloads()) workloads.push_back(&w);
  // The clock takes 0.3 s: not for a listing, nor when RLX_BENCH_CLOCK=0.
  const char* clock = std::getenv("RLX_BENCH_CLOCK");
  rb::AddContext(!rb::HasFlag(argc, argv, "--benchmark_list_tests") &&
                 !(clock != nullptr && std::string(clock) == "0"));
  rb::AddWorkloadContext(workloads);
  rb::RegisterSuites(workloads, standard);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return rlx::bench::BenchmarkFailed() ? 1 : 0;
}
