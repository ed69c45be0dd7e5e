// SPDX-License-Identifier: MIT OR Apache-2.0
// bench/harness/clock.h: the add chain and its calibration.
#include "bench/harness/clock.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace rlx::bench {
namespace {

constexpr int kAddsPerIteration = 64;

// One add of `y` to `x`; the empty asm makes x opaque after each add, so
// the compiler can neither fold the adds together nor drop them: each is
// one add instruction on x's register, dependent on the previous one.
#define RLX_ADD(x) \
  x += y;          \
  asm volatile("" : "+r"(x))
#define RLX_ADD8(x) \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x);       \
  RLX_ADD(x)

// `iterations` x 64 dependent adds (the loop's own counter and branch run
// beside them on other ports).
__attribute__((noinline)) std::uint64_t OneChain(std::uint64_t iterations,
                                                 std::uint64_t x,
                                                 std::uint64_t y) {
  for (std::uint64_t i = 0; i < iterations; ++i) {
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
    RLX_ADD8(x);
  }
  return x;
}

// Two independent chains of 64 adds each per iteration.
__attribute__((noinline)) std::uint64_t TwoChains(std::uint64_t iterations,
                                                  std::uint64_t x,
                                                  std::uint64_t y) {
  std::uint64_t z = x ^ 1;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < 8; ++j) {
      RLX_ADD8(x);
      RLX_ADD8(z);
    }
  }
  return x + z;
}

#undef RLX_ADD8
#undef RLX_ADD

using Chain = std::uint64_t (*)(std::uint64_t, std::uint64_t, std::uint64_t);

// Seconds that `chain` takes for `iterations`.
double Time(Chain chain, std::uint64_t iterations) {
  static volatile std::uint64_t sink;
  const std::uint64_t y = static_cast<std::uint64_t>(std::rand() % 3 + 1);
  const auto start = std::chrono::steady_clock::now();
  sink = chain(iterations, sink, y);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

bool ClockPlausible(double ghz, double two_chains, std::string* note) {
  if (!(ghz >= 0.3 && ghz <= 7.0)) {
    *note = "a clock of " + std::to_string(ghz) +
            " GHz is outside 0.3-7 GHz (an emulator, or adds that are not "
            "one cycle)";
    return false;
  }
  if (!(two_chains >= 0.75 && two_chains <= 1.3)) {
    *note = "two independent add chains take " + std::to_string(two_chains) +
            " times one chain's time per add (expected about 1: one chain "
            "is not bound by the add's latency)";
    return false;
  }
  note->clear();
  return true;
}

double ModelNameGhz(const std::string& model_name) {
  const std::size_t ghz = model_name.find("GHz");
  if (ghz == std::string::npos) return 0.0;
  std::size_t begin = ghz;
  while (begin > 0 &&
         (std::isdigit(static_cast<unsigned char>(model_name[begin - 1])) ||
          model_name[begin - 1] == '.')) {
    --begin;
  }
  if (begin == ghz) return 0.0;
  return std::atof(model_name.substr(begin, ghz - begin).c_str());
}

ClockEstimate MeasureClock() {
  // Calibrate: double the iterations until one sample takes 2 ms, running
  // long enough (~50 ms) for the core to leave any idle clock first.
  std::uint64_t iterations = 1024;
  double seconds = 0.0;
  const auto warm_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while ((seconds = Time(&OneChain, iterations)) < 2e-3 ||
         std::chrono::steady_clock::now() < warm_until) {
    if (seconds < 2e-3) iterations *= 2;
  }
  // 2-3 ms samples, alternating one and two chains so that a slow phase of
  // the machine hits both alike.
  constexpr int kSamples = 41;
  std::vector<double> one, two;
  for (int i = 0; i < kSamples; ++i) {
    one.push_back(Time(&OneChain, iterations));
    two.push_back(Time(&TwoChains, iterations));
  }
  std::sort(one.begin(), one.end());
  std::sort(two.begin(), two.end());
  const double adds = static_cast<double>(iterations) * kAddsPerIteration;
  ClockEstimate e;
  e.samples = kSamples;
  e.ghz = adds / one.front() * 1e-9;
  e.median_ghz = adds / one[kSamples / 2] * 1e-9;
  e.spread = 1.0 - e.median_ghz / e.ghz;
  // Each iteration of TwoChains runs 64 adds on each chain: latency-bound,
  // it takes as long as an iteration of OneChain.
  e.two_chains = two.front() / one.front();
  e.plausible = ClockPlausible(e.ghz, e.two_chains, &e.note);
  return e;
}

}  // namespace rlx::bench
