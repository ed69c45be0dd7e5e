// SPDX-License-Identifier: MIT OR Apache-2.0
// The f32 buffer in which a 16-bit softmax row longer than the kernels'
// stack scratch keeps its exp values, one per thread. Plain C++.
//
// Why: the passes run on f32 (src/softmax_row-inl.h). A 16-bit row's kept
// keys are converted into a 32 KiB stack scratch (8192 keys); a row with
// more kept keys would otherwise recompute the exp of the rest in pass 3
// (one more exp per such key: D3bf16, 17001 kept keys, was 1.1x slower than
// f32 D3 for it). The buffer is allocated the first time a thread meets such
// a row, grown when it meets a longer one, and kept until the thread exits:
// a decode loop allocates once per thread, never per call.
#ifndef RLX_SRC_THREAD_EXP_BUFFER_H_
#define RLX_SRC_THREAD_EXP_BUFFER_H_

#include <cstddef>

namespace rlx::detail {

// Alignment of the buffer: a cache line, as the stack scratch's, so that the
// exp pass splits its stores (and its sums) at the same keys in both.
inline constexpr std::size_t kThreadExpBufferAlign = 64;

// This thread's buffer of at least `floats` floats, 64-byte aligned, or null
// when `floats` exceeds the limit or the allocation fails: the caller then
// recomputes what does not fit its stack scratch. Valid until the thread's
// next call.
float* ThreadExpBuffer(std::size_t floats);

// The largest buffer ThreadExpBuffer hands out, in floats (default
// kDefaultThreadExpBufferFloats, 64 MiB: rows of 16M kept keys); returns the
// previous limit. Tests set 0 to exercise the recompute path; a process
// short of memory may lower it. Applies to later calls on every thread.
inline constexpr std::size_t kDefaultThreadExpBufferFloats = std::size_t{1}
                                                             << 24;
std::size_t SetThreadExpBufferLimit(std::size_t floats);

}  // namespace rlx::detail

#endif  // RLX_SRC_THREAD_EXP_BUFFER_H_
