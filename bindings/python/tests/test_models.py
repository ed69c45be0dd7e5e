# SPDX-License-Identifier: MIT OR Apache-2.0
"""rlx_attn_mask.models.layer_masks against each family's mask written out
here in NumPy, independently of the library's rules: the predicates of
transformers' masking (over cache slot indices: `kv <= q`, `kv > q - W`,
chunk indices counted from the left padding, `abs(q - kv)` windows, image
groups as runs of image tokens, the padding mask), the layer pattern each
configuration class derives, and the scale and softcap its attention module
uses. Each family runs once per supported target: apply_mask with the
returned MaskSpec must keep exactly the dense mask's keys; a few families
also run masked_softmax with the returned options against a float64
softmax.

The image-group (Gemma 3) and two-sided-window (ModernBERT, EmbeddingGemma)
checks use MaskSpec.with_groups and MaskSpec.with_window_keys_after.
"""

import math

import numpy as np
import pytest

import rlx_attn_mask as rlx
from rlx_attn_mask import models
from conftest import require_torch

F, S, C = "full_attention", "sliding_attention", "chunked_attention"


# The layouts: (name, batch, q_len, k_len, query_offset, attention_mask).
def layouts(k_len=11):
    pad = np.ones((2, k_len), dtype=np.int64)
    pad[0, :3] = 0  # row 0: three left-padding tokens
    return [
        ("prefill", 1, k_len, k_len, None, None),
        ("prefill_left_padded", 2, k_len, k_len, None, pad),
        ("decode_left_padded", 2, 1, k_len, None, pad),
        ("chunk_with_offsets", 2, 3, k_len, np.array([5, 8]), pad),
    ]


# Transformers-style predicates over (b, q_idx, kv_idx) index grids ----------

def grids(batch, q_len, k_len, query_offset):
    off = np.full(batch, k_len - q_len) if query_offset is None else \
        np.broadcast_to(np.asarray(query_offset), (batch,))
    b = np.arange(batch)[:, None, None]
    q = off[:, None, None] + np.arange(q_len)[None, :, None]
    kv = np.arange(k_len)[None, None, :]
    return b, q, kv


def left_padding(attention_mask, batch, k_len):
    """The number of leading zeros per row (0 without a mask)."""
    if attention_mask is None:
        return np.zeros(batch, dtype=np.int64)
    out = []
    for row in attention_mask:
        n = 0
        while n < k_len and row[n] == 0:
            n += 1
        out.append(n)
    return np.array(out)


def image_group_ids(token_type_ids):
    """Runs of consecutive 1s, numbered per row from 0; -1 elsewhere."""
    out = np.full(token_type_ids.shape, -1)
    for b, row in enumerate(token_type_ids):
        group = -1
        for k, t in enumerate(row):
            if t == 1:
                if k == 0 or row[k - 1] != 1:
                    group += 1
                out[b, k] = group
    return out


def dense_keep(pattern, batch, q_len, k_len, query_offset=None,
               attention_mask=None, token_type_ids=None, segments=None):
    """pattern(b, q, kv, left_pad) -> bool grid; then the OR of image groups,
    the AND of the padding mask and packed segments, as transformers
    composes them. [batch, q_len, k_len]."""
    b, q, kv = grids(batch, q_len, k_len, query_offset)
    lp = left_padding(attention_mask, batch, k_len)[:, None, None]
    keep = np.broadcast_to(pattern(b, q, kv, lp), (batch, q_len, k_len))
    if token_type_ids is not None:
        g = image_group_ids(np.asarray(token_type_ids))
        keep = keep | ((g[b, q] == g[b, kv]) & (g[b, q] >= 0))
    if attention_mask is not None:
        keep = keep & (np.asarray(attention_mask)[b, kv] != 0)
    if segments is not None:
        seg = np.asarray(segments)
        keep = keep & (seg[b, q] == seg[b, kv])
    return keep


def causal(b, q, kv, lp):
    return kv <= q


