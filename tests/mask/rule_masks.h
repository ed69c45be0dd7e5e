// SPDX-License-Identifier: MIT OR Apache-2.0
// Random combinations of every mask rule (rlx/scores.h), with the arrays
// they point to: shared by the tests of the kernels and of the block masks.
#ifndef RLX_TESTS_MASK_RULE_MASKS_H_
#define RLX_TESTS_MASK_RULE_MASKS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rlx/scores.h"
#include "src/mask/mask_field_list.h"
#include "src/mask/mask_kind_list.h"

namespace rlx::testing {

// A MaskSpec with every array it points to.
struct RuleMask {
  MaskSpec mask;
  std::vector<std::int64_t> query_offsets, prefix_end, q_position, k_position;
  std::vector<std::int32_t> q_segment, k_segment;
  std::vector<std::int32_t> q_group, k_group;
  std::vector<float> keep_f32, bias;
  std::vector<std::uint8_t> keep_u8;
  std::vector<std::uint64_t> keep_bits;
  std::vector<std::int32_t> key_indices;
  std::vector<std::int32_t> block_num, block_indices, block_full_num,
      block_full_indices;
  std::string name;
};

// A random block list for scores of shape `s` into rm's arrays (q_block and
// k_block 1 to a little over the lengths, batch and heads 1 or the extent,
// each key block of a query block listed full, partial or not at all, in a
// random order; the full pair null in a quarter of the lists). Returns it;
// the caller puts it on the mask.
inline BlockList RandomBlockList(std::mt19937_64& rng, const Shape4& s,
                                 RuleMask& rm) {
  BlockList l;
  l.q_block = 1 + rng() % (s.q_len + 1);
  l.k_block = 1 + rng() % (rng() % 2 ? s.k_len + 1 : 8);
  l.batch = rng() % 2 ? s.batch : 1;
  l.heads = rng() % 2 ? s.heads : 1;
  l.q_blocks = (s.q_len + l.q_block - 1) / l.q_block;
  const std::size_t k_blocks = (s.k_len + l.k_block - 1) / l.k_block;
  l.max_blocks = k_blocks + rng() % 2;
  const bool with_full = rng() % 4 != 0;
  const std::size_t rows = l.batch * l.heads * l.q_blocks;
  rm.block_num.assign(rows, 0);
  rm.block_full_num.assign(rows, 0);
  rm.block_indices.assign(rows * l.max_blocks, -7);  // unused slots
  rm.block_full_indices.assign(rows * l.max_blocks, -7);
  const int listed_percent = static_cast<int>(rng() % 101);
  std::vector<std::int32_t> order(k_blocks);
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t j = 0; j < k_blocks; ++j) {
      order[j] = static_cast<std::int32_t>(j);
    }
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::int32_t j : order) {
      if (static_cast<int>(rng() % 100) >= listed_percent) continue;
      if (with_full && rng() % 2) {
        rm.block_full_indices[row * l.max_blocks + rm.block_full_num[row]++] =
            j;
      } else {
        rm.block_indices[row * l.max_blocks + rm.block_num[row]++] = j;
      }
    }
  }
  l.num_blocks = rm.block_num.data();
  l.indices = rm.block_indices.data();
  if (with_full) {
    l.full_num_blocks = rm.block_full_num.data();
    l.full_indices = rm.block_full_indices.data();
  }
  return l;
}

// A dense part's extents: each of the scores' or 1 (broadcast).
inline Shape4 DenseShape(std::mt19937_64& rng, const Shape4& s) {
  const auto pick = [&](std::size_t extent) {
    return rng() % 2 ? extent : std::size_t{1};
  };
  return {pick(s.batch), pick(s.heads), pick(s.q_len), s.k_len};
}

