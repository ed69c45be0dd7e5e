// SPDX-License-Identifier: MIT OR Apache-2.0
// Memory with an unmapped (PROT_NONE) page on each side, so that a kernel
// touching one byte before begin() or at end() faults instead of reading a
// neighbour's bytes. Tests place data flush against either guard to check
// that tails and heads stay inside their rows, on hardware and under
// emulators, whose partial-vector accesses may differ from hardware's (qemu
// 7.2 reads all 32 bytes of an AVX2 vmaskmov load).
#ifndef RLX_TESTS_COMMON_GUARDED_PAGES_H_
#define RLX_TESTS_COMMON_GUARDED_PAGES_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace rlx::testing {

class GuardedPages {
 public:
  // At least `bytes` usable bytes (whole pages) between the two guards.
  explicit GuardedPages(std::size_t bytes) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    usable_ = (bytes + page_ - 1) / page_ * page_;
    if (usable_ == 0) usable_ = page_;
    void* p = mmap(nullptr, usable_ + 2 * page_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw std::runtime_error("GuardedPages: mmap of " +
                               std::to_string(usable_ + 2 * page_) +
                               " bytes failed");
    }
    base_ = static_cast<std::uint8_t*>(p);
    if (mprotect(base_, page_, PROT_NONE) != 0 ||
        mprotect(base_ + page_ + usable_, page_, PROT_NONE) != 0) {
      munmap(base_, usable_ + 2 * page_);
      throw std::runtime_error("GuardedPages: mprotect failed");
    }
  }
  ~GuardedPages() { munmap(base_, usable_ + 2 * page_); }
  GuardedPages(const GuardedPages&) = delete;
  GuardedPages& operator=(const GuardedPages&) = delete;

  // The first usable byte: the byte before it is unmapped.
  std::uint8_t* begin() const { return base_ + page_; }
  // One past the last usable byte, the first unmapped one.
  std::uint8_t* end() const { return base_ + page_ + usable_; }

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t page_ = 0, usable_ = 0;
};

}  // namespace rlx::testing

#endif  // RLX_TESTS_COMMON_GUARDED_PAGES_H_