def sliding(W):
    return lambda b, q, kv, lp: (kv > q - W) & (kv <= q)


def chunked(size):
    return lambda b, q, kv, lp: ((kv - lp) // size == (q - lp) // size) & \
        (kv <= q)


def bidirectional(b, q, kv, lp):
    return np.ones(np.broadcast(b, q, kv).shape, dtype=bool)


def within(reach, inclusive):
    if inclusive:
        return lambda b, q, kv, lp: np.abs(q - kv) <= reach
    return lambda b, q, kv, lp: np.abs(q - kv) < reach


def library_keep(mask, batch, q_len, k_len):
    scores = np.zeros((batch, 2, q_len, k_len), dtype=np.float32)
    rlx.apply_mask(scores, mask, fill=-1.0)
    assert (scores[:, 0] == scores[:, 1]).all()
    return scores[:, 0] == 0.0


def check_family(config, types, patterns, k_len=11, extra=None):
    """Every layout, every layer: the layer types and the kept sets."""
    for name, batch, q_len, kl, offset, pad in layouts(k_len):
        kwargs = dict(batch=batch, q_len=q_len, k_len=kl,
                      query_offset=offset, attention_mask=pad)
        kwargs.update(extra(batch, kl) if extra else {})
        layers = models.layer_masks(config, **kwargs)
        assert [layer.layer_type for layer in layers] == types
        assert [layer.index for layer in layers] == list(range(len(types)))
        for layer in layers:
            assert (layer.mask.window_keys, layer.mask.window_keys_after,
                    layer.mask.chunk) == (layer.window_keys,
                                          layer.window_keys_after,
                                          layer.chunk)
            want = dense_keep(patterns[layer.layer_type], batch, q_len, kl,
                              offset, pad,
                              kwargs.get("token_type_ids"),
                              kwargs.get("segments"))
            got = library_keep(layer.mask, batch, q_len, kl)
            assert (got == want).all(), (
                f"{config['model_type']} layer {layer.index} "
                f"({layer.layer_type}) layout {name}:\n"
                f"{got.astype(int)}\nwant\n{want.astype(int)}")
        # Sanity of the layouts: some padding and windows actually bite.
        if pad is not None and q_len == kl:
            assert not dense_keep(causal, batch, q_len, kl, offset,
                                  pad)[0, 5, 1]


def reference_softmax(scores, keep, scale, softcap, sinks=None):
    z = scores.astype(np.float64) * scale
    if softcap:
        z = softcap * np.tanh(z / softcap)
    z = np.where(keep[:, None], z, -np.inf)
    m = z.max(axis=-1, keepdims=True)
    if sinks is not None:
        s = np.asarray(sinks, dtype=np.float64)[None, :, None, None]
        m = np.maximum(m, s)
    e = np.where(keep[:, None], np.exp(z - m), 0.0)
    denom = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        denom = denom + np.exp(s - m)
    return e / denom


def check_softmax(layer, batch, q_len, k_len, rng, sinks=None, **layout):
    heads = 2
    scores = rng.standard_normal((batch, heads, q_len, k_len)).astype(
        np.float32) * 20
    keep = library_keep(layer.mask, batch, q_len, k_len)
    kwargs = layer.softmax_kwargs(sinks)
    got = rlx.masked_softmax(scores.copy(), layer.mask, **kwargs)
    want = reference_softmax(scores, keep, layer.options["scale"],
                             layer.options["softcap"], sinks)
    np.testing.assert_allclose(got, want, atol=2e-6, rtol=1e-5)


# Families --------------------------------------------------------------------

def test_llama_every_layer_causal_with_packed_segments(target):
    config = {"model_type": "llama", "num_hidden_layers": 3,
              "hidden_size": 64, "num_attention_heads": 4}
    check_family(config, [F, F, F], {F: causal})
    seg = lambda batch, k_len: {"segments": np.repeat(
        np.array([[0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2]]), batch, axis=0)}
    check_family(config, [F, F, F], {F: causal}, extra=seg)
    layers = models.layer_masks(config, q_len=4, k_len=4)
    assert layers[0].options == {"scale": 16 ** -0.5, "softcap": 0.0}
    assert not layers[0].sinks and layers[0].causal
    config["head_dim"] = 32  # the head_dim field wins (Llama 3.x)
    assert models.layer_masks(config, q_len=4, k_len=4)[0].options[
        "scale"] == 32 ** -0.5


def test_mistral_single_window_or_none(target):
    config = {"model_type": "mistral", "num_hidden_layers": 2,
              "sliding_window": 4, "head_dim": 128,
              "hidden_size": 4096, "num_attention_heads": 32}
    check_family(config, [S, S], {S: sliding(4)})
    assert models.layer_masks(config, q_len=2, k_len=2)[1].options[
        "scale"] == 128 ** -0.5
    config["sliding_window"] = None
    check_family(config, [F, F], {F: causal})


def test_qwen2_max_window_layers_and_use_sliding_window(target):
    config = {"model_type": "qwen2", "num_hidden_layers": 4,
              "hidden_size": 64, "num_attention_heads": 2,
              "sliding_window": 3, "max_window_layers": 2,
              "use_sliding_window": True}
    check_family(config, [F, F, S, S], {F: causal, S: sliding(3)})
    assert models.layer_masks(config, q_len=1, k_len=2)[0].options[
        "scale"] == 32 ** -0.5
    config["use_sliding_window"] = False  # the window is ignored then
    check_family(config, [F, F, F, F], {F: causal})


def test_qwen3_layer_types_and_head_dim(target):
    config = {"model_type": "qwen3", "num_hidden_layers": 3,
              "hidden_size": 64, "num_attention_heads": 2, "head_dim": 128,
              "sliding_window": 5, "use_sliding_window": True,
              "max_window_layers": 0, "layer_types": [S, F, S]}
    check_family(config, [S, F, S], {F: causal, S: sliding(5)})
    assert models.layer_masks(config, q_len=1, k_len=2)[0].options[
        "scale"] == 128 ** -0.5


def test_gemma2_alternation_scale_and_softcap(target, rng):
    config = {"model_type": "gemma2", "num_hidden_layers": 4,
              "sliding_window": 4, "query_pre_attn_scalar": 144,
              "head_dim": 256, "attn_logit_softcapping": 50.0}
    check_family(config, [S, F, S, F], {F: causal, S: sliding(4)})
    layers = models.layer_masks(config, q_len=11, k_len=11)
    assert layers[0].options == {"scale": 1 / 12, "softcap": 50.0}
    check_softmax(layers[0], 1, 11, 11, rng)
    check_softmax(layers[1], 1, 11, 11, rng)


def test_gemma3_text_every_sixth_layer_full(target, rng):
    config = {"model_type": "gemma3_text", "num_hidden_layers": 7,
              "sliding_window": 4, "query_pre_attn_scalar": 256,
              "head_dim": 256, "sliding_window_pattern": 6}
    check_family(config, [S, S, S, S, S, F, S], {F: causal, S: sliding(4)})
    layers = models.layer_masks(config, q_len=3, k_len=11)
    assert layers[5].options == {"scale": 1 / 16, "softcap": 0.0}
    check_softmax(layers[0], 1, 3, 11, rng)


def two_images(batch, k_len):
    """Text, a 6-token image (longer than the window of 4), text, a 3-token
    image, text; row 1 shifted by the left padding of layouts()."""
    row = np.array([0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1])
    tt = np.repeat(row[None, :k_len], batch, axis=0)
    if batch == 2:
        tt[0] = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0])[:k_len]
    return {"token_type_ids": tt}


