// SPDX-License-Identifier: MIT OR Apache-2.0
// The per-target KeyListSoftmaxRows of src/softmax/key_list_softmax-inl.h, its
// dispatch, and the threads' key-list scratch (src/softmax/key_list_softmax.h).
#include "src/softmax/softmax_rows_targets.h"  // first: sets the targets
//
#include "src/softmax/key_list_softmax.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/softmax/key_list_softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/softmax/key_list_softmax-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "src/dispatch/dispatch.h"
#include "src/softmax/row_path.h"

namespace rlx {
HWY_EXPORT(KeyListSoftmaxRows);

namespace detail {
namespace {

constexpr std::align_val_t kScratchAlign{64};

struct FreeScratch {
  void operator()(void* p) const { ::operator delete(p, kScratchAlign); }
};

struct ThreadScratch {
  std::unique_ptr<void, FreeScratch> data;
  std::size_t slots = 0, words = 0;
  KeyListScratch view{};
};

// Bytes of an array of `count` elements of `size` bytes, in whole lines.
std::size_t Lines(std::size_t count, std::size_t size) {
  return (count * size + 63) / 64 * 64;
}

}  // namespace

KeyListScratch ThreadKeyListScratch(std::size_t n, std::size_t k_len) {
  thread_local ThreadScratch scratch;
  const std::size_t words = k_len / 64 + 1;
  if (n <= scratch.slots && words <= scratch.words) return scratch.view;
  const std::size_t slots = std::max(n, scratch.slots);
  const std::size_t all_words = std::max(words, scratch.words);
  if (slots > (SIZE_MAX / 32) - kKeyListPad || all_words > SIZE_MAX / 32) {
    throw std::bad_alloc();
  }
  const std::size_t padded = slots + kKeyListPad;
  const std::size_t bytes = 4 * Lines(padded, 4) + Lines(padded, 2) +
                            Lines(all_words, sizeof(std::uint64_t));
  void* p = ::operator new(bytes, kScratchAlign);  // throws std::bad_alloc
  // The duplicate bits start (and stay, between rows) all 0.
  std::memset(p, 0, bytes);
  auto* at = static_cast<char*>(p);
  KeyListScratch view;
  view.keys = reinterpret_cast<std::int32_t*>(at);
  at += Lines(padded, 4);
  view.masked = reinterpret_cast<std::int32_t*>(at);
  at += Lines(padded, 4);
  view.adds = reinterpret_cast<float*>(at);
  at += Lines(padded, 4);
  view.vals = reinterpret_cast<float*>(at);
  at += Lines(padded, 4);
  view.packed = reinterpret_cast<std::uint16_t*>(at);
  at += Lines(padded, 2);
  view.seen = reinterpret_cast<std::uint64_t*>(at);
  scratch.data.reset(p);
  scratch.slots = slots;
  scratch.words = all_words;
  scratch.view = view;
  return view;
}

void KeyListSoftmaxRows(const ScoreView& in, const ScoreView& out,
                        const MaskSpec& mask, const SoftmaxOptions& options,
                        RowRange rows) {
  // Had before any row is written: a failed allocation writes nothing.
  const KeyListScratch scratch =
      ThreadKeyListScratch(mask.key_indices_shape.k_len, in.shape.k_len);
  CountRowPaths(RowPath::kKeyList, rows.end - rows.begin);
  RLX_DYNAMIC_DISPATCH_NEAREST(KeyListSoftmaxRows)
  (in, out, mask, options, rows, scratch);
}

}  // namespace detail
}  // namespace rlx
#endif  // HWY_ONCE
