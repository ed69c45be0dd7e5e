// SPDX-License-Identifier: MIT OR Apache-2.0
// RLX_ATTN_TARGET is read at the first dispatch. Its own process, since no
// call may dispatch before the variable is set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "rlx/attn_mask.h"
#include "rlx/targets.h"

namespace rlx {
namespace {

using ::testing::HasSubstr;

TEST(TargetEnvTest, TheEnvironmentChoosesTheTargetAndBadNamesFailClearly) {
  ASSERT_EQ(setenv("RLX_ATTN_TARGET", "NOT_A_TARGET", 1), 0);
  try {
    bucket_decode_mask(0, 1);
    FAIL() << "a bad RLX_ATTN_TARGET was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("RLX_ATTN_TARGET"));
    EXPECT_THAT(e.what(), HasSubstr("NOT_A_TARGET"));
    EXPECT_THAT(e.what(), HasSubstr("supported targets: "));
  }
  EXPECT_THROW(active_target(), std::invalid_argument)
      << "the bad name is reported at every call, not only the first";

  // The portable fallback is the last supported target, runnable anywhere.
  const std::string fallback = supported_targets().back();
  ASSERT_EQ(setenv("RLX_ATTN_TARGET", fallback.c_str(), 1), 0);
  EXPECT_EQ(active_target(), fallback);
  EXPECT_EQ(bucket_decode_mask(1, 2), (std::vector<float>{1, 0, 1}));

  // Once chosen, the variable is not read again; force_target("") restores
  // the best target.
  ASSERT_EQ(setenv("RLX_ATTN_TARGET", "NOT_A_TARGET", 1), 0);
  EXPECT_EQ(active_target(), fallback);
  force_target("");
  EXPECT_EQ(active_target(), supported_targets().front());
}

}  // namespace
}  // namespace rlx
