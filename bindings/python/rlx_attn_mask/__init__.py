# SPDX-License-Identifier: MIT OR Apache-2.0
"""rlx-attn-mask: SIMD attention-mask kernels on NumPy arrays, torch tensors.

The names mirror the C++ API (include/rlx/), so its docs serve both:

    import numpy as np, rlx_attn_mask as rlx
    scores = np.random.randn(1, 8, 1, 513).astype(np.float32)
    rlx.masked_softmax(scores, rlx.MaskSpec.decode(300, 512), scale=0.125)

Arrays are taken in place, never copied: anything with the buffer protocol
(NumPy arrays) or ``__dlpack__`` (torch tensors; a tensor that requires grad
must be detached first) of float32, bfloat16 (torch) or float16, 4-D
``[batch, heads, q_len, k_len]`` with a contiguous key axis and any other
non-negative strides. Masks, positions, segments, slopes, sinks and row_lse
are read (or written) in place too, with exactly the dtype the C++ API takes
(int64 positions, offsets and prefix ends; int32 segments; float32 slopes,
sinks and row_lse). A MaskSpec keeps the arrays it refers to alive. The
kernels run with the GIL released, so Python threads on disjoint
``rows=(begin, end)`` ranges run in parallel.

Bad input raises ValueError with the library's message (DTypeError, both a
ValueError and a TypeError, for a wrong dtype; TypeError for an argument
that is not an array at all) and writes nothing.

``models.layer_masks(config, ...)`` gives each layer of a Hugging Face
model (Llama, Mistral, Qwen, Gemma, Cohere2, Llama 4, gpt-oss, ModernBERT)
its MaskSpec and masked_softmax options (docs/MODELS.md).

``__version__`` is the library's version (rlx::version(), CMake's
project(VERSION)). The package is typed: ``py.typed`` and stubs of the
compiled module (``_core/*.pyi``) come with it.
"""

from ._core import __version__ as __version__  # noqa: F401 (re-exported)
from ._core import (  # noqa: F401
    BlockMask,
    Bucket,
    MASKED_KEY_FILL_COST,
    BucketLadder,
    DTypeError,
    MaskSpec,
    alibi_slopes,
    active_target,
    apply_mask,
    bucket_decode_mask,
    bucket_decode_mask_windowed,
    classify_blocks,
    compiled_targets,
    dispatched_target,
    fill_bucket_decode_mask,
    finish_softmax_part,
    force_target,
    kept_keys,
    ladder_cost,
    masked_softmax,
    masked_softmax_into,
    masked_softmax_part,
    merge_softmax_parts,
    split_kept_keys,
    supported_targets,
)
from .bucketed_cache import BucketedCache  # noqa: F401
from . import models  # noqa: F401 (rlx_attn_mask.models.layer_masks)

__all__ = [
    "MASKED_KEY_FILL_COST",
    "BlockMask",
    "Bucket",
    "BucketLadder",
    "BucketedCache",
    "DTypeError",
    "MaskSpec",
    "alibi_slopes",
    "active_target",
    "apply_mask",
    "bucket_decode_mask",
    "bucket_decode_mask_windowed",
    "classify_blocks",
    "compiled_targets",
    "dispatched_target",
    "fill_bucket_decode_mask",
    "finish_softmax_part",
    "force_target",
    "kept_keys",
    "ladder_cost",
    "masked_softmax",
    "masked_softmax_into",
    "masked_softmax_part",
    "merge_softmax_parts",
    "models",
    "split_kept_keys",
    "supported_targets",
]