// Random data for a dense part of kind `dense` (not kNone) with extents
// `ds`, kept in `rm`: the kind alone (`alone`, a dense MaskKind) or on top
// of the rules of `m`. Keep masks keep about 70% (bits: 25% or 75%), f32
// keeps have NaN entries (kept: nonzero), biases -inf entries.
inline MaskSpec RandomDense(std::mt19937_64& rng, DenseKind dense,
                            const Shape4& ds, bool alone, const MaskSpec& m,
                            RuleMask& rm) {
  const auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  const std::size_t elems = ds.batch * ds.heads * ds.q_len * ds.k_len;
  switch (dense) {
    case DenseKind::kKeepF32:
      rm.keep_f32.resize(elems);
      for (auto& v : rm.keep_f32) {
        v = chance(5) ? std::nanf("") : chance(70) ? 1.0f : 0.0f;
      }
      return alone ? MaskSpec::keep(rm.keep_f32.data(), ds)
                   : m.with_keep(rm.keep_f32.data(), ds);
    case DenseKind::kKeepU8:
      rm.keep_u8.resize(elems);
      for (auto& v : rm.keep_u8) v = chance(70) ? (chance(50) ? 1 : 3) : 0;
      return alone ? MaskSpec::keep(rm.keep_u8.data(), ds)
                   : m.with_keep(rm.keep_u8.data(), ds);
    case DenseKind::kKeepBits: {
      const std::size_t words = (ds.k_len + 63) / 64;
      rm.keep_bits.resize(ds.batch * ds.heads * ds.q_len * words);
      const bool sparse = chance(50);
      for (auto& v : rm.keep_bits) v = sparse ? rng() & rng() : rng() | rng();
      return alone ? MaskSpec::keep_bits(rm.keep_bits.data(), ds)
                   : m.with_keep_bits(rm.keep_bits.data(), ds);
    }
    case DenseKind::kBias:
      rm.bias.resize(elems);
      for (auto& v : rm.bias) {
        v = chance(12) ? -std::numeric_limits<float>::infinity()
                       : static_cast<float>(rng() % 9) - 4.0f;
      }
      return alone ? MaskSpec::bias(rm.bias.data(), ds)
                   : m.with_bias(rm.bias.data(), ds);
    case DenseKind::kNone:
      break;
  }
  return m;
}

// Which rules a mask combines: a kind, a set of RuleBits, and a dense part
// on top (kNone, or any dense kind for a structured kind).
enum RuleBit : unsigned {
  kQueryOffsets = 1u << 0,
  kWindowKeys = 1u << 1,
  kChunk = 1u << 2,
  kSinkKeys = 1u << 3,
  kPrefix = 1u << 4,
  kSegments = 1u << 5,
  kQPositions = 1u << 6,
  kKPositions = 1u << 7,
  kWindowKeysAfter = 1u << 8,
  kGroups = 1u << 9,
  // The two list parts: a mask has at most one (CheckMask rejects both),
  // so combinations draw none, the key list or the block list.
  kKeyIndices = 1u << 10,
  kBlockList = 1u << 11,
};
// Every subset of the bits below the list parts.
inline constexpr unsigned kRuleSets = 1u << 10;
inline constexpr unsigned kListParts[] = {0, kKeyIndices, kBlockList};

// The RuleBit that draws each field of the list (src/mask/mask_field_list.h), 0
// for the fields the kind or the dense part draws: a field added to the
// list fails to compile here (-Werror=switch) until the tests draw it.
constexpr unsigned RuleBitOf(fields::MaskField f) {
  using F = fields::MaskField;
  switch (f) {
    case F::kind:
    case F::window:
    case F::past:
    case F::upper:
    case F::data:
    case F::shape:
    case F::strides:
    case F::dense:
      return 0;
    case F::window_keys_after:
      return kWindowKeysAfter;
    case F::q_group:
    case F::k_group:
      return kGroups;
    case F::key_indices:
    case F::key_indices_shape:
      return kKeyIndices;
    case F::block_list:
      return kBlockList;
    case F::query_offsets:
      return kQueryOffsets;
    case F::window_keys:
      return kWindowKeys;
    case F::chunk:
      return kChunk;
    case F::sink_keys:
      return kSinkKeys;
    case F::prefix_end:
      return kPrefix;
    case F::q_segment:
    case F::k_segment:
      return kSegments;
    case F::q_position:
      return kQPositions;
    case F::k_position:
      return kKPositions;
  }
  return 0;
}
constexpr bool EveryRuleFieldHasABit() {
  for (const fields::MaskField f : fields::kAllMaskFields) {
    if (fields::IsRuleField(f) != (RuleBitOf(f) != 0)) return false;
  }
  return true;
}
static_assert(
    EveryRuleFieldHasABit(),
    "a rule field of src/mask/mask_field_list.h that RulesOf does not draw");
struct RuleCombination {
  MaskKind kind = MaskKind::kNone;
  unsigned rules = 0;
  DenseKind dense = DenseKind::kNone;
};

