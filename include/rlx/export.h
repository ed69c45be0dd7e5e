/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* RLX_ATTN_MASK_API marks what the library exports: the C API and the C++
 * API of the public headers. The library is built with hidden visibility
 * (-fvisibility=hidden), so a shared build exports these names and nothing
 * of its internals (kernels, Highway, helpers). C and C++. */
#ifndef RLX_EXPORT_H_
#define RLX_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define RLX_ATTN_MASK_API __attribute__((visibility("default")))
#else
#define RLX_ATTN_MASK_API
#endif

#endif /* RLX_EXPORT_H_ */
