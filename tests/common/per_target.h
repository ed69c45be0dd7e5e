// SPDX-License-Identifier: MIT OR Apache-2.0
// Runs a test once per target this build compiled, through the public
// dispatch (rlx::force_target), with the target's name in the test name:
// `PerTarget/DecodeMaskTest.Foo/AVX2`. The list of tests is the same on every
// CPU, so that a build tree's tests can be listed once and run under several
// emulated CPUs.
//
// A compiled target this CPU cannot run is skipped, saying so, when the test
// run declared the CPU's targets (RLX_EXPECT_TARGETS, set by the emulated
// legs, whose CPU model fixes them) and left it out. It fails when the run
// expected it, and under CI=true when nothing was declared: a target whose
// tests could not run is never a silent pass.
#ifndef RLX_TESTS_COMMON_PER_TARGET_H_
#define RLX_TESTS_COMMON_PER_TARGET_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "rlx/targets.h"

namespace rlx::testing {

inline std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

inline bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

inline bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

class PerTargetTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& target = GetParam();
    if (!Contains(supported_targets(), target)) {
      const char* declared = std::getenv("RLX_EXPECT_TARGETS");
      if (declared != nullptr) {
        ASSERT_FALSE(Contains(SplitCommas(declared), target))
            << target << " is expected (RLX_EXPECT_TARGETS=" << declared
            << ") but this CPU does not support it";
        GTEST_SKIP() << target << " is compiled but not a target of this "
                     << "CPU (RLX_EXPECT_TARGETS=" << declared << ")";
      }
      ASSERT_FALSE(UnderCi())
          << target << " is compiled but this CPU cannot run it, and the "
          << "run declared no RLX_EXPECT_TARGETS: its tests cannot run here";
      GTEST_SKIP() << target << " is compiled but this CPU cannot run it";
    }
    force_target(target);
    ASSERT_EQ(active_target(), target);
    // Which code a dispatch reaches, as that code reports it.
    ASSERT_EQ(dispatched_target(), target);
  }
  void TearDown() override { force_target(""); }
};

inline std::string TargetParamName(
    const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

// Scales randomized iteration counts and the strides of the large sweeps:
// the emulated (qemu), sanitizer and shared-library legs of the test
// command set RLX_TEST_SCALE below 1 to fit their time budget (the release
// leg runs every iteration on the same targets).
inline double TestScale() {
  const char* s = std::getenv("RLX_TEST_SCALE");
  return s ? std::atof(s) : 1.0;
}

inline int ScaledIterations(int n) {
  const int scaled = static_cast<int>(n * TestScale());
  return scaled < 1 ? 1 : scaled;
}

}  // namespace rlx::testing

#define RLX_INSTANTIATE_PER_TARGET(Suite)                                  \
  INSTANTIATE_TEST_SUITE_P(PerTarget, Suite,                               \
                           ::testing::ValuesIn(::rlx::compiled_targets()), \
                           ::rlx::testing::TargetParamName)

// A per-target test whose body `Function` is Highway code of the test file
// itself, re-included per target (Highway's test pattern), run through the
// library's own dispatch table (the file is compiled with the library's
// targets), so that its list and skips follow PerTargetTest like every other
// per-target test. At namespace scope in the file's HWY_ONCE part, after
// hwy/highway.h and src/dispatch/dispatch.h.
#define RLX_PER_TARGET_HWY_TEST(Suite, Name, Function)   \
  HWY_EXPORT(Function);                                  \
  class Suite : public ::rlx::testing::PerTargetTest {}; \
  RLX_INSTANTIATE_PER_TARGET(Suite);                     \
  TEST_P(Suite, Name) { RLX_DYNAMIC_DISPATCH(Function)(); }

#endif  // RLX_TESTS_COMMON_PER_TARGET_H_
