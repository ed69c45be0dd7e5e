// SPDX-License-Identifier: MIT OR Apache-2.0
// The pieces of the argument checks' error messages (std::invalid_argument
// naming the function and the values): shared by src/scores/score_kernels.cc
// and src/scores/list_checks.cc.
#ifndef RLX_SRC_SCORES_CHECK_MESSAGES_H_
#define RLX_SRC_SCORES_CHECK_MESSAGES_H_

#include <stdexcept>
#include <string>

#include "rlx/scores.h"
#include "src/util/checked_size.h"

namespace rlx::detail {

inline std::string ShapeString(const Shape4& s) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.heads) + ", " +
         std::to_string(s.q_len) + ", " + std::to_string(s.k_len) + "]";
}

inline std::string StridesString(const Strides3& s) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.head) + ", " +
         std::to_string(s.row) + "]";
}

[[noreturn]] inline void Fail(const char* who, const std::string& what) {
  throw std::invalid_argument(std::string(who) + ": " + what);
}

// "PTRDIFF_MAX (9223372036854775807)" on 64-bit targets.
inline std::string MaxSizeString() {
  return "PTRDIFF_MAX (" + std::to_string(kMaxSize) + ")";
}

}  // namespace rlx::detail

#endif  // RLX_SRC_SCORES_CHECK_MESSAGES_H_