def test_gemma3_images_are_or_ed_over_causal_and_sliding(target):
    config = {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 6,
        "sliding_window": 4, "query_pre_attn_scalar": 256, "head_dim": 256}}
    check_family(config, [S, S, S, S, S, F], {F: causal, S: sliding(4)},
                 extra=two_images)
    # The first image token sees the whole image, five tokens ahead, and
    # the later image's tokens do not see the earlier image beyond W.
    layers = models.layer_masks(config, q_len=11, k_len=11,
                                **two_images(1, 11))
    keep = library_keep(layers[0].mask, 1, 11, 11)[0]
    assert keep[1, 6] and not keep[0, 1] and not keep[8, 3]
    assert keep[8, 10] and not keep[7, 8]
    # Explicit group ids: two adjacent images stay apart.
    groups = np.array([[0, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0]])
    layers = models.layer_masks(config, q_len=11, k_len=11,
                                image_groups=groups)
    keep = library_keep(layers[5].mask, 1, 11, 11)[0]
    assert keep[1, 2] and keep[3, 5] and not keep[2, 3] and not keep[6, 7]


def test_embeddinggemma_bidirectional_sliding_window(target):
    # Gemma3TextConfig: sliding_window 6 -> 6 // 2 + 1 = 4; the sliding
    # layers keep abs(q - k) < 4, the full ones every (non-padding) key.
    config = {"model_type": "gemma3_text", "num_hidden_layers": 6,
              "sliding_window": 6, "query_pre_attn_scalar": 256,
              "head_dim": 256, "use_bidirectional_attention": True}
    check_family(config, [S, S, S, S, S, F],
                 {F: bidirectional, S: within(4, inclusive=False)})
    layer = models.layer_masks(config, q_len=2, k_len=2)[0]
    assert not layer.causal and layer.window_keys == 4 and \
        layer.window_keys_after == 4


