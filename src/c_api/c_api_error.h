// SPDX-License-Identifier: MIT OR Apache-2.0
// How the C API (src/c_api/c_api.cc, src/c_api/c_api_ladder_fit.cc) reports
// failures: one thread-local message buffer, the one rlx_last_error() hands
// out, and Guard, which turns every C++ exception into a status and a message
// so that no exception crosses into C or another language's frames.
#ifndef RLX_SRC_C_API_C_API_ERROR_H_
#define RLX_SRC_C_API_C_API_ERROR_H_

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "rlx/rlx_attn_mask.h"

namespace rlx::c_api {

// The header promises messages of up to 1023 bytes.
inline constexpr std::size_t kMessageCapacity = 1024;

// This thread's message. An inline function's static is one object in the
// whole library, whichever file records into it. A fixed buffer rather than
// a std::string: recording a failure must not itself allocate (it also
// reports out-of-memory) nor throw.
inline char* LastErrorBuffer() noexcept {
  thread_local char message[kMessageCapacity] = "";
  return message;
}

// Records "<function>: <printf-formatted detail>" for rlx_last_error.
[[gnu::format(printf, 2, 3)]] inline void Record(const char* function,
                                                 const char* format,
                                                 ...) noexcept {
  char* message = LastErrorBuffer();
  int used = std::snprintf(message, kMessageCapacity, "%s: ", function);
  if (used < 0) used = 0;
  if (static_cast<std::size_t>(used) >= kMessageCapacity) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(message + used, kMessageCapacity - used, format, args);
  va_end(args);
}

inline rlx_status Fail(rlx_status status, const char* function,
                       const char* detail) noexcept {
  Record(function, "%s", detail);
  return status;
}

inline rlx_status InvalidArgument(const char* function,
                                  const char* what) noexcept {
  return Fail(RLX_INVALID_ARGUMENT, function, what);
}

// Runs `body` and maps whatever it throws to a status. `body` returns void
// (RLX_OK when it returns) or an rlx_status of its own. The C++ messages
// name the C++ function and values; the C function's name is put in front.
template <class Body>
rlx_status Guard(const char* function, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      return RLX_OK;
    } else {
      return body();
    }
  } catch (const std::invalid_argument& e) {
    return Fail(RLX_INVALID_ARGUMENT, function, e.what());
  } catch (const std::bad_alloc&) {
    return Fail(RLX_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::length_error& e) {
    // A container asked for more than it can ever hold: too large for
    // memory, like bad_alloc, rather than a bug.
    Record(function, "out of memory: %s", e.what());
    return RLX_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    Record(function, "internal error: %s", e.what());
    return RLX_INTERNAL_ERROR;
  } catch (...) {
    return Fail(RLX_INTERNAL_ERROR, function,
                "internal error: an unknown exception");
  }
}

}  // namespace rlx::c_api

#endif  // RLX_SRC_C_API_C_API_ERROR_H_
