// SPDX-License-Identifier: MIT OR Apache-2.0
// The score kernels: applying a mask to attention score rows, and the fused
// masked softmax that follows it. Each call checks its arguments, then
// dispatches once (rlx/targets.h) for all its rows. Every kernel also takes a
// RowRange so that an executor can split one call across its own threads;
// results do not depend on the split.
//
// Errors: std::invalid_argument naming the function and the values, for null
// data, k_len 0, a row stride below k_len, a row range outside the tensor, a
// Decode mask whose past > upper or upper + 1 != k_len, a dense mask whose
// extents do not broadcast to the scores, or a view or dense mask that cannot
// exist in memory: more than PTRDIFF_MAX elements, or a last element whose
// byte offset (each stride times its extent - 1, plus k_len) exceeds
// PTRDIFF_MAX. Nothing is written then.
#ifndef RLX_SCORE_KERNELS_H_
#define RLX_SCORE_KERNELS_H_

#include <rlx/export.h>

#include <cstddef>
#include <vector>

#include "rlx/scores.h"

namespace rlx {

// The keys row (b, q) of a k_len-key tensor with q_len query rows may attend
// to under `mask`. For dense kinds and None this is the whole row [0, k_len):
// which keys a dense mask keeps is decided per element; a row with a nonzero
// group gets a cover of its group's keys and its position intervals (one
// hull; Decode's token apart). Executors use this to
// skip the masked part of P x V. Throws std::invalid_argument as above.
RLX_ATTN_MASK_API KeptKeys kept_keys(const MaskSpec& mask,
                                     std::size_t batch_index, std::size_t q,
                                     std::size_t q_len, std::size_t k_len);

// Masked scores become `fill` (default -inf; -1e9f reproduces the RLX CPU
// executor). Kept scores are left untouched, bit for bit. A Bias mask is
// added to every score instead (its -inf entries give -inf). bf16/f16 views
// store `fill` rounded to their type (-1e9f is -inf in f16).
RLX_ATTN_MASK_API void apply_mask(const ScoreView& scores, const MaskSpec& mask,
                                  float fill = kNegInf);
RLX_ATTN_MASK_API void apply_mask(const ScoreView& scores, const MaskSpec& mask,
                                  RowRange rows, float fill = kNegInf);

// docs/SEMANTICS.md, "Softmax extensions".
struct SoftmaxOptions {
  float scale = 1.0f;    // multiplies every score first
  float softcap = 0.0f;  // c > 0: x -> c * tanh(x / c), after scale and
                         // BEFORE masking (bias is added after it)
  // Learned sink logit per head (gpt-oss): enters only the denominator,
  // M = max(max_k z_k, s_h), p_k = exp(z_k - M) / (sum_k exp(z_k - M) +
  // exp(s_h - M)); not scaled, softcapped or masked. [heads]
  const float* sink_logits = nullptr;
  // ALiBi slope per head: z += -slope_h * |p_q - p_k| over logical
  // positions, after softcap and before the bias. [heads]
  const float* alibi_slopes = nullptr;
  // Optional output: M + log(denominator) per row of the tensor (index
  // (b * heads + h) * q_len + q), written for the call's rows; -inf for a
  // row with no kept key. [batch * heads * q_len]
  float* row_lse = nullptr;
  // false: kept-only writes, for executors that run P x V over kept_keys
  // only. Keys outside kept_keys(mask, b, q, ...) are left unwritten; every
  // key inside it is written exactly as in the default mode, a masked one as
  // 0 (kept_keys is a superset of the kept keys under explicit positions,
  // segments, groups, dense parts and biases). A row whose kept_keys is empty
  // is left unwritten entirely. docs/SEMANTICS.md, "Kept-only writes".
  bool zero_masked = true;
};

// ggml's ALiBi slopes for `heads` heads: n = 2^floor(log2 heads),
// m0 = 2^(-max_bias / n), m1 = 2^(-max_bias / 2n), slope m0^(h+1) for h < n,
// else m1^(2(h-n)+1). Throws std::invalid_argument for 0 heads or a
// max_bias that is NaN, negative or infinite.
RLX_ATTN_MASK_API std::vector<float> alibi_slopes(std::size_t heads,
                                                  float max_bias = 8.0f);

// Per row: p = softmax(mask(softcap(scale * s))), computed in f32 for every
// row type. Masked positions come out exactly 0; a row with no kept key (or
// whose kept scores are all -inf after the bias) comes out all zeros, never
// NaN; a kept row sums to 1 within 1e-6 (f32). A NaN or +inf among the kept
// scores is the caller's and propagates as plain softmax would (NaN row).
// For structured masks only the kept intervals are read; the rest is a zero
// fill. Error bound of each probability: see docs/KERNELS.md (the exp is
// softmax-specialised, <= 2 ulp; probabilities below FLT_MIN relative to the
// row maximum are 0). On AVX-512 targets the call sets MXCSR.FTZ while it
// runs and restores the caller's MXCSR before returning.
//
// In place, or from `in` into `out` (same shape and type; may alias exactly).
//
// Memory: no call allocates, except that a thread's first call on bf16/f16
// rows longer than 8192 keys allocates that thread's f32 exp buffer (about
// 4 bytes per key), which later calls reuse and longer rows grow; it is
// freed when the thread exits. Likewise a thread's first call with a key
// list (MaskSpec::key_indices; apply_mask too) allocates its work arrays
// (about 18 bytes per slot and a bit per key), grown by longer lists or
// rows. If an allocation fails, the call throws std::bad_alloc before it
// writes anything.
RLX_ATTN_MASK_API void masked_softmax(const ScoreView& scores,
                                      const MaskSpec& mask,
                                      const SoftmaxOptions& options = {});
RLX_ATTN_MASK_API void masked_softmax(const ScoreView& scores,
                                      const MaskSpec& mask,
                                      const SoftmaxOptions& options,
                                      RowRange rows);
RLX_ATTN_MASK_API void masked_softmax(const ScoreView& in, const ScoreView& out,
                                      const MaskSpec& mask,
                                      const SoftmaxOptions& options,
                                      RowRange rows);

}  // namespace rlx

#endif  // RLX_SCORE_KERNELS_H_