// Every combination, in a fixed order: each kind of the one list
// (src/mask/mask_kind_list.h) with every subset of the rules, and for the
// structured kinds every dense part of the list on top.
inline std::vector<RuleCombination> EveryRuleCombination() {
  std::vector<RuleCombination> all;
  // The list part rotates over the combinations (none, key list, block
  // list): each kind's rule sets meet all three, and the count stays that
  // of the rule sets alone.
  std::size_t turn = 0;
  const auto list = [&] { return kListParts[turn++ % std::size(kListParts)]; };
  for (const MaskKind kind : kinds::kAllMaskKinds) {
    for (unsigned rules = 0; rules < kRuleSets; ++rules) {
      if (MaskSpec::dense_kind_of(kind) != DenseKind::kNone) {
        all.push_back({kind, rules | list(), DenseKind::kNone});
        continue;
      }
      for (const DenseKind dense : kinds::kAllDenseKinds) {
        all.push_back({kind, rules | list(), dense});
      }
    }
  }
  return all;
}

// v + origin, saturated to int64.
inline std::int64_t Shifted(std::int64_t v, std::int64_t origin) {
  const __int128 sum = static_cast<__int128>(v) + origin;
  return static_cast<std::int64_t>(
      std::clamp<__int128>(sum, std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max()));
}

// The mask of combination `c` for scores of shape `s`, with random values
// for the rules it has (and random arrays for them, kept in `rm`). The kind
// and the dense part go through switches without `default`: a kind added to
// the list fails the build (-Werror=switch) until it is handled here. `rm`
// must not move afterwards (the mask points into it). `origin` moves every
// explicit position (query offsets, prefix ends, q and k positions; empty
// slots stay -1) by that much, saturated, so that rules meet INT64_MIN,
// INT64_MAX and positions beyond 2^53; query offsets stay at most
// INT64_MAX - (q_len - 1), so that every query position is an int64.
inline void RulesOf(std::mt19937_64& rng, const Shape4& s,
                    const RuleCombination& c, RuleMask& rm,
                    std::int64_t origin = 0) {
  const auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  const auto below = [&](std::size_t n) { return n == 0 ? 0 : rng() % n; };
  const std::int64_t n = static_cast<std::int64_t>(s.k_len);
  const auto position = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % (hi - lo + 1));
  };
  std::string& name = rm.name;
  MaskSpec& m = rm.mask;
  name = kinds::NameOf(c.kind);
  switch (c.kind) {
    case MaskKind::kNone:
      m = MaskSpec::none();
      break;
    case MaskKind::kCausal:
      m = MaskSpec::causal();
      break;
    case MaskKind::kSlidingWindow: {
      const std::size_t w = below(s.k_len + 2);
      m = MaskSpec::sliding_window(w), name += "(" + std::to_string(w) + ")";
      break;
    }
    case MaskKind::kDecode: {
      const std::size_t upper = s.k_len - 1, past = below(upper + 1);
      const std::size_t w = chance(50) ? 0 : below(s.k_len + 1);
      m = MaskSpec::decode(past, upper, w);
      name += "(" + std::to_string(past) + "," + std::to_string(upper) + "," +
              std::to_string(w) + ")";
      break;
    }
    case MaskKind::kKeepF32:
    case MaskKind::kKeepU8:
    case MaskKind::kBias:
    case MaskKind::kKeepBits:
      m = RandomDense(rng, MaskSpec::dense_kind_of(c.kind), DenseShape(rng, s),
                      /*alone=*/true, m, rm);
      break;
  }
  if (c.rules & kQueryOffsets) {
    rm.query_offsets.resize(s.batch);
    const std::int64_t last_offset = std::numeric_limits<std::int64_t>::max() -
                                     static_cast<std::int64_t>(s.q_len - 1);
    for (auto& v : rm.query_offsets) {
      v = std::min(Shifted(position(-n, n), origin), last_offset);
    }
    m = m.with_query_offsets(rm.query_offsets.data());
    name += "+query_offsets";
  }
  if (c.rules & kWindowKeys) {
    const std::size_t w = 1 + below(s.k_len + 1);
    m = m.with_window_keys(w),
    name += "+window_keys(" + std::to_string(w) + ")";
  }
  if (c.rules & kChunk) {
    const std::size_t ch = 1 + below(s.k_len + 1);
    m = m.with_chunk(ch), name += "+chunk(" + std::to_string(ch) + ")";
  }
  if (c.rules & kSinkKeys) {
    const std::size_t sk = 1 + below(4);
    m = m.with_sink_keys(sk), name += "+sink_keys(" + std::to_string(sk) + ")";
  }
  if (c.rules & kPrefix) {
    rm.prefix_end.resize(s.batch);
    for (auto& v : rm.prefix_end) v = Shifted(position(-2, n + 2), origin);
    m = m.with_prefix(rm.prefix_end.data()), name += "+prefix";
  }
  if (c.rules & kSegments) {
    rm.q_segment.resize(s.batch * s.q_len);
    rm.k_segment.resize(s.batch * s.k_len);
    for (auto& v : rm.q_segment) v = static_cast<std::int32_t>(rng() % 3);
    for (auto& v : rm.k_segment) v = static_cast<std::int32_t>(rng() % 3);
    m = m.with_segments(rm.q_segment.data(), rm.k_segment.data());
    name += "+segments";
  }
  const bool q_pos = c.rules & kQPositions, k_pos = c.rules & kKPositions;
  if (q_pos) {
    rm.q_position.resize(s.batch * s.q_len);
    for (auto& v : rm.q_position) v = Shifted(position(-3, n + 3), origin);
  }
  if (k_pos) {
    rm.k_position.resize(s.batch * s.k_len);
    for (auto& v : rm.k_position) {
      v = chance(15) ? -1 : Shifted(position(0, n + 3), origin);
    }
  }
  if (q_pos || k_pos) {
    m = m.with_positions(q_pos ? rm.q_position.data() : nullptr,
                         k_pos ? rm.k_position.data() : nullptr);
    name += std::string("+positions(") + (q_pos ? "q" : "") +
            (k_pos ? "k" : "") + ")";
  }
  if (c.rules & kWindowKeysAfter) {
    const std::size_t a = 1 + below(s.k_len + 1);
    m = m.with_window_keys_after(a);
    name += "+window_keys_after(" + std::to_string(a) + ")";
  }
  if (c.rules & kGroups) {
    // 0 (no group) or one of two groups.
    rm.q_group.resize(s.batch * s.q_len);
    rm.k_group.resize(s.batch * s.k_len);
    for (auto& v : rm.q_group) v = static_cast<std::int32_t>(rng() % 3);
    for (auto& v : rm.k_group) v = static_cast<std::int32_t>(rng() % 3);
    m = m.with_groups(rm.q_group.data(), rm.k_group.data());
    name += "+groups";
  }
  if (c.dense != DenseKind::kNone) {
    m = RandomDense(rng, c.dense, DenseShape(rng, s), /*alone=*/false, m, rm);
    name += std::string("+") + kinds::NameOf(c.dense);
  }
  if (c.rules & kKeyIndices) {
    // Extents of the scores or 1, n from 0 to past k_len, -1 slots and
    // repeats; one slot more, so that the pointer is never null.
    Shape4 ls = DenseShape(rng, s);
    ls.k_len = below(s.k_len + 4);
    rm.key_indices.resize(ls.batch * ls.heads * ls.q_len * ls.k_len + 1);
    for (auto& v : rm.key_indices) {
      v = chance(15) ? -1 : static_cast<std::int32_t>(below(s.k_len));
    }
    m = m.with_key_indices(rm.key_indices.data(), ls);
    name += "+key_indices(n " + std::to_string(ls.k_len) + ")";
  }
  if (c.rules & kBlockList) {
    m = m.with_block_list(RandomBlockList(rng, s, rm));
    name += "+block_list(" + std::to_string(m.block_list.q_block) + "x" +
            std::to_string(m.block_list.k_block) + ")";
  }
}

