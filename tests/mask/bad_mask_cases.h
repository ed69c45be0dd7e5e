// SPDX-License-Identifier: MIT OR Apache-2.0
// A bad mask is rejected by every entry point that takes one: apply_mask,
// masked_softmax and kept_keys each throw, naming themselves and the bad
// value, and write nothing.
#ifndef RLX_TESTS_MASK_BAD_MASK_CASES_H_
#define RLX_TESTS_MASK_BAD_MASK_CASES_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "tests/common/error_of.h"

namespace rlx::testing {

// A mask for scores of shape [1, 1, 2, 8] and a part of its error message.
struct BadMask {
  MaskSpec mask;
  std::string text;
};

inline void ExpectRejectedEverywhere(const BadMask& c) {
  std::vector<float> s(2 * 8, 1.5f);
  const std::vector<float> before = s;
  const ScoreView scores = ScoreView::f32(s.data(), {1, 1, 2, 8});
  for (const auto& [who, call] :
       std::vector<std::pair<std::string, std::function<void()>>>{
           {"apply_mask", [&] { apply_mask(scores, c.mask); }},
           {"masked_softmax", [&] { masked_softmax(scores, c.mask); }},
           {"kept_keys", [&] { kept_keys(c.mask, 0, 1, 2, 8); }}}) {
    const std::string error = ErrorOf(call);
    EXPECT_THAT(error, ::testing::HasSubstr(who + ": "));
    EXPECT_THAT(error, ::testing::HasSubstr(c.text));
    EXPECT_EQ(s, before) << error;
  }
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_MASK_BAD_MASK_CASES_H_
