// SPDX-License-Identifier: MIT OR Apache-2.0
// The core's clock, measured the way microbenchmark suites do when the OS
// does not say: a chain of dependent integer adds (one cycle of latency
// each on every x86 and Arm core of the last decade) timed with the steady
// clock. docs/BENCHMARKING.md, "Cycles per element", states the method and
// its error.
#ifndef RLX_BENCH_HARNESS_CLOCK_H_
#define RLX_BENCH_HARNESS_CLOCK_H_

#include <string>

namespace rlx::bench {

struct ClockEstimate {
  double ghz = 0.0;         // the fastest sample: the least disturbed
  double median_ghz = 0.0;  // the median sample
  double spread = 0.0;      // 1 - median / fastest
  int samples = 0;
  // Time per add of two independent chains in one loop over that of one
  // chain: about 1 when one chain is bound by the add's latency (a cycle)
  // and not by the loop or the front end.
  double two_chains = 0.0;
  bool plausible = false;
  std::string note;  // why not plausible, or empty
};

// Measures for about 0.3 s.
ClockEstimate MeasureClock();

// Whether an estimate is plausible: 0.3 to 7 GHz and two chains taking
// 0.75 to 1.3 times one chain's time per add; `note` says why not.
bool ClockPlausible(double ghz, double two_chains, std::string* note);

// The clock a CPU model name states ("... @ 2.10GHz"), in GHz, or 0.
double ModelNameGhz(const std::string& model_name);

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_CLOCK_H_
