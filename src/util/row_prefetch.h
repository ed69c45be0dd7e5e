// SPDX-License-Identifier: MIT OR Apache-2.0
// Software prefetch of the next score row, spread over the current row's
// exp pass. Plain C++ (Highway's Prefetch is target-independent).
//
// Why: a softmax row is read three times and written twice, so it is worth
// having in L1; but rows of a decode batch (32 x 4097 f32 = 512 KiB) live in
// L2, and the hardware streamers only fetch a row once its first misses are
// seen, so every pass-1 and zero-fill line of a new row waits on L2. The exp
// pass of the current row is compute-bound with load slots to spare: a few
// prefetches per step of it bring the next row into L1 before it is needed.
// Prefetching is a hint: it never faults and never changes a result, so the
// ranges may cover bytes (masked keys, stride gaps) that are never read.
#ifndef RLX_SRC_UTIL_ROW_PREFETCH_H_
#define RLX_SRC_UTIL_ROW_PREFETCH_H_

#include <algorithm>
#include <cstddef>

#include "hwy/cache_control.h"

namespace rlx::detail {

class RowPrefetch {
 public:
  static constexpr std::size_t kLine = 64;
  // At most this many lines per step, so that one step never floods the
  // core's miss buffers.
  static constexpr std::size_t kMaxLinesPerStep = 16;

  static constexpr std::size_t kRanges = 3;

  // Plans the prefetch of the byte ranges [begin[i], begin[i] + bytes[i])
  // (empty, or equal to an earlier one, is skipped) over `steps` calls of
  // Step().
  void Plan(const void* const (&begin)[kRanges],
            const std::size_t (&bytes)[kRanges], std::size_t steps) {
    std::size_t lines = 0;
    for (std::size_t i = 0; i < kRanges; ++i) {
      bool repeated = false;
      for (std::size_t j = 0; j < i; ++j) repeated |= begin[j] == begin[i];
      ranges_[i] = {static_cast<const char*>(begin[i]),
                    repeated ? 0 : bytes[i]};
      lines += (ranges_[i].bytes + kLine - 1) / kLine;
    }
    range_ = 0;
    offset_ = 0;
    steps = std::max<std::size_t>(steps, 1);
    lines_per_step_ = std::clamp<std::size_t>((lines + steps - 1) / steps, 1,
                                              kMaxLinesPerStep);
  }

  // Nothing planned (the last row of a range).
  void Clear() {
    range_ = kRanges - 1;
    offset_ = ranges_[range_].bytes = 0;
  }

  // Prefetches what is left of the plan, at most kMaxLinesAtFinish lines:
  // rows with few kept keys run out of steps before their plan is done.
  // A tight loop per range, its position in locals: written as a check per
  // line, GCC kept offset_ in memory and spread the loop over scattered
  // blocks, and its speed on rows that wait on miss buffers came to depend
  // on where the linker placed it.
  static constexpr std::size_t kMaxLinesAtFinish = 128;
  void Finish() {
    std::size_t budget = kMaxLinesAtFinish;
    while (budget != 0 && LinesLeft()) {
      const Range& range = ranges_[range_];
      const std::size_t lines =
          std::min(budget, (range.bytes - offset_ + kLine - 1) / kLine);
      const char* p = range.begin + offset_;
      for (std::size_t i = 0; i < lines; ++i) hwy::Prefetch(p + i * kLine);
      offset_ += lines * kLine;
      budget -= lines;
    }
  }
  // Prefetches the next lines_per_step_ lines of the plan (the last step of
  // a range may reach up to lines_per_step_ - 1 lines past its end: harmless,
  // and cheaper than a check per line).
  HWY_INLINE void Step() {
    if (!LinesLeft()) return;
    const char* p = ranges_[range_].begin + offset_;
    for (std::size_t i = 0; i < lines_per_step_; ++i) {
      hwy::Prefetch(p + i * kLine);
    }
    offset_ += lines_per_step_ * kLine;
  }

 private:
  // Moves to the first range with lines left; false when the plan is done.
  HWY_INLINE bool LinesLeft() {
    while (offset_ >= ranges_[range_].bytes) {
      if (range_ + 1 == kRanges) return false;
      ++range_;
      offset_ = 0;
    }
    return true;
  }
  struct Range {
    const char* begin = nullptr;
    std::size_t bytes = 0;
  };
  Range ranges_[kRanges];
  // The range being prefetched; offset_ >= its bytes when it is done.
  std::size_t range_ = kRanges - 1, offset_ = 0, lines_per_step_ = 0;
};

}  // namespace rlx::detail

#endif  // RLX_SRC_UTIL_ROW_PREFETCH_H_
