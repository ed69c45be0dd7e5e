// SPDX-License-Identifier: MIT OR Apache-2.0
// What the library promises threads (docs/SEMANTICS.md, "Row ranges and
// threads" and "Targets and dispatch"), run under ThreadSanitizer by the
// tsan leg and natively by the others:
// - every kernel may be called from any thread; calls on disjoint row
//   ranges of one tensor, in any split, equal one call bit for bit, and so
//   do calls on separate tensors;
// - a row split over threads and finished in place (rlx/softmax_split.h),
//   each part on its own thread with a barrier between the two steps,
//   equals the same parts run one after another, bit for bit;
// - rlx_last_error() is per thread;
// - force_target while other threads run kernels: each call runs one
//   complete target's code, so its output equals that target's;
// - BucketedCache is not thread-safe: shared, get() is called under the
//   executor's lock, and the references it returned stay valid meanwhile.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlx/bucketed_cache.h"
#include "rlx/rlx_attn_mask.h"
#include "rlx/score_kernels.h"
#include "rlx/softmax_split.h"
#include "rlx/targets.h"
#include "tests/common/per_target.h"
#include "tests/common/score_check.h"
#include "tests/mask/rule_masks.h"

namespace rlx {
namespace {

constexpr int kThreads = 4;

// A tensor of shape `s` and type `type` with scores drawn from `seed`:
// the same bytes, at the same alignment, for every call with one seed.
testing::Tensor Scores(ScoreType type, const Shape4& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  testing::Tensor t = testing::MakeTensor(type, s, 3, 5);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h)
      for (std::size_t q = 0; q < s.q_len; ++q)
        for (std::size_t k = 0; k < s.k_len; ++k) {
          testing::Set(t.view, testing::Offset(t.view, b, h, q, k),
                       static_cast<float>(rng() % 4001) / 200.0f - 10.0f);
        }
  return t;
}

// The bytes of t's view, from its first element to its last (the same
// alignment in every tensor Scores makes; the bytes before it are not).
std::vector<std::uint8_t> ViewBytes(const testing::Tensor& t) {
  const Shape4& s = t.view.shape;
  const std::size_t es = testing::ElemSize(t.view.type);
  const auto* first = static_cast<const std::uint8_t*>(t.view.data);
  const std::size_t end = (testing::Offset(t.view, s.batch - 1, s.heads - 1,
                                           s.q_len - 1, s.k_len - 1) +
                           1) *
                          es;
  return {first, first + end};
}

// The kernels a split covers, each over a row range of one view.
enum class Kernel { kSoftmax, kSoftmaxKeptOnly, kApplyMask };
constexpr Kernel kKernels[] = {Kernel::kSoftmax, Kernel::kSoftmaxKeptOnly,
                               Kernel::kApplyMask};

void RunKernel(Kernel kernel, const ScoreView& v, const MaskSpec& mask,
               RowRange rows, const float* slopes, float* lse) {
  SoftmaxOptions options;
  options.scale = 0.5f;
  options.alibi_slopes = slopes;
  options.row_lse = lse;
  switch (kernel) {
    case Kernel::kSoftmax:
      masked_softmax(v, mask, options, rows);
      return;
    case Kernel::kSoftmaxKeptOnly:
      options.zero_masked = false;
      masked_softmax(v, mask, options, rows);
      return;
    case Kernel::kApplyMask:
      apply_mask(v, mask, rows, -1e9f);
      return;
  }
}

// Random cut points of [0, rows) into kThreads ranges (some may be empty).
std::vector<RowRange> RandomSplit(std::mt19937_64& rng, std::size_t rows) {
  std::vector<std::size_t> cuts{0, rows};
  for (int i = 1; i < kThreads; ++i) cuts.push_back(rng() % (rows + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<RowRange> ranges;
  for (int i = 0; i < kThreads; ++i) ranges.push_back({cuts[i], cuts[i + 1]});
  return ranges;
}

// Every kernel, row type and random rule combination: kThreads threads on
// the ranges of random splits of one tensor equal one call, bit for bit
// (and the row log-sum-exps too).
TEST(ThreadTest, SplitsOverThreadsEqualOneCallBitForBit) {
  std::mt19937_64 rng(2026);
  const int iterations = testing::ScaledIterations(24);
  for (int it = 0; it < iterations; ++it) {
    const Shape4 s{1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 5,
                   1 + rng() % (it % 3 == 0 ? 600 : 70)};
    testing::RuleMask rm;
    testing::RandomRules(rng, s, rm);
    const std::vector<float> slopes = alibi_slopes(s.heads);
    const bool alibi = rng() % 2;
    for (const Kernel kernel : kKernels) {
      for (const ScoreType type :
           {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
        const std::uint64_t seed = rng();
        testing::Tensor one = Scores(type, s, seed);
        std::vector<float> lse_one(s.rows(), 7.0f);
        RunKernel(kernel, one.view, rm.mask, RowRange::all(s),
                  alibi ? slopes.data() : nullptr, lse_one.data());
        for (int split = 0; split < 3; ++split) {
          testing::Tensor parts = Scores(type, s, seed);
          std::vector<float> lse_parts(s.rows(), 7.0f);
          std::vector<std::thread> threads;
          for (const RowRange& r : RandomSplit(rng, s.rows())) {
            threads.emplace_back([&, r] {
              RunKernel(kernel, parts.view, rm.mask, r,
                        alibi ? slopes.data() : nullptr, lse_parts.data());
            });
          }
          for (std::thread& t : threads) t.join();
          ASSERT_EQ(ViewBytes(parts), ViewBytes(one))
              << rm.name << " kernel " << static_cast<int>(kernel) << " type "
              << testing::TypeName(type) << " iteration " << it;
          ASSERT_EQ(std::memcmp(lse_parts.data(), lse_one.data(),
                                lse_one.size() * sizeof(float)),
                    0)
              << rm.name << " row_lse, iteration " << it;
        }
      }
    }
  }
}

// The parts of split rows on their own threads, a barrier between the two
// steps (as an executor's pool runs them), against the same parts run one
// after another on this thread: bit for bit, row_lse too.
TEST(ThreadTest, SplitRowPartsOnThreadsEqualThePartsInTurn) {
  std::mt19937_64 rng(31);
  const int iterations = testing::ScaledIterations(12);
  for (int it = 0; it < iterations; ++it) {
    const std::size_t n = 2 + rng() % (it % 2 ? 12000 : 700);
    const Shape4 s{1, 1 + rng() % 3, 1 + rng() % 2, n};
    testing::RuleMask rm;
    testing::RandomRules(rng, s, rm);
    // The split softmax does not take key lists (docs/SEMANTICS.md).
    rm.mask = rm.mask.with_key_indices(nullptr, {});
    const std::vector<float> sinks(s.heads, 0.5f);
    const std::size_t parts = 2 + rng() % (kThreads - 1);
    const KeptKeys kept = kept_keys(rm.mask, 0, 0, s.q_len, n);
    std::vector<KeyRange> ranges;
    for (std::size_t p = 0; p < parts; ++p) {
      ranges.push_back(split_kept_keys(kept, n, p, parts));
    }
    for (const ScoreType type :
         {ScoreType::kF32, ScoreType::kBF16, ScoreType::kF16}) {
      const std::uint64_t seed = rng();
      // Runs part p's step (1 or 2) on tensor t with statistics `stats`.
      const auto step = [&](int which, testing::Tensor& t, std::size_t p,
                            std::vector<std::vector<SoftmaxPartStats>>& stats,
                            float* lse) {
        SoftmaxOptions options;
        options.sink_logits = sinks.data();
        if (which == 1) {
          masked_softmax_part(t.view, rm.mask, ranges[p], stats[p].data(),
                              options);
          return;
        }
        std::vector<const SoftmaxPartStats*> all;
        for (const auto& st : stats) all.push_back(st.data());
        if (p == 0) options.row_lse = lse;
        finish_softmax_part(t.view, rm.mask, ranges[p], all, p, options);
      };
      const auto fresh_stats = [&] {
        return std::vector<std::vector<SoftmaxPartStats>>(
            parts, std::vector<SoftmaxPartStats>(s.rows()));
      };
      testing::Tensor in_turn = Scores(type, s, seed);
      auto stats_in_turn = fresh_stats();
      std::vector<float> lse_in_turn(s.rows(), 7.0f);
      for (int which : {1, 2}) {
        for (std::size_t p = 0; p < parts; ++p) {
          step(which, in_turn, p, stats_in_turn, lse_in_turn.data());
        }
      }
      testing::Tensor threaded = Scores(type, s, seed);
      auto stats_threaded = fresh_stats();
      std::vector<float> lse_threaded(s.rows(), 7.0f);
      std::barrier barrier(static_cast<std::ptrdiff_t>(parts));
      std::vector<std::thread> threads;
      for (std::size_t p = 0; p < parts; ++p) {
        threads.emplace_back([&, p] {
          step(1, threaded, p, stats_threaded, lse_threaded.data());
          barrier.arrive_and_wait();
          step(2, threaded, p, stats_threaded, lse_threaded.data());
        });
      }
      for (std::thread& t : threads) t.join();
      ASSERT_EQ(ViewBytes(threaded), ViewBytes(in_turn))
          << rm.name << " type " << testing::TypeName(type) << " parts "
          << parts << " iteration " << it;
      ASSERT_EQ(std::memcmp(lse_threaded.data(), lse_in_turn.data(),
                            lse_in_turn.size() * sizeof(float)),
                0)
          << rm.name << " row_lse, iteration " << it;
    }
  }
}

// Threads on separate tensors at once (each its own mask and kernel) get
// what each call gets alone; kept_keys from every thread agrees.
TEST(ThreadTest, SeparateTensorsAtOnceEqualEachAlone) {
  std::mt19937_64 rng(77);
  const Shape4 s{2, 4, 3, 257};
  std::vector<testing::RuleMask> masks(kThreads);
  for (auto& rm : masks) testing::RandomRules(rng, s, rm);
  std::vector<testing::Tensor> alone, together;
  for (int i = 0; i < kThreads; ++i) {
    alone.push_back(Scores(ScoreType::kF32, s, 100 + i));
    together.push_back(Scores(ScoreType::kF32, s, 100 + i));
    RunKernel(kKernels[i % 3], alone[i].view, masks[i].mask, RowRange::all(s),
              nullptr, nullptr);
  }
  std::vector<std::thread> threads;
  std::vector<int> kept_mismatches(kThreads, 0);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int repeat = 0; repeat < 3; ++repeat) {
        together[i] = Scores(ScoreType::kF32, s, 100 + i);
        RunKernel(kKernels[i % 3], together[i].view, masks[i].mask,
                  RowRange::all(s), nullptr, nullptr);
        // Every thread reads the kept keys of mask 0: the same answer.
        for (std::size_t q = 0; q < s.q_len; ++q) {
          const KeptKeys got = kept_keys(masks[0].mask, 1, q, s.q_len, s.k_len);
          const KeptKeys want =
              kept_keys(masks[0].mask, 1, q, s.q_len, s.k_len);
          kept_mismatches[i] += !(got == want);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(ViewBytes(together[i]), ViewBytes(alone[i])) << "thread " << i;
    EXPECT_EQ(kept_mismatches[i], 0) << "thread " << i;
  }
}

// rlx_last_error() is per thread: each thread's failing call leaves its own
// message, naming its own value, while the others fail theirs.
TEST(ThreadTest, LastErrorIsPerThread) {
  std::vector<std::string> messages(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      float s[4] = {0, 0, 0, 0};
      rlx_score_view v;
      v.data = s;
      v.type = RLX_SCORE_F32;
      v.shape = {1, 1, 1, 4};
      v.strides = rlx_contiguous_strides(v.shape);
      rlx_mask_spec m;
      rlx_mask_spec_init(&m);
      m.kind = RLX_MASK_DECODE;
      m.past = 10 + static_cast<std::size_t>(i);  // past > upper: an error
      m.upper = 3;
      const std::string own = "past " + std::to_string(10 + i);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int repeat = 0; repeat < 50; ++repeat) {
        const rlx_status status = rlx_masked_softmax(&v, &m, nullptr, nullptr);
        std::this_thread::yield();
        const std::string message = rlx_last_error();
        if (status == RLX_OK || message.find(own) == std::string::npos) {
          messages[i] = message.empty() ? "(no message)" : message;
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(messages[i], "") << "thread " << i << " saw another's error";
  }
}

// force_target while other threads run kernels: every call's output is
// one supported target's output for that call, bit for bit (a call
// dispatches once, up front). The forcing thread cycles through them.
TEST(ThreadTest, ForceTargetWhileOthersRunGivesOneTargetsResult) {
  const std::vector<std::string> targets = supported_targets();
  const Shape4 s{1, 4, 2, 300};
  const MaskSpec mask = MaskSpec::causal().with_window_keys(200);
  const testing::Tensor input = Scores(ScoreType::kF32, s, 5);
  // Each target's result, computed alone.
  std::vector<std::vector<std::uint8_t>> per_target;
  for (const std::string& name : targets) {
    force_target(name);
    testing::Tensor t = Scores(ScoreType::kF32, s, 5);
    masked_softmax(t.view, mask);
    per_target.push_back(ViewBytes(t));
  }
  force_target("");
  std::atomic<bool> stop{false};
  std::vector<int> foreign(kThreads - 1, 0);
  // Read by the forcing thread while the others run: atomic.
  std::vector<std::atomic<int>> calls(kThreads - 1);
  std::vector<std::thread> threads;
  for (int i = 0; i + 1 < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (!stop.load()) {
        testing::Tensor t = Scores(ScoreType::kF32, s, 5);
        masked_softmax(t.view, mask);
        bool known = false;
        const std::vector<std::uint8_t> got = ViewBytes(t);
        for (const auto& bytes : per_target) known = known || bytes == got;
        foreign[i] += !known;
        calls[i].fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // At least 20 rounds, and until every thread has made a few calls while
  // the target changes (on a loaded machine a thread may start late), for
  // at most a minute.
  const auto every_thread_called = [&] {
    for (const std::atomic<int>& c : calls) {
      if (c.load(std::memory_order_relaxed) < 3) return false;
    }
    return true;
  };
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (int round = 0;
       round < 20 ||
       (!every_thread_called() && std::chrono::steady_clock::now() < deadline);
       ++round) {
    for (const std::string& name : targets) {
      force_target(name);
      std::this_thread::yield();
    }
  }
  force_target("");
  stop.store(true);
  for (std::thread& t : threads) t.join();
  for (int i = 0; i + 1 < kThreads; ++i) {
    EXPECT_GE(calls[i].load(), 3) << "thread " << i;
    EXPECT_EQ(foreign[i], 0) << "thread " << i << ": " << foreign[i] << " of "
                             << calls[i].load() << " calls matched no target";
  }
}

// BucketedCache: shared under the executor's lock (its promise), every
// thread sees each bucket built once, and a reference get() returned stays
// valid while other threads fill other buckets.
TEST(ThreadTest, BucketedCacheSharedUnderALock) {
  std::atomic<int> builds{0};
  BucketedCache<std::vector<int>> cache(
      BucketLadder::power_of_two(1, 1024), [&](std::uint64_t upper) {
        builds.fetch_add(1);
        return std::vector<int>(upper, static_cast<int>(upper));
      });
  std::mutex lock;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937_64 rng(i);
      for (int n = 0; n < 500; ++n) {
        const std::uint64_t key = 1 + rng() % 1024;
        const std::vector<int>* artifact;
        std::uint64_t upper;
        {
          const std::lock_guard<std::mutex> guard(lock);
          auto [u, a] = cache.get(key);
          upper = u;
          artifact = &a;
        }
        // Read outside the lock: the artifact is never moved or rebuilt.
        bad[i] += artifact->size() != upper ||
                  (*artifact)[upper - 1] != static_cast<int>(upper) ||
                  upper < key;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(bad[i], 0) << "thread " << i;
  EXPECT_LE(builds.load(), 11);  // one per bucket of the ladder at most
}

}  // namespace
}  // namespace rlx
