// SPDX-License-Identifier: MIT OR Apache-2.0
// The targets the softmax units (src/softmax/row_loop.cc, general_row_*.cc)
// compile: every other unit's but AVX3_DL, which runs AVX3's code there (their
// dispatch takes the nearest compiled target: RLX_DYNAMIC_DISPATCH_NEAREST in
// src/dispatch/dispatch.h). Nothing AVX3_DL adds (VNNI, VBMI2, VPCLMULQDQ,
// VAES, BITALG) serves exp, max or the f32 <-> 16-bit conversions, and the two
// compile to the same loops, so the copy would cost a fifth
// of these units' build for nothing. Include first, before any Highway
// header; no include guard: it only sets the macro.
#undef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
