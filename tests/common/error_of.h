// SPDX-License-Identifier: MIT OR Apache-2.0
// The message of the std::invalid_argument `f` throws, or "(no error)": lets
// a test assert what an error names.
#ifndef RLX_TESTS_COMMON_ERROR_OF_H_
#define RLX_TESTS_COMMON_ERROR_OF_H_

#include <functional>
#include <stdexcept>
#include <string>

namespace rlx::testing {

inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_COMMON_ERROR_OF_H_
