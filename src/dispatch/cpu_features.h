// SPDX-License-Identifier: MIT OR Apache-2.0
// CPU features that no Highway 1.0.3 target requires, read once from the
// CPU. A kernel that uses one checks it at run time, within the target that
// can run it, and keeps the target's portable code for CPUs without it.
#ifndef RLX_SRC_DISPATCH_CPU_FEATURES_H_
#define RLX_SRC_DISPATCH_CPU_FEATURES_H_

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace rlx::detail {

// Whether the CPU has AVX512_BF16, whose VCVTNE2PS2BF16 rounds two f32
// vectors to 32 bf16 (nearest even) in one instruction: Zen 4 and later,
// Sapphire Rapids and later. Highway 1.0.3's AVX3 and AVX3_DL targets do not
// require it (Icelake has AVX3_DL without it). CPUID leaf 7, subleaf 1,
// EAX bit 5; the AVX-512 register state the OS must enable is already
// required by those targets. Under qemu the emulated CPU model answers.
inline bool HasAvx512Bf16() {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 &&
           ((eax >> 5) & 1u) != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace rlx::detail

#endif  // RLX_SRC_DISPATCH_CPU_FEATURES_H_