def test_cohere2_every_fourth_layer_full(target):
    config = {"model_type": "cohere2", "num_hidden_layers": 8,
              "sliding_window": 5, "hidden_size": 96,
              "num_attention_heads": 4, "head_dim": 7}
    check_family(config, [S, S, S, F, S, S, S, F],
                 {F: causal, S: sliding(5)})
    # Cohere2Config derives head_dim from hidden_size / heads.
    assert models.layer_masks(config, q_len=1, k_len=1)[0].options[
        "scale"] == 24 ** -0.5


def test_llama4_chunked_rope_layers_and_full_nope_layers(target):
    config = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "num_hidden_layers": 5,
        "attention_chunk_size": 4, "head_dim": 128, "hidden_size": 5120,
        "num_attention_heads": 40}}
    check_family(config, [C, C, C, F, C], {F: causal, C: chunked(4)})
    config["text_config"]["no_rope_layers"] = [0, 1, 1, 0, 1]
    check_family(config, [F, C, C, F, C], {F: causal, C: chunked(4)})
    assert models.layer_masks(config, q_len=1, k_len=2)[1].chunk == 4


def test_gpt_oss_sinks_and_alternation(target, rng):
    config = {"model_type": "gpt_oss", "num_hidden_layers": 4,
              "sliding_window": 3, "head_dim": 64}
    check_family(config, [S, F, S, F], {F: causal, S: sliding(3)})
    layers = models.layer_masks(config, batch=2, q_len=11, k_len=11,
                                attention_mask=layouts()[1][5])
    assert all(layer.sinks for layer in layers)
    assert layers[0].options == {"scale": 0.125, "softcap": 0.0}
    sinks = np.array([0.5, -1.0], dtype=np.float32)
    check_softmax(layers[0], 2, 11, 11, rng, sinks=sinks)
    check_softmax(layers[1], 2, 11, 11, rng, sinks=sinks)
    with pytest.raises(ValueError, match="sink"):
        layers[0].softmax_kwargs()


def test_modernbert_global_every_third_layer_local_two_sided(target):
    config = {"model_type": "modernbert", "num_hidden_layers": 5,
              "hidden_size": 64, "num_attention_heads": 4,
              "global_attn_every_n_layers": 3, "local_attention": 6}
    check_family(config, [F, S, S, F, S],
                 {F: bidirectional, S: within(3, inclusive=True)})
    layers = models.layer_masks(config, q_len=2, k_len=2)
    assert layers[0].options["scale"] == 0.25
    with pytest.raises(ValueError, match="sink"):
        layers[0].softmax_kwargs(np.zeros(2, dtype=np.float32))


