// SPDX-License-Identifier: MIT OR Apache-2.0
// The one place that decides which code runs a masked_softmax row:
// `enum class RowPath` names every path, ChooseRowPath picks one from the
// call's facts (its mask rules, options, row type) and the row's facts
// (what its kept intervals and keep bytes turned out to be). The row loops
// (src/softmax/row_loop-inl.h and the loops it calls) compute the facts and
// switch on the answer; no loop falls back from one path to another that
// ChooseRowPath did not name. Plain C++, no Highway.
//
// clang-format off
// path              source (src/softmax/*-inl.h)       unit (src/softmax/*.cc)
// kPlainBatch       plain_loop, plain_passes           row_loop
// kPlainAlibiBatch  plain_loop, plain_passes           row_loop
// kDecodeRun        plain_loop, plain_passes           row_loop
// kPlainHandOff     plain_loop, then general_loop      row_loop
// kDenseOnlyF32     general_loop (DenseF32RowsOf),     row_loop,
//                   general_row_units                  general_row_dense_keep
// kDenseKeep        general_loop, general_row_units    general_row_dense_keep
// kIntervals        general_loop, general_row          row_loop
// kBias             general_loop, general_row          row_loop
// kKeepBytes        general_loop, general_row_units    general_row_keep_bytes
// kKeepByteTiles    general_loop, general_row_units    general_row_keep_bytes
// kVectorMap        general_loop, general_row_units,   general_row_keep_bytes
//                   softmax_vector_map
// kAlibiImplicit    general_loop, general_row_units    general_row_alibi
// kAlibiExplicit    general_loop, general_row_units    general_row_alibi_explicit
// kKeyList          key_list_softmax                   key_list_softmax
// kBlockList        block_list_softmax                 block_list_softmax
// clang-format on
//
// docs/KERNELS.md ("Which code runs for a row") has the same table with what
// each path's rows are. A new path is a new row of RLX_ROW_PATHS, a case in
// ChooseRowPath and in the switches over RowPath (no `default:`, so -Wswitch
// names each), a row of both tables and a test in
// tests/softmax/softmax_row_path_test.cc. A path that takes a whole call
// (key lists, block lists) is decided from CallFacts alone.
#ifndef RLX_SRC_SOFTMAX_ROW_PATH_H_
#define RLX_SRC_SOFTMAX_ROW_PATH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "src/mask/mask_rows.h"

