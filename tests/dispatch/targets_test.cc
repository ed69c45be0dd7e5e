// SPDX-License-Identifier: MIT OR Apache-2.0
// Target reporting and forcing. What holds on any CPU is checked always
// (supported targets are compiled, the best is active, forcing reaches each
// target's own code). An emulated leg, whose CPU model fixes its targets,
// also states them through RLX_EXPECT_TARGETS and the best through
// RLX_EXPECT_ACTIVE, so that a leg whose CPU or build lost a target fails
// instead of passing on fewer targets. Nothing here predicts the host CPU's
// targets: Highway's own detection (CPUID) is the authority.
#include "rlx/targets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "rlx/attn_mask.h"
#include "tests/common/per_target.h"

namespace rlx {
namespace {

using ::rlx::testing::Contains;
using ::rlx::testing::SplitCommas;
using ::testing::HasSubstr;

TEST(TargetsTest, SupportedAreCompiledAndTheBestIsActive) {
  const auto compiled = compiled_targets();
  const auto supported = supported_targets();
  ASSERT_FALSE(compiled.empty());
  ASSERT_FALSE(supported.empty());
  for (const auto& t : supported) EXPECT_TRUE(Contains(compiled, t)) << t;
  force_target("");
  EXPECT_EQ(active_target(), supported.front());
  std::cout << "compiled:";
  for (const auto& t : compiled) std::cout << ' ' << t;
  std::cout << "\nsupported:";
  for (const auto& t : supported) std::cout << ' ' << t;
  std::cout << "\nactive: " << active_target() << '\n';
}

TEST(TargetsTest, TheCpuOffersTheTargetsThisLegExpects) {
  const char* expected = std::getenv("RLX_EXPECT_TARGETS");
  const char* active = std::getenv("RLX_EXPECT_ACTIVE");
  ASSERT_EQ(expected == nullptr, active == nullptr)
      << "a leg states both RLX_EXPECT_TARGETS and RLX_EXPECT_ACTIVE or "
         "neither";
  if (expected != nullptr) {
    // The best expected target comes first and is the one chosen.
    ASSERT_FALSE(SplitCommas(expected).empty());
    EXPECT_EQ(SplitCommas(expected).front(), active);
    for (const auto& t : SplitCommas(expected)) {
      EXPECT_TRUE(Contains(supported_targets(), t))
          << "expected target " << t << " is not supported here";
    }
  }
  if (active != nullptr) {
    force_target("");
    EXPECT_EQ(active_target(), active);
  }
}

TEST(TargetsTest, ForceTargetSwitchesAndEmptyRestoresTheBest) {
  for (const auto& t : supported_targets()) {
    force_target(t);
    EXPECT_EQ(active_target(), t);
    EXPECT_EQ(dispatched_target(), t) << "the dispatch reached other code";
    // A dispatching call runs on the forced target and still works.
    EXPECT_EQ(bucket_decode_mask(1, 2), (std::vector<float>{1, 0, 1}));
  }
  force_target("");
  EXPECT_EQ(active_target(), supported_targets().front());
}

TEST(TargetsTest, UnknownTargetsAreRejectedListingTheValidOnes) {
  force_target("");
  const std::string before = active_target();
  try {
    force_target("AVX9000");
    FAIL() << "an unknown target was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("force_target"));
    EXPECT_THAT(e.what(), HasSubstr("\"AVX9000\""));
    EXPECT_THAT(e.what(),
                HasSubstr("supported targets: " + supported_targets().front()));
  }
  EXPECT_EQ(active_target(), before) << "a rejected name changed the target";
  // A target of this build that the CPU cannot run, if there is one.
  for (const auto& t : compiled_targets()) {
    if (Contains(supported_targets(), t)) continue;
    try {
      force_target(t);
      FAIL() << t << " is not supported but was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("not supported by this CPU"));
    }
  }
}

}  // namespace
}  // namespace rlx
