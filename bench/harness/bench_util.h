// SPDX-License-Identifier: MIT OR Apache-2.0
// Shared by the benchmark suites: which targets to register and a scope that
// forces one for a benchmark's duration.
#ifndef RLX_BENCH_HARNESS_BENCH_UTIL_H_
#define RLX_BENCH_HARNESS_BENCH_UTIL_H_

#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/targets.h"

namespace rlx::bench {

// Every supported target, or those listed (comma-separated) in
// RLX_BENCH_TARGETS.
inline std::vector<std::string> BenchTargets() {
  const char* only = std::getenv("RLX_BENCH_TARGETS");
  if (only == nullptr || only[0] == '\0') return supported_targets();
  std::vector<std::string> targets;
  std::stringstream in(only);
  for (std::string t; std::getline(in, t, ',');) {
    if (!t.empty()) targets.push_back(t);
  }
  return targets;
}

// "<kernel>/<workload>/<target>" from its parts. (Built by appending:
// GCC 12 warns falsely (-Wrestrict) on chained std::string operator+.)
inline std::string BenchName(std::initializer_list<std::string_view> parts) {
  std::string name;
  for (std::string_view part : parts) {
    if (!name.empty()) name += '/';
    name += part;
  }
  return name;
}

// Forces `target` for the lifetime of the scope (one benchmark run); the
// dispatch itself is then a single load per call, as in production.
class TargetScope {
 public:
  explicit TargetScope(const std::string& target) { force_target(target); }
  ~TargetScope() { force_target(""); }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;
};

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_BENCH_UTIL_H_
