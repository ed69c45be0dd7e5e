// SPDX-License-Identifier: MIT OR Apache-2.0
// Split rows finished in place (rlx/softmax_split.h): the balanced split,
// step 1 (the masked softmax row loop on a part's keys,
// src/softmax/softmax_rows.h) and step 2 (the row's log-sum-exp in plain C++,
// double; the part's scale per target, src/softmax/softmax_merge-inl.h).
#include "rlx/softmax_split.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/softmax_split.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/softmax_merge-inl.h"

#if HWY_ONCE
#include "src/dispatch/dispatch.h"
#include "src/mask/block_list.h"
#include "src/mask/mask_rows.h"
#include "src/softmax/softmax_rows.h"

namespace rlx {

HWY_EXPORT(ScaleRow);

namespace {

constexpr const char* kPartWho = "masked_softmax_part";
constexpr const char* kFinishWho = "finish_softmax_part";

[[noreturn]] void Fail(const char* who, const std::string& what) {
  throw std::invalid_argument(std::string(who) + ": " + what);
}

// Split rows do not take key lists yet (docs/SEMANTICS.md, "Key lists"):
// a listed row is short, and its parts' statistics would need the list.
void RejectKeyList(const char* who, const MaskSpec& mask) {
  if (mask.key_indices != nullptr) {
    Fail(who,
         "a mask with a key list (key_indices) cannot be split: run "
         "masked_softmax over its rows");
  }
}

std::string RangeString(std::size_t begin, std::size_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

void CheckKeys(const char* who, KeyRange keys, std::size_t k_len) {
  if (keys.begin > keys.end || keys.end > k_len) {
    Fail(who, "keys " + RangeString(keys.begin, keys.end) +
                  " is not a key range of a row of k_len " +
                  std::to_string(k_len));
  }
}

// Every nonzero value of n elements of `type` at `row` made NaN (a NaN row's
// finish: masked keys stay 0). Rare, so scalar.
void NaNNonzero(ScoreType type, void* row, std::size_t n) {
  if (type == ScoreType::kF32) {
    auto* p = static_cast<float*>(row);
    for (std::size_t k = 0; k < n; ++k) {
      if (p[k] != 0.0f) p[k] = std::numeric_limits<float>::quiet_NaN();
    }
    return;
  }
  const std::uint16_t nan = type == ScoreType::kBF16 ? 0x7fc0 : 0x7e00;
  auto* p = static_cast<std::uint16_t*>(row);
  for (std::size_t k = 0; k < n; ++k) {
    if ((p[k] & 0x7fff) != 0) p[k] = nan;
  }
}

}  // namespace

KeyRange split_kept_keys(const KeptKeys& kept, std::size_t k_len,
                         std::size_t part, std::size_t parts,
                         double masked_key_cost) {
  constexpr const char* kWho = "split_kept_keys";
  if (parts == 0) Fail(kWho, "parts is 0");
  if (part >= parts) {
    Fail(kWho, "part " + std::to_string(part) + " is not below parts " +
                   std::to_string(parts));
  }
  if (!(masked_key_cost >= 0.0 && masked_key_cost <= 1.0)) {
    Fail(kWho, "masked_key_cost " + std::to_string(masked_key_cost) +
                   " is not in [0, 1]");
  }
  if (kept.count > KeptKeys::kMaxIntervals) {
    Fail(kWho, "kept.count " + std::to_string(kept.count) + " exceeds " +
                   std::to_string(KeptKeys::kMaxIntervals));
  }
  std::size_t previous_end = 0;
  for (std::size_t j = 0; j < kept.count; ++j) {
    const KeyInterval& iv = kept.intervals[j];
    if (iv.begin >= iv.end || iv.begin < previous_end || iv.end > k_len) {
      Fail(kWho, "kept interval " + std::to_string(j) + " " +
                     RangeString(iv.begin, iv.end) +
                     " is empty, out of order or beyond k_len " +
                     std::to_string(k_len));
    }
    previous_end = iv.end;
  }
  // In integer units (128 bits: exact for any row): a kept key costs 16, a
  // masked one `masked`. The row is a run of pieces (gap, interval, gap,
  // ..., gap), each of one cost per key; boundary i is the first key at
  // which the cost before it reaches floor(i * total / parts). Pieces of
  // cost 0 are never split, so with masked 0 a boundary is a kept key.
  using u128 = unsigned __int128;
  constexpr u128 kKept = 16;
  const auto masked = static_cast<u128>(std::lround(masked_key_cost * 16.0));
  struct Piece {
    std::size_t begin, end;
    u128 cost;
  };
  Piece pieces[2 * KeptKeys::kMaxIntervals + 1];
  std::size_t count = 0, at = 0;
  for (std::size_t j = 0; j < kept.count; ++j) {
    pieces[count++] = {at, kept.intervals[j].begin, masked};
    pieces[count++] = {kept.intervals[j].begin, kept.intervals[j].end, kKept};
    at = kept.intervals[j].end;
  }
  pieces[count++] = {at, k_len, masked};
  u128 total = 0;
  for (std::size_t j = 0; j < count; ++j) {
    total +=
        static_cast<u128>(pieces[j].end - pieces[j].begin) * pieces[j].cost;
  }
  const auto boundary = [&](std::size_t i) -> std::size_t {
    if (i == 0) return 0;
    if (i == parts) return k_len;
    const u128 target = static_cast<u128>(i) * total / parts;
    u128 before = 0;
    for (std::size_t j = 0; j < count; ++j) {
      const Piece& p = pieces[j];
      if (p.cost == 0 || p.begin == p.end) continue;
      if (target <= before) return p.begin;
      // The first key of the piece with before + keys * cost >= target, if
      // it is inside the piece (else the next piece's first key).
      const u128 keys = (target - before + p.cost - 1) / p.cost;
      if (keys < p.end - p.begin) {
        return p.begin + static_cast<std::size_t>(keys);
      }
      before += static_cast<u128>(p.end - p.begin) * p.cost;
    }
    return k_len;
  };
  return {boundary(part), boundary(part + 1)};
}

void masked_softmax_part(const ScoreView& scores, const MaskSpec& mask,
                         KeyRange keys, SoftmaxPartStats* stats,
                         const SoftmaxOptions& options, RowRange rows) {
  detail::CheckSoftmaxCall(kPartWho, scores, /*out=*/nullptr, mask, options,
                           rows);
  if (stats == nullptr) Fail(kPartWho, "stats is null");
  RejectKeyList(kPartWho, mask);
  CheckKeys(kPartWho, keys, scores.shape.k_len);
  if (rows.begin == rows.end) return;
  detail::ReserveExpBuffer(scores);
  const detail::RowPart part{{keys.begin, keys.end}, stats};
  detail::SoftmaxRows(scores, scores, mask, options, rows, &part);
}

void masked_softmax_part(const ScoreView& scores, const MaskSpec& mask,
                         KeyRange keys, SoftmaxPartStats* stats,
                         const SoftmaxOptions& options) {
  masked_softmax_part(scores, mask, keys, stats, options,
                      RowRange::all(scores.shape));
}

void finish_softmax_part(const ScoreView& scores, const MaskSpec& mask,
                         KeyRange keys,
                         std::span<const SoftmaxPartStats* const> parts,
                         std::size_t part, const SoftmaxOptions& options,
                         RowRange rows) {
  detail::CheckSoftmaxCall(kFinishWho, scores, /*out=*/nullptr, mask, options,
                           rows);
  CheckKeys(kFinishWho, keys, scores.shape.k_len);
  RejectKeyList(kFinishWho, mask);
  if (parts.empty()) Fail(kFinishWho, "no parts");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == nullptr) {
      Fail(kFinishWho, "parts[" + std::to_string(i) + "] is null");
    }
  }
  if (part >= parts.size()) {
    Fail(kFinishWho, "part " + std::to_string(part) +
                         " is not below the part count " +
                         std::to_string(parts.size()));
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto* const scale_row = &RLX_DYNAMIC_DISPATCH(ScaleRow);  // once per call
  const Shape4& s = scores.shape;
  const detail::Rules rules = detail::RulesOf(mask);
  const std::size_t elem =
      scores.type == ScoreType::kF32 ? sizeof(float) : sizeof(std::uint16_t);
  detail::RowIndex i = detail::RowIndexOf(s, rows.begin);
  for (std::size_t r = rows.begin; r < rows.end;
       ++r, i = detail::NextRowIndex(s, i)) {
    // lse = m + log(sum_i sum_i exp(log_scale_i - m) + exp(sink - m)), m the
    // largest log_scale of a part with a kept key (and the sink).
    double m = -kInf;
    bool nan = false;
    for (const SoftmaxPartStats* stats : parts) {
      const SoftmaxPartStats& st = stats[r];
      if (std::isnan(st.sum) || std::isnan(st.log_scale)) nan = true;
      if (st.sum > 0.0) m = std::max(m, st.log_scale);
    }
    double lse;
    if (nan) {
      lse = std::numeric_limits<double>::quiet_NaN();
    } else if (m == -kInf) {
      // No kept key in any part: zeros stay zeros, sinks or not.
      if (options.row_lse != nullptr) {
        options.row_lse[r] = -std::numeric_limits<float>::infinity();
      }
      continue;
    } else {
      const double sink =
          options.sink_logits != nullptr ? options.sink_logits[i.h] : -kInf;
      m = std::max(m, sink);
      double sum = sink != -kInf ? std::exp(sink - m) : 0.0;
      for (const SoftmaxPartStats* stats : parts) {
        const SoftmaxPartStats& st = stats[r];
        if (st.sum > 0.0) sum += st.sum * std::exp(st.log_scale - m);
      }
      lse = m + std::log(sum);
    }
    if (options.row_lse != nullptr)
      options.row_lse[r] = static_cast<float>(lse);
    const SoftmaxPartStats& mine = parts[part][r];
    if (!nan && !(mine.sum > 0.0)) continue;  // this part kept no key
    char* const row = static_cast<char*>(scores.data) +
                      detail::RowOffset(s, scores.strides, i) * elem;
    const auto factor = static_cast<float>(std::exp(mine.log_scale - lse));
    const auto scale = [&](std::size_t begin, std::size_t end) {
      void* const first = row + begin * elem;
      if (nan) {
        NaNNonzero(scores.type, first, end - begin);
      } else {
        scale_row(scores.type, first, end - begin, factor);
      }
    };
    if (detail::HasBlockList(mask)) {
      // The keys step 1 wrote: the row's listed blocks inside kept_keys.
      KeptKeys cover =
          detail::BlockListKeptKeys(mask, rules, i.b, i.q, s.q_len, s.k_len);
      detail::ClipKeptKeys(&cover, {keys.begin, keys.end});
      const detail::BlockListRow listed =
          detail::BlockListRowOf(mask.block_list, i.b, i.h, i.q);
      const auto blocks = [&](const std::int32_t* idx, std::size_t count) {
        for (std::size_t e = 0; e < count; ++e) {
          const KeyInterval block =
              detail::KeyBlockOf(mask.block_list, idx[e], s.k_len);
          for (std::size_t j = 0; j < cover.count; ++j) {
            const std::size_t begin =
                std::max(block.begin, cover.intervals[j].begin);
            const std::size_t end = std::min(block.end, cover.intervals[j].end);
            if (begin < end) scale(begin, end);
          }
        }
      };
      blocks(listed.full, listed.full_count);
      blocks(listed.partial, listed.partial_count);
      continue;
    }
    KeptKeys kept = detail::KeptKeysOf(mask, rules, i.b, i.q, s.q_len, s.k_len);
    detail::ClipKeptKeys(&kept, {keys.begin, keys.end});
    for (std::size_t j = 0; j < kept.count; ++j) {
      scale(kept.intervals[j].begin, kept.intervals[j].end);
    }
  }
}

void finish_softmax_part(const ScoreView& scores, const MaskSpec& mask,
                         KeyRange keys,
                         std::span<const SoftmaxPartStats* const> parts,
                         std::size_t part, const SoftmaxOptions& options) {
  finish_softmax_part(scores, mask, keys, parts, part, options,
                      RowRange::all(scores.shape));
}

}  // namespace rlx
#endif  // HWY_ONCE
