// SPDX-License-Identifier: MIT OR Apache-2.0
// The library's own dispatch: every HWY_EXPORT table of this library is
// indexed by the target rlx::force_target / RLX_ATTN_TARGET chose, kept apart
// from Highway's process-wide choice so that forcing a target here never
// changes what other Highway users in the process run.
//
// Include after hwy/highway.h, in the HWY_ONCE part of a dispatching .cc.
#ifndef RLX_SRC_DISPATCH_DISPATCH_H_
#define RLX_SRC_DISPATCH_DISPATCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rlx::detail {

// Index of the active target in an HWY_EXPORT table; -1 until chosen.
extern std::atomic<std::int32_t> g_dispatch_index;

// Chooses the active target (RLX_ATTN_TARGET or the best supported one) and
// returns its table index. Throws std::invalid_argument if RLX_ATTN_TARGET is
// unknown or unsupported; it is then read again at the next call.
std::size_t ChooseDispatchIndex();

// One relaxed-cost load per kernel call: call it once per public entry point,
// never per row.
inline std::size_t DispatchIndex() {
  const std::int32_t index = g_dispatch_index.load(std::memory_order_acquire);
  return index >= 0 ? static_cast<std::size_t>(index) : ChooseDispatchIndex();
}

}  // namespace rlx::detail

// Like HWY_DYNAMIC_DISPATCH(FUNC), but dispatching to this library's target.
#define RLX_DYNAMIC_DISPATCH(FUNC_NAME) \
  (*(HWY_DISPATCH_TABLE(FUNC_NAME)[::rlx::detail::DispatchIndex()]))

namespace rlx::detail {

// The entry of `table` for the active target or, where the table's unit
// left that target out (a null entry), for the next weaker one it compiled:
// entries run from the best target to the weakest, and the last (the
// baseline) is always there.
template <class F, std::size_t N>
F NearestCompiled(F const (&table)[N]) {
  for (std::size_t i = DispatchIndex(); i + 1 < N; ++i) {
    if (table[i] != nullptr) return table[i];
  }
  return table[N - 1];
}

}  // namespace rlx::detail

// RLX_DYNAMIC_DISPATCH for units that compile fewer targets than the rest
// (src/softmax/softmax_rows_targets.h): their code for the nearest compiled
// target.
#define RLX_DYNAMIC_DISPATCH_NEAREST(FUNC_NAME) \
  (*::rlx::detail::NearestCompiled(HWY_DISPATCH_TABLE(FUNC_NAME)))

#endif  // RLX_SRC_DISPATCH_DISPATCH_H_
