// SPDX-License-Identifier: MIT OR Apache-2.0
// Counts the repetitions rlx_attn_bench runs, for scripts/bench.sh's
// progress line: with RLX_BENCH_PROGRESS=FILE, one line per repetition as
// it starts, "<Unix time in seconds> <first|again> <benchmark name> <process
// CPU seconds>"
// ("first": the benchmark's first repetition, which also probes for its
// iteration count and builds its data, so it costs more than the others).
//
// Google Benchmark calls a benchmark's function once per iteration-count
// probe of its first repetition (the counts strictly increase, the probes
// follow one another) and once per later repetition, with the count the
// probes settled on. So a call starts a repetition unless it follows a call
// of the same benchmark with fewer iterations.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/harness/suites.h"

namespace rlx::bench {
namespace {

struct Progress {
  std::vector<std::string> names;
  std::vector<bool> started;
  std::FILE* file = nullptr;
  bool opened = false;
  std::size_t last_id = static_cast<std::size_t>(-1);
  benchmark::IterationCount last_iterations = 0;
};

Progress& Get() {
  static Progress progress;
  return progress;
}

}  // namespace

std::size_t NewProgressId(const std::string& name) {
  Progress& p = Get();
  p.names.push_back(name);
  p.started.push_back(false);
  return p.names.size() - 1;
}

void NoteRun(std::size_t id, benchmark::IterationCount iterations) {
  Progress& p = Get();
  const bool probe = id == p.last_id && iterations > p.last_iterations;
  p.last_id = id;
  p.last_iterations = iterations;
  if (probe) return;
  if (!p.opened) {
    p.opened = true;
    const char* path = std::getenv("RLX_BENCH_PROGRESS");
    if (path != nullptr && path[0] != '\0') p.file = std::fopen(path, "w");
  }
  const bool first = !p.started[id];
  p.started[id] = true;
  if (p.file == nullptr) return;
  // Wall-clock time, which scripts/bench.sh compares with `date`.
  const double seconds =
      std::chrono::duration<double>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  // The process's CPU time (every thread's): the work done, whatever share
  // of the cores the run gets on a shared machine.
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  std::fprintf(p.file, "%.3f %s %s %.3f\n", seconds, first ? "first" : "again",
               p.names[id].c_str(),
               static_cast<double>(cpu.tv_sec) + cpu.tv_nsec * 1e-9);
  std::fflush(p.file);
}

}  // namespace rlx::bench
