// SPDX-License-Identifier: MIT OR Apache-2.0
// The f32 buffer in which a 16-bit softmax row longer than the kernels'
// stack scratch keeps its exp values, one per thread. Plain C++.
//
// Why: the passes run on f32 (src/softmax/general_row-inl.h). A 16-bit row's
// kept keys are converted into a 32 KiB stack scratch (kStackExpKeys keys); a
// longer row would otherwise recompute exps. The buffer is allocated the first
// time a thread meets such a row, grown when it meets a longer one, and kept
// until the thread exits: a decode loop allocates once per thread, never per
// call. masked_softmax takes it before it writes any row, so that a failed
// allocation is an error that wrote nothing.
#ifndef RLX_SRC_SOFTMAX_THREAD_EXP_BUFFER_H_
#define RLX_SRC_SOFTMAX_THREAD_EXP_BUFFER_H_

#include <cstddef>

#include "rlx/scores.h"

namespace rlx::detail {

// Keys of the longest 16-bit row whose exp values fit the stack scratch.
inline constexpr std::size_t kStackExpKeys = 8192;

// Floats of work a 16-bit row of `k_len` keys needs: every kept key, plus
// up to two 64-byte lines per kept interval, which starts at its key's
// offset within a line and rounds its end up to a line.
constexpr std::size_t ExpWorkFloats(std::size_t k_len) {
  return k_len + 2 * (64 / sizeof(float)) * KeptKeys::kMaxIntervals;
}

// Alignment of the buffer: a cache line, as the stack scratch's, so that the
// exp pass splits its stores (and its sums) at the same keys in both.
inline constexpr std::size_t kThreadExpBufferAlign = 64;

// This thread's buffer of at least `floats` floats, 64-byte aligned, or null
// when it must grow beyond the limit or the allocation fails. Once it has
// returned a buffer, it returns one for as many floats or fewer until the
// thread exits. Valid until the thread's next call.
float* ThreadExpBuffer(std::size_t floats);

// The largest buffer ThreadExpBuffer allocates, in floats (default: no
// limit); returns the previous limit. Tests lower it to see the error of a
// failed allocation. Applies to later calls on every thread.
std::size_t SetThreadExpBufferLimit(std::size_t floats);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_THREAD_EXP_BUFFER_H_
