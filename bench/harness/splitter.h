// SPDX-License-Identifier: MIT OR Apache-2.0
// A minimal thread pool for the threaded benchmarks: work(part) for every
// part, once per Run(), on threads that stay alive between runs.
#ifndef RLX_BENCH_HARNESS_SPLITTER_H_
#define RLX_BENCH_HARNESS_SPLITTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace rlx::bench {

// Waits until `value` differs from `old`: spins for a bounded time first,
// then sleeps in a C++20 atomic wait (a futex on Linux). The spin is what an
// executor's pool does between the layers of a token: a futex wake-up costs
// ~80 us in this 2-vCPU VM, more than a whole D2 call (~25 us). The bound
// keeps a waiter from starving the thread it waits for under qemu-user or
// on a busy machine.
inline void SpinThenWait(const std::atomic<std::uint32_t>& value,
                         std::uint32_t old) {
  for (int i = 0; i < 20000; ++i) {
    if (value.load(std::memory_order_acquire) != old) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  value.wait(old, std::memory_order_acquire);
}

// A barrier for `parties` threads, reusable: the last to arrive releases the
// others, which spin, then sleep (SpinThenWait). What an executor's pool
// does between the two steps of a split row (rlx/softmax_split.h).
class SpinBarrier {
 public:
  explicit SpinBarrier(std::uint32_t parties) : parties_(parties) {}
  void ArriveAndWait() {
    const std::uint32_t generation =
        generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_acq_rel);
      generation_.notify_all();
    } else {
      SpinThenWait(generation_, generation);
    }
  }

 private:
  const std::uint32_t parties_;
  std::atomic<std::uint32_t> arrived_{0};
  std::atomic<std::uint32_t> generation_{0};
};

// Runs work(part) for every part in [0, parts) once per Run(): part 0 on the
// calling thread, the others on std::threads that stay alive between runs,
// as an executor's pool would. Hand-offs spin briefly, then sleep
// (SpinThenWait).
class Splitter {
 public:
  Splitter(std::size_t parts, std::function<void(std::size_t)> work)
      : work_(std::move(work)) {
    for (std::size_t part = 1; part < parts; ++part) {
      workers_.emplace_back([this, part] { Worker(part); });
    }
  }
  ~Splitter() {
    stop_.store(true, std::memory_order_release);
    round_.fetch_add(1, std::memory_order_acq_rel);
    round_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  Splitter(const Splitter&) = delete;
  Splitter& operator=(const Splitter&) = delete;

  void Run() {
    const auto parts = static_cast<std::uint32_t>(workers_.size());
    pending_.store(parts, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    if (parts > 0) round_.notify_all();
    work_(0);
    for (std::uint32_t left;
         (left = pending_.load(std::memory_order_acquire)) != 0;) {
      SpinThenWait(pending_, left);
    }
  }

 private:
  void Worker(std::size_t part) {
    std::uint32_t seen = 0;
    for (;;) {
      SpinThenWait(round_, seen);
      seen = round_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      work_(part);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        pending_.notify_one();
      }
    }
  }

  std::function<void(std::size_t)> work_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint32_t> round_{0};    // bumped once per Run()
  std::atomic<std::uint32_t> pending_{0};  // workers still in this round
  std::atomic<bool> stop_{false};
};

}  // namespace rlx::bench

#endif  // RLX_BENCH_HARNESS_SPLITTER_H_