namespace rlx::detail {

// X(name, what its rows are). The order is the tables' order.
#define RLX_ROW_PATHS(X)                                                    \
  X(kPlainBatch, "plain rows (interval rules, no ALiBi) in batches")        \
  X(kPlainAlibiBatch, "plain rows with ALiBi over implicit key positions")  \
  X(kDecodeRun, "plain single-query rows, runs of heads sharing intervals") \
  X(kPlainHandOff,                                                          \
    "a plain row whose pass-1 maximum does not fit the "                    \
    "plain argument: handed to the general row code")                       \
  X(kDenseOnlyF32, "f32 rows of a dense f32/u8 keep mask or bias alone")    \
  X(kDenseKeep, "16-bit rows of a dense f32/u8 keep mask alone")            \
  X(kIntervals, "general rows of interval rules (NoSource)")                \
  X(kBias,                                                                  \
    "general rows of a bias (BiasSource), with interval rules or "          \
    "alone (16-bit rows)")                                                  \
  X(kKeepBytes, "rows of per-element rules: keep bytes in one piece")       \
  X(kKeepByteTiles, "rows of per-element rules: keep bytes tile by tile")   \
  X(kVectorMap, "keep-byte rows whose vectors are classed by a vector map") \
  X(kAlibiImplicit, "general rows with ALiBi over implicit key positions")  \
  X(kAlibiExplicit, "rows with ALiBi over explicit key positions")          \
  X(kKeyList,                                                               \
    "rows of a key list: the listed keys alone, gathered, whatever the "    \
    "other rules")                                                          \
  X(kBlockList,                                                             \
    "rows of a block list: the listed blocks alone, whole rows or split "   \
    "parts")

enum class RowPath : std::uint8_t {
#define RLX_ROW_PATH_ENUMERATOR(name, what) name,
  RLX_ROW_PATHS(RLX_ROW_PATH_ENUMERATOR)
#undef RLX_ROW_PATH_ENUMERATOR
};

inline constexpr std::size_t kRowPathCount = 0
#define RLX_ROW_PATH_COUNT(name, what) +1
    RLX_ROW_PATHS(RLX_ROW_PATH_COUNT)
#undef RLX_ROW_PATH_COUNT
    ;

const char* NameOf(RowPath path);

// What a call tells about all its rows.
struct CallFacts {
  bool f32 = true;          // f32 rows (16-bit rows convert into a scratch)
  bool split_part = false;  // step 1 of a split row (rlx/softmax_split.h)
  bool alibi = false;       // options.alibi_slopes
  // No softcap and scale >= 0: the maximum of the raw scores is exact.
  bool plain_options = true;
  bool decode_step = false;  // q_len 1
  DenseKind dense = DenseKind::kNone;
  bool per_element = false;  // Rules::per_element
  bool explicit_keys = false;
  bool dense_only = false;  // Rules::dense_only
  // Rules::key_list: the whole call runs on the key-list kernel. The split
  // softmax rejects key lists before it gets here.
  bool key_list = false;
  // Rules::block_list: the whole call (whole rows or split parts) runs on
  // the block-list kernel. A mask with both lists is rejected.
  bool block_list = false;
};

inline CallFacts CallFactsOf(const Rules& rules, const SoftmaxOptions& options,
                             ScoreType type, std::size_t q_len,
                             bool split_part) {
  CallFacts c;
  c.f32 = type == ScoreType::kF32;
  c.split_part = split_part;
  c.alibi = options.alibi_slopes != nullptr;
  c.plain_options = !(options.softcap > 0.0f) && options.scale >= 0.0f;
  c.decode_step = q_len == 1;
  c.dense = rules.dense;
  c.per_element = rules.per_element;
  c.explicit_keys = rules.explicit_keys;
  c.dense_only = rules.dense_only;
  c.key_list = rules.key_list;
  c.block_list = rules.block_list;
  return c;
}

// What the row loop has found out about a row by the time it asks.
struct RowFacts {
  // The plain loop: the row keeps at least one key, at most the plain row
  // limit, and (ALiBi) every distance is exact in f32. False in the
  // general loop, which runs only rows that the plain loop did not take.
  bool fits_plain_batch = true;
  // After a plain row's pass 1: its maximum is finite and takes the plain
  // exp argument.
  bool plain_max_fits = true;
  // The general loop: the row keeps some key (within its part's keys).
  bool kept_any = true;
  // Rows of per-element rules: their keep bytes span more keys than one
  // tile, and are read tile by tile.
  bool bytes_tiled = false;
  // Rows of per-element rules in one piece: every key of the intervals the
  // bytes narrowed the row to is kept.
  bool bytes_all_kept = false;
  // ... and the narrowed row is one interval at least an eighth of whose
  // whole vectors are empty.
  bool map_pays = false;
};

// Whether a call's rows are those of a dense part alone, read directly:
// not under ALiBi (the rule sources serve them, so that ALiBi wraps fewer
// sources), and never bit masks (they go through the keep bytes).
constexpr bool ReadsDenseRows(const CallFacts& c) {
  return c.dense_only && !c.alibi && c.dense != DenseKind::kKeepBits;
}

// Whether a call's rows of some keys read keep bytes.
constexpr bool CallReadsKeepBytes(const CallFacts& c) {
  return !ReadsDenseRows(c) &&
         (c.per_element || (c.dense_only && c.dense != DenseKind::kBias));
}

// Whether a row of the general loop reads its keep bytes: rows whose
// narrowed intervals keep every key drop them, but ALiBi over explicit key
// positions still reads its distances per element.
constexpr bool RowReadsKeepBytes(const CallFacts& c, const RowFacts& r) {
  return CallReadsKeepBytes(c) && r.kept_any &&
         (r.bytes_tiled ||
          !(r.bytes_all_kept && (!c.explicit_keys || !c.alibi)));
}

// Whether the call's rows may be plain: no mask source to read (no dense
// part, no per-element rule), no softcap, scale >= 0, whole rows.
constexpr bool CallMayBePlain(const CallFacts& c) {
  return !c.split_part && c.dense == DenseKind::kNone && !c.per_element &&
         c.plain_options;
}

// The decision (docs/KERNELS.md, "Which code runs for a row").
constexpr RowPath ChooseRowPath(const CallFacts& c, const RowFacts& r) {
  // Call-level paths: every row of the call, whatever its row facts.
  if (c.key_list) return RowPath::kKeyList;
  if (c.block_list) return RowPath::kBlockList;
  if (ReadsDenseRows(c)) {
    if (c.f32 && !c.split_part) return RowPath::kDenseOnlyF32;
    return c.dense == DenseKind::kBias ? RowPath::kBias : RowPath::kDenseKeep;
  }
  if (CallMayBePlain(c) && r.fits_plain_batch) {
    if (!r.plain_max_fits) return RowPath::kPlainHandOff;
    if (c.alibi) return RowPath::kPlainAlibiBatch;
    return c.decode_step ? RowPath::kDecodeRun : RowPath::kPlainBatch;
  }
  const bool bytes = RowReadsKeepBytes(c, r);
  if (c.alibi) {
    return bytes && c.explicit_keys ? RowPath::kAlibiExplicit
                                    : RowPath::kAlibiImplicit;
  }
  if (bytes) {
    if (r.bytes_tiled) return RowPath::kKeepByteTiles;
    // The map serves keep bytes alone: not under a bias.
    if (r.map_pays && !r.bytes_all_kept && c.dense != DenseKind::kBias) {
      return RowPath::kVectorMap;
    }
    return RowPath::kKeepBytes;
  }
  return c.dense == DenseKind::kBias ? RowPath::kBias : RowPath::kIntervals;
}

// Whether `path` is one of the plain loop's (the rows run in batches).
constexpr bool IsPlainPath(RowPath path) {
  return path == RowPath::kPlainBatch || path == RowPath::kPlainAlibiBatch ||
         path == RowPath::kDecodeRun;
}

// Test hook: per-path row counts of the calling thread, while counting is
// on. The loops count once per batch of rows (plain batches, a dense call)
// or per row (the general loop, whose rows each take their own decision;
// the key-list and block-list kernels count once per call, its row range):
// one relaxed load and a predicted branch while counting is off.
extern std::atomic<bool> g_count_row_paths;
void AddRowPathCount(RowPath path, std::size_t rows);
inline void CountRowPaths(RowPath path, std::size_t rows) {
  if (g_count_row_paths.load(std::memory_order_relaxed)) [[unlikely]] {
    AddRowPathCount(path, rows);
  }
}
// Turns counting on (for every thread) and zeroes this thread's counts.
void StartCountingRowPaths();
void StopCountingRowPaths();
// Rows this thread ran on `path` since StartCountingRowPaths.
std::uint64_t RowPathCount(RowPath path);

}  // namespace rlx::detail

#endif  // RLX_SRC_SOFTMAX_ROW_PATH_H_
