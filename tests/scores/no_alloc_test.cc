// SPDX-License-Identifier: MIT OR Apache-2.0
// No kernel allocates: a decode step must not pay the allocator nor be able
// to throw bad_alloc. This binary replaces the global operator new (and,
// outside sanitizer builds, whose runtimes own malloc, glibc's malloc
// family, which hwy::AllocateAligned and C code use) with counting
// versions, and calls every kernel on every compiled target and row type,
// with every mask rule, every softmax option, and rows longer than the
// kernels' stack buffers.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlx/attn_mask.h"
#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/scores.h"
#include "rlx/softmax_merge.h"
#include "rlx/softmax_split.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/mask/rule_masks.h"

namespace {

// Allocations made while `counting` is set on this thread.
std::atomic<long> g_allocations{0};
thread_local bool counting = false;

void Count() {
  if (counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define RLX_COUNT_MALLOC 1
// glibc's own entry points: the replacements count, then forward to them,
// so every block still comes from (and goes back to) glibc's allocator.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* malloc(std::size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void* aligned_alloc(std::size_t align, std::size_t size) {
  Count();
  return __libc_memalign(align, size);
}
int posix_memalign(void** out, std::size_t align, std::size_t size) {
  Count();
  void* p = __libc_memalign(align, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"
// operator new's own blocks, not counted twice.
void* RawAlloc(std::size_t size) { return __libc_malloc(size); }
void* RawAlignedAlloc(std::size_t align, std::size_t size) {
  return __libc_memalign(align, size);
}
#else
#define RLX_COUNT_MALLOC 0
void* RawAlloc(std::size_t size) { return std::malloc(size); }
void* RawAlignedAlloc(std::size_t align, std::size_t size) {
  return std::aligned_alloc(align, (size + align - 1) / align * align);
}
#endif

void* operator new(std::size_t size) {
  Count();
  if (void* p = RawAlloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  Count();
  return RawAlloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align) {
  Count();
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = RawAlignedAlloc(a, size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return operator new(size, align);
}
void* operator new(std::size_t size, std::align_val_t align,
                   const std::nothrow_t&) noexcept {
  Count();
  return RawAlignedAlloc(static_cast<std::size_t>(align), size);
}
void* operator new[](std::size_t size, std::align_val_t align,
                     const std::nothrow_t& tag) noexcept {
  return operator new(size, align, tag);
}
// Every block above comes from malloc's allocator, so free releases it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace rlx {
namespace {

// Allocations `f` makes on this thread.
template <class F>
long AllocationsDuring(const F& f) {
  const long before = g_allocations.load();
  counting = true;
  f();
  counting = false;
  return g_allocations.load() - before;
}

// The counter itself: a test that could not fail would prove nothing.
TEST(CountingAllocator, SeesOperatorNewAndMalloc) {
  EXPECT_EQ(AllocationsDuring([] {
              int* volatile p = new int(1);
              delete p;
            }),
            1);
  EXPECT_EQ(AllocationsDuring([] { std::vector<float> v(100); }), 1);
  if (RLX_COUNT_MALLOC) {
    EXPECT_EQ(AllocationsDuring([] {
                void* volatile p = std::malloc(64);
                std::free(p);
              }),
              1);
  }
}

class NoAllocTest : public testing::PerTargetTest {};
RLX_INSTANTIATE_PER_TARGET(NoAllocTest);

constexpr ScoreType kTypes[] = {ScoreType::kF32, ScoreType::kBF16,
                                ScoreType::kF16};

// Every call allocates nothing, but for one exception: a thread's first
// 16-bit row longer than the stack scratch (8192 keys) allocates the
// thread's exp buffer, once (src/softmax/thread_exp_buffer.h), checked by the
// next test, and a thread's first key list allocates its work arrays, grown
// when a later call has more slots or keys (src/softmax/key_list_softmax.h).
// Here the thread has met a row as long as these, and as long a list, first.
TEST_P(NoAllocTest, ScoreKernelsAllocateNothing) {
  std::mt19937_64 rng(77);
  {
    testing::Tensor warm =
        testing::MakeTensor(ScoreType::kBF16, Shape4{1, 1, 1, 12200}, 0, 0);
    masked_softmax(warm.view, MaskSpec::none());
    const std::vector<std::int32_t> slots(12300, 0);
    masked_softmax(warm.view, MaskSpec::none().with_key_indices(
                                  slots.data(), {1, 1, 1, slots.size()}));
  }
  const int iterations = testing::ScaledIterations(40);
  for (int it = 0; it < iterations; ++it) {
    // Short rows, rows past the 16-bit scratch and the keep-byte tile
    // (8192 keys each).
    const std::size_t n = it % 4 == 0   ? 8150 + rng() % 200
                          : it % 4 == 1 ? 8200 + rng() % 4000
                                        : 1 + rng() % 300;
    const Shape4 s{1 + rng() % 2, 1 + rng() % 2, 1 + rng() % 3, n};
    testing::RuleMask rm;
    testing::RandomRules(rng, s, rm);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    const std::vector<float> sinks(s.heads, 0.5f);
    std::vector<float> lse(s.rows());
    std::array<SoftmaxOptions, 3> options;
    options[1].softcap = 5.0f;
    options[2].alibi_slopes = slopes.data();
    options[2].sink_logits = sinks.data();
    options[2].row_lse = lse.data();
    options[2].zero_masked = false;
    for (ScoreType type : kTypes) {
      testing::Tensor t = testing::MakeTensor(type, s, rng() % 3, rng() % 3);
      testing::Tensor out = testing::MakeTensor(type, s, 0, 0);
      const std::string where = std::string(testing::TypeName(type)) + " " +
                                rm.name + " k_len " + std::to_string(n);
      for (const SoftmaxOptions& o : options) {
        EXPECT_EQ(AllocationsDuring([&] {
                    masked_softmax(t.view, out.view, rm.mask, o,
                                   RowRange::all(s));
                    masked_softmax(t.view, rm.mask, o);
                  }),
                  0)
            << where << " masked_softmax";
      }
      EXPECT_EQ(AllocationsDuring([&] { apply_mask(t.view, rm.mask); }), 0)
          << where << " apply_mask";
    }
    EXPECT_EQ(AllocationsDuring([&] {
                for (std::size_t b = 0; b < s.batch; ++b) {
                  for (std::size_t q = 0; q < s.q_len; ++q) {
                    kept_keys(rm.mask, b, q, s.q_len, s.k_len);
                  }
                }
              }),
              0)
        << rm.name << " kept_keys";
  }
}

// A 16-bit row of at most 8192 keys (the stack scratch) never allocates, on
// a thread that has run nothing before; a longer one allocates the thread's
// exp buffer once (and the record of its destructor), and rows up to that
// length never again.
TEST_P(NoAllocTest, LongSixteenBitRowsAllocateOncePerThread) {
  const std::string target = GetParam();
  for (const ScoreType type : {ScoreType::kBF16, ScoreType::kF16}) {
    long short_rows = -1, first = -1, again = -1, shorter = -1;
    std::thread([&] {
      // Per-target tests force the target process-wide (PerTargetTest).
      const Shape4 s8192{1, 2, 1, 8192}, s20000{1, 2, 1, 20000};
      const Shape4 s9000{1, 3, 1, 9000};
      testing::Tensor a = testing::MakeTensor(type, s8192, 0, 0);
      testing::Tensor b = testing::MakeTensor(type, s20000, 0, 0);
      testing::Tensor c = testing::MakeTensor(type, s9000, 1, 0);
      short_rows =
          AllocationsDuring([&] { masked_softmax(a.view, MaskSpec::none()); });
      first = AllocationsDuring(
          [&] { masked_softmax(b.view, MaskSpec::decode(100, 19999)); });
      again = AllocationsDuring(
          [&] { masked_softmax(b.view, MaskSpec::decode(17000, 19999)); });
      shorter =
          AllocationsDuring([&] { masked_softmax(c.view, MaskSpec::none()); });
    }).join();
    const std::string where =
        std::string(testing::TypeName(type)) + " " + target;
    EXPECT_EQ(short_rows, 0) << where;
    // The buffer, and (the thread's first) the C++ runtime's record of its
    // destructor, to be run at the thread's exit.
    EXPECT_GE(first, 1) << where;
    EXPECT_LE(first, 2) << where;
    EXPECT_EQ(again, 0) << where;
    EXPECT_EQ(shorter, 0) << where;
  }
}

TEST_P(NoAllocTest, DecodeMaskAndMergeAllocateNothing) {
  std::vector<float> mask(4097);
  EXPECT_EQ(AllocationsDuring([&] {
              fill_bucket_decode_mask(mask, 3000, 4096);
              fill_bucket_decode_mask(mask, 3000, 4096, 1024);
            }),
            0);
  for (ScoreType type : kTypes) {
    const Shape4 s{1, 2, 1, 700};
    testing::Tensor a = testing::MakeTensor(type, s, 0, 1);
    testing::Tensor b = testing::MakeTensor(type, s, 1, 0);
    std::vector<float> lse_a(s.rows()), lse_b(s.rows()), merged(s.rows());
    SoftmaxOptions o;
    o.row_lse = lse_a.data();
    masked_softmax(a.view, MaskSpec::none(), o);
    o.row_lse = lse_b.data();
    masked_softmax(b.view, MaskSpec::none(), o);
    const SoftmaxPart parts[] = {{a.view, lse_a.data()},
                                 {b.view, lse_b.data()}};
    EXPECT_EQ(
        AllocationsDuring([&] { merge_softmax_parts(parts, merged.data()); }),
        0)
        << testing::TypeName(type);
  }
}

// Both steps of a split row, in C++ and through the C API (which keeps up
// to 16 part pointers on the stack), on rows of every type that fit the
// stack scratch.
TEST_P(NoAllocTest, SplitRowsAllocateNothing) {
  for (ScoreType type : kTypes) {
    const Shape4 s{1, 2, 1, 3000};
    testing::Tensor t = testing::MakeTensor(type, s, 1, 1);
    const MaskSpec mask = MaskSpec::decode(2000, 2999);
    const KeptKeys kept = kept_keys(mask, 0, 0, 1, s.k_len);
    std::vector<SoftmaxPartStats> stats_a(s.rows()), stats_b(s.rows());
    const SoftmaxPartStats* parts[] = {stats_a.data(), stats_b.data()};
    std::vector<float> lse(s.rows());
    SoftmaxOptions o;
    o.row_lse = lse.data();
    EXPECT_EQ(AllocationsDuring([&] {
                const KeyRange a = split_kept_keys(kept, s.k_len, 0, 2);
                const KeyRange b = split_kept_keys(kept, s.k_len, 1, 2);
                masked_softmax_part(t.view, mask, a, stats_a.data(), o);
                masked_softmax_part(t.view, mask, b, stats_b.data(), o);
                finish_softmax_part(t.view, mask, a, parts, 0, o);
                finish_softmax_part(t.view, mask, b, parts, 1, o);
              }),
              0)
        << testing::TypeName(type);
    rlx_mask_spec c_mask;
    rlx_mask_spec_init(&c_mask);
    c_mask.kind = RLX_MASK_DECODE;
    c_mask.past = 2000;
    c_mask.upper = 2999;
    const rlx_score_view view{
        t.view.data,
        static_cast<rlx_score_type>(type),
        {1, 2, 1, s.k_len},
        {t.view.strides.batch, t.view.strides.head, t.view.strides.row}};
    const auto* c_parts =
        reinterpret_cast<const rlx_softmax_part_stats* const*>(parts);
    rlx_status part_status = RLX_INTERNAL_ERROR, finish_status = part_status;
    EXPECT_EQ(AllocationsDuring([&] {
                part_status = rlx_masked_softmax_part(
                    &view, &c_mask, {0, 2000},
                    reinterpret_cast<rlx_softmax_part_stats*>(stats_a.data()),
                    nullptr, nullptr);
                finish_status = rlx_finish_softmax_part(
                    &view, &c_mask, {0, 2000}, c_parts, 2, 0, nullptr, nullptr);
              }),
              0)
        << testing::TypeName(type) << " (C API)";
    EXPECT_EQ(part_status, RLX_OK) << rlx_last_error();
    EXPECT_EQ(finish_status, RLX_OK) << rlx_last_error();
  }
}

}  // namespace
}  // namespace rlx
