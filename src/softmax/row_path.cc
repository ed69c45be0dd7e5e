// SPDX-License-Identifier: MIT OR Apache-2.0
// RowPath's names and the row-path counters of src/softmax/row_path.h.
#include "src/softmax/row_path.h"

#include <array>

namespace rlx::detail {

const char* NameOf(RowPath path) {
  switch (path) {
#define RLX_ROW_PATH_NAME(name, what) \
  case RowPath::name:                 \
    return #name;
    RLX_ROW_PATHS(RLX_ROW_PATH_NAME)
#undef RLX_ROW_PATH_NAME
  }
  return "?";
}

std::atomic<bool> g_count_row_paths{false};

namespace {
thread_local std::array<std::uint64_t, kRowPathCount> t_row_path_counts{};
}  // namespace

void AddRowPathCount(RowPath path, std::size_t rows) {
  t_row_path_counts[static_cast<std::size_t>(path)] += rows;
}

void StartCountingRowPaths() {
  t_row_path_counts.fill(0);
  g_count_row_paths.store(true, std::memory_order_relaxed);
}

void StopCountingRowPaths() {
  g_count_row_paths.store(false, std::memory_order_relaxed);
}

std::uint64_t RowPathCount(RowPath path) {
  return t_row_path_counts[static_cast<std::size_t>(path)];
}

}  // namespace rlx::detail
