// SPDX-License-Identifier: MIT OR Apache-2.0
// The C API of the targets (rlx/targets.h): names as C strings with static
// storage.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/rlx_attn_mask.h"
#include "rlx/targets.h"
#include "src/c_api/c_api_error.h"

namespace {

using rlx::c_api::Guard;
using rlx::c_api::InvalidArgument;
using rlx::c_api::Record;

std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ',';
    joined += name;
  }
  return joined;
}

// The compiled target names, built once; active_target() always returns one
// of them, so its C string can point into this list.
const std::vector<std::string>& CompiledNames() {
  static const std::vector<std::string> names = rlx::compiled_targets();
  return names;
}

// One of CompiledNames()' strings (static storage) for the target `target`
// names: the C API hands out pointers that stay valid, never a temporary's.
const char* CompiledName(const std::string& target) {
  for (const std::string& compiled : CompiledNames()) {
    if (compiled == target) return compiled.c_str();
  }
  throw std::logic_error("target \"" + target +
                         "\" is not among the compiled targets");
}

}  // namespace

extern "C" {

rlx_status rlx_compiled_targets(const char** names) {
  constexpr const char* kFn = "rlx_compiled_targets";
  if (names == nullptr) return InvalidArgument(kFn, "names is NULL");
  return Guard(kFn, [&] {
    // Built once (thread-safe static initialisation; a throw leaves it to be
    // tried again) and kept for the life of the process.
    static const std::string joined = JoinNames(rlx::compiled_targets());
    *names = joined.c_str();
  });
}

rlx_status rlx_supported_targets(const char** names) {
  constexpr const char* kFn = "rlx_supported_targets";
  if (names == nullptr) return InvalidArgument(kFn, "names is NULL");
  return Guard(kFn, [&] {
    static const std::string joined = JoinNames(rlx::supported_targets());
    *names = joined.c_str();
  });
}

rlx_status rlx_active_target(const char** name) {
  constexpr const char* kFn = "rlx_active_target";
  if (name == nullptr) return InvalidArgument(kFn, "name is NULL");
  return Guard(kFn, [&] { *name = CompiledName(rlx::active_target()); });
}

rlx_status rlx_dispatched_target(const char** name) {
  constexpr const char* kFn = "rlx_dispatched_target";
  if (name == nullptr) return InvalidArgument(kFn, "name is NULL");
  return Guard(kFn, [&] { *name = CompiledName(rlx::dispatched_target()); });
}

rlx_status rlx_force_target(const char* name) {
  return Guard("rlx_force_target", [&] {
    rlx::force_target(name == nullptr ? std::string_view()
                                      : std::string_view(name));
  });
}

}  // extern "C"