def test_torch_layout_arrays_and_a_config_object():
    torch = require_torch()
    pad = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])

    class Config:  # what transformers' PretrainedConfig offers
        def to_dict(self):
            return {"model_type": "gpt_oss", "num_hidden_layers": 2,
                    "sliding_window": 2, "head_dim": 4}

    layers = models.layer_masks(Config(), batch=2, q_len=5, k_len=5,
                                attention_mask=pad,
                                query_offset=torch.tensor(0))
    want = dense_keep(sliding(2), 2, 5, 5, None, pad.numpy())
    assert (library_keep(layers[0].mask, 2, 5, 5) == want).all()


# Errors ----------------------------------------------------------------------

@pytest.mark.parametrize("config, message", [
    ({"model_type": "gpt2", "num_hidden_layers": 2}, "unknown model_type"),
    ({"num_hidden_layers": 2}, "no `model_type`"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4},
     "`num_hidden_layers`"),
    ({"model_type": "llama", "num_hidden_layers": 2},
     "`head_dim` or `hidden_size`"),
    ({"model_type": "gemma2", "num_hidden_layers": 2, "sliding_window": 4,
      "head_dim": 8}, "`query_pre_attn_scalar`"),
    ({"model_type": "gemma2", "num_hidden_layers": 2, "head_dim": 8,
      "query_pre_attn_scalar": 8}, "sliding_window"),
    ({"model_type": "mistral", "num_hidden_layers": 2, "head_dim": 8},
     "`sliding_window`"),
    ({"model_type": "llama4_text", "num_hidden_layers": 2, "head_dim": 8},
     "`attention_chunk_size`"),
    ({"model_type": "qwen2", "num_hidden_layers": 2, "head_dim": 8,
      "layer_types": [F]}, "`layer_types` has 1"),
    ({"model_type": "qwen3", "num_hidden_layers": 1, "head_dim": 8,
      "sliding_window": 4, "layer_types": [S]}, "`use_sliding_window`"),
    ({"model_type": "gpt_oss", "num_hidden_layers": 2, "head_dim": 8,
      "sliding_window": 0}, "`sliding_window` is 0"),
])
def test_bad_configs_name_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        models.layer_masks(config, q_len=1, k_len=1)


def test_bad_layouts_are_value_errors():
    config = {"model_type": "llama", "num_hidden_layers": 1, "head_dim": 8}
    with pytest.raises(ValueError, match="attention_mask has shape"):
        models.layer_masks(config, batch=2, q_len=2, k_len=3,
                           attention_mask=np.ones((2, 2)))
    with pytest.raises(ValueError, match="query_offset"):
        models.layer_masks(config, q_len=2, k_len=3, query_offset=2)
    with pytest.raises(ValueError, match="gemma3"):
        models.layer_masks(config, q_len=2, k_len=2,
                           token_type_ids=np.zeros((1, 2), dtype=int))
    with pytest.raises(ValueError, match="q_len"):
        models.layer_masks(config, q_len=0, k_len=2)
    with pytest.raises(TypeError, match="dict"):
        models.layer_masks([1, 2], q_len=1, k_len=1)


def test_supported_model_types_are_the_documented_families():
    assert models.supported_model_types() == sorted([
        "cohere2", "gemma2", "gemma3", "gemma3_text", "gpt_oss", "llama",
        "llama4", "llama4_text", "mistral", "modernbert", "qwen2", "qwen3"])
    assert math.isclose(models.layer_masks(
        {"model_type": "gemma3_text", "num_hidden_layers": 1,
         "sliding_window": 2, "query_pre_attn_scalar": 4},
        q_len=1, k_len=1)[0].options["scale"], 0.5)
