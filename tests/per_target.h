// SPDX-License-Identifier: MIT OR Apache-2.0
// Runs a test once per target this build compiled and this CPU supports,
// through the public dispatch (rlx::force_target), with the target's name in
// the test name: `PerTarget/DecodeMaskTest.Foo/AVX2`.
#ifndef RLX_TESTS_PER_TARGET_H_
#define RLX_TESTS_PER_TARGET_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "rlx/targets.h"

namespace rlx::testing {

class PerTargetTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    force_target(GetParam());
    ASSERT_EQ(active_target(), GetParam());
  }
  void TearDown() override { force_target(""); }
};

inline std::string TargetParamName(
    const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

// Scales randomized iteration counts: the emulated (qemu) legs of the test
// command set RLX_TEST_SCALE below 1 to fit their time budget. Exhaustive
// sweeps are never scaled.
inline double TestScale() {
  const char* s = std::getenv("RLX_TEST_SCALE");
  return s ? std::atof(s) : 1.0;
}

inline int ScaledIterations(int n) {
  const int scaled = static_cast<int>(n * TestScale());
  return scaled < 1 ? 1 : scaled;
}

}  // namespace rlx::testing

#define RLX_INSTANTIATE_PER_TARGET(Suite)                                   \
  INSTANTIATE_TEST_SUITE_P(PerTarget, Suite,                                \
                           ::testing::ValuesIn(::rlx::supported_targets()), \
                           ::rlx::testing::TargetParamName)

#endif  // RLX_TESTS_PER_TARGET_H_
