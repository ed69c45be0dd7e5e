// SPDX-License-Identifier: MIT OR Apache-2.0
// masked_softmax over a range of rows of any row type: the entry of the
// softmax row loops. ChooseRowPath (src/softmax/row_path.h) decides, from
// the call's facts, which loop takes the call: the key-list or block-list
// kernel (src/softmax/{key,block}_list_softmax.h), the plain loop
// (src/softmax/plain_loop-inl.h, which hands the rows that do not fit a
// batch to the general loop), the loop of f32 rows of a dense mask alone,
// or the general loop (src/softmax/general_loop-inl.h), whose rows each
// take their own path. Re-included per target by src/softmax/row_loop.cc;
// arguments are validated by the caller (score_kernels.cc).

#if defined(RLX_SRC_SOFTMAX_ROW_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RLX_SRC_SOFTMAX_ROW_LOOP_INL_H_
#undef RLX_SRC_SOFTMAX_ROW_LOOP_INL_H_
#else
#define RLX_SRC_SOFTMAX_ROW_LOOP_INL_H_
#endif

#include "hwy/highway.h"
#include "rlx/score_kernels.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/block_list_softmax.h"
#include "src/softmax/general_loop-inl.h"
#include "src/softmax/key_list_softmax.h"
#include "src/softmax/plain_loop-inl.h"
#include "src/softmax/row_path.h"
#include "src/softmax/softmax_rows.h"

HWY_BEFORE_NAMESPACE();
namespace rlx {
namespace HWY_NAMESPACE {

// The rows of one row type, on the loop of the call's path.
template <ScoreType kType>
void SoftmaxRowsOf(const ScoreView& in, const ScoreView& out,
                   const MaskSpec& mask, const SoftmaxOptions& options,
                   RowRange rows, const detail::RowPart* part) {
  const detail::Rules rules = detail::RulesOf(mask);
  const detail::CallFacts call = detail::CallFactsOf(
      rules, options, kType, in.shape.q_len, part != nullptr);
  // The path of a row that fits a plain batch: every row's path when the
  // call's facts alone decide it.
  switch (detail::ChooseRowPath(call, detail::RowFacts{})) {
    case detail::RowPath::kPlainBatch:
    case detail::RowPath::kPlainAlibiBatch:
    case detail::RowPath::kDecodeRun: {
      const auto general = [&](const ScoreView& from,
                               const SoftmaxOptions& with, RowRange some) {
        GeneralRowsOf<kType>(from, out, mask, with, some);
      };
      PlainLoop<kType, decltype(general)>(in, out, mask, options, rows, rules,
                                          call, general)
          .Run();
      return;
    }
    case detail::RowPath::kDenseOnlyF32:
      if constexpr (kType == ScoreType::kF32) {
        return DenseF32RowsOf(in, out, mask, rules, options, rows);
      }
      break;  // unreachable: only f32 calls take it
    case detail::RowPath::kKeyList:
      // Every row reads and writes its listed keys alone
      // (src/softmax/key_list_softmax-inl.h, its own unit and dispatch).
      // The split softmax rejects key lists: no part here.
      HWY_DASSERT(part == nullptr);
      return detail::KeyListSoftmaxRows(in, out, mask, options, rows);
    case detail::RowPath::kBlockList:
      // Every row walks its listed blocks alone, whole or split
      // (src/softmax/block_list_softmax-inl.h, its own unit and dispatch).
      return detail::BlockListSoftmaxRows(in, out, mask, options, rows, part);
    case detail::RowPath::kPlainHandOff:  // a row's, after its pass 1
    case detail::RowPath::kDenseKeep:
    case detail::RowPath::kIntervals:
    case detail::RowPath::kBias:
    case detail::RowPath::kKeepBytes:
    case detail::RowPath::kKeepByteTiles:
    case detail::RowPath::kVectorMap:
    case detail::RowPath::kAlibiImplicit:
    case detail::RowPath::kAlibiExplicit:
      break;
  }
  GeneralRowsOf<kType>(in, out, mask, options, rows, part);
}

void SoftmaxRows(const ScoreView& in, const ScoreView& out,
                 const MaskSpec& mask, const SoftmaxOptions& options,
                 RowRange rows, const detail::RowPart* part) {
  switch (in.type) {
    case ScoreType::kF32:
      return SoftmaxRowsOf<ScoreType::kF32>(in, out, mask, options, rows, part);
    case ScoreType::kBF16:
      return SoftmaxRowsOf<ScoreType::kBF16>(in, out, mask, options, rows,
                                             part);
    case ScoreType::kF16:
      return SoftmaxRowsOf<ScoreType::kF16>(in, out, mask, options, rows, part);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace rlx
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
