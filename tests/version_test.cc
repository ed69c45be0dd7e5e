// SPDX-License-Identifier: MIT OR Apache-2.0
// One version everywhere: the header's macros, rlx::version() and
// rlx_version() all say CMake's project(VERSION), which the build passes in
// as RLX_EXPECTED_VERSION.
#include <gtest/gtest.h>
#include <rlx/version.h>

#include <string>

#include "rlx/rlx_attn_mask.h"

namespace rlx {
namespace {

TEST(VersionTest, EveryFormSaysTheProjectVersion) {
  const std::string expected = RLX_EXPECTED_VERSION;
  EXPECT_EQ(std::string(RLX_ATTN_MASK_VERSION_STRING), expected);
  EXPECT_EQ(std::to_string(RLX_ATTN_MASK_VERSION_MAJOR) + "." +
                std::to_string(RLX_ATTN_MASK_VERSION_MINOR) + "." +
                std::to_string(RLX_ATTN_MASK_VERSION_PATCH),
            expected);
  EXPECT_EQ(RLX_ATTN_MASK_VERSION_NUMBER,
            RLX_ATTN_MASK_VERSION_MAJOR * 10000 +
                RLX_ATTN_MASK_VERSION_MINOR * 100 +
                RLX_ATTN_MASK_VERSION_PATCH);
  EXPECT_EQ(version(), expected);
  ASSERT_NE(rlx_version(), nullptr);
  EXPECT_EQ(std::string(rlx_version()), expected);
}

}  // namespace
}  // namespace rlx