// A random combination (RulesOf): a kind of the list, each rule with its
// own chance, and for a structured kind a dense part of the list in 35%.
inline void RandomRules(std::mt19937_64& rng, const Shape4& s, RuleMask& rm) {
  const auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  RuleCombination c;
  c.kind = kinds::kAllMaskKinds[rng() % kinds::kMaskKindCount];
  const int percent[] = {30, 35, 35, 30, 25, 30,
                         25, 25, 25, 30, 20, 20};  // per bit
  for (unsigned bit = 0; bit < std::size(percent); ++bit) {
    if (chance(percent[bit])) c.rules |= 1u << bit;
  }
  // At most one list part.
  if ((c.rules & kKeyIndices) && (c.rules & kBlockList)) {
    c.rules &= ~(rng() % 2 == 0 ? kKeyIndices : kBlockList);
  }
  static_assert(kinds::kAllDenseKinds[0] == DenseKind::kNone);
  if (MaskSpec::dense_kind_of(c.kind) == DenseKind::kNone && chance(35)) {
    c.dense = kinds::kAllDenseKinds[1 + rng() % (kinds::kDenseKindCount - 1)];
  }
  RulesOf(rng, s, c, rm);
}

}  // namespace rlx::testing

#endif  // RLX_TESTS_MASK_RULE_MASKS_H_
