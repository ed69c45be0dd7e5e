# SPDX-License-Identifier: MIT OR Apache-2.0
"""A model's layers in one call: the MaskSpec and softmax options of each
attention layer, read from a Hugging Face ``config.json``.

    import json, rlx_attn_mask as rlx
    config = json.load(open("config.json"))
    for layer in rlx.models.layer_masks(config, batch=1, q_len=7, k_len=7):
        rlx.masked_softmax(scores[layer.index], layer.mask, **layer.options)

Each family's rules (which layers slide, how wide the window is, where a
chunk starts, which tokens form an image group, the scale and the softcap)
follow its Hugging Face transformers modeling and configuration code; the
field-by-field table, with the files and functions followed, is in
docs/MODELS.md.

The cache layout is the one transformers' DynamicCache gives: key slot k of
batch row b holds the token at index k of the (padded) sequence, and query
row q is the token in slot ``query_offset[b] + q`` (by default
``k_len - q_len``: the queries are the cache's last slots). A 2-D
``attention_mask`` (1 = token, 0 = padding) masks padding keys; its leading
zeros are the row's left padding, from which chunks are counted (as
transformers' ``chunked_overlay`` counts them). Rows whose query slot is
padding keep no key and come out all zeros (transformers leaves them to the
attention backend).
"""

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ._core import MaskSpec

FULL = "full_attention"
SLIDING = "sliding_attention"
CHUNKED = "chunked_attention"

_ArrayLike = Any  # an int array or nested sequence (NumPy, torch, lists)

__all__ = ["CHUNKED", "FULL", "LayerMask", "SLIDING", "layer_masks",
           "supported_model_types"]


class LayerMask:
    """One attention layer: its ``mask`` (a MaskSpec over scores
    ``[batch, heads, q_len, k_len]``), the ``masked_softmax`` keyword
    arguments ``options`` (``{"scale": s, "softcap": c}``, softcap 0 = none)
    and whether the layer has learned sink logits (``sinks``: pass the
    layer's ``sink_logits`` as well, e.g. with ``softmax_kwargs``).

    ``layer_type`` is transformers' name for the layer's pattern:
    ``"full_attention"``, ``"sliding_attention"`` or
    ``"chunked_attention"``. ``causal``, ``window_keys``,
    ``window_keys_after`` and ``chunk`` repeat the rules the mask holds, in
    this library's conventions (a window W keeps ``p_q - p_k < W``, one after
    A keeps ``p_k - p_q < A``; 0 = none)."""

    __slots__ = ("_index", "_layer_type", "_mask", "_options", "_sinks",
                 "_causal", "_window_keys", "_window_keys_after", "_chunk")

    def __init__(self, index: int, layer_type: str, mask: MaskSpec,
                 options: Dict[str, float], sinks: bool, causal: bool,
                 window_keys: int, window_keys_after: int,
                 chunk: int) -> None:
        """layer_masks builds these; the arguments are the properties."""
        self._index = index
        self._layer_type = layer_type
        self._mask = mask
        self._options = dict(options)
        self._sinks = sinks
        self._causal = causal
        self._window_keys = window_keys
        self._window_keys_after = window_keys_after
        self._chunk = chunk

    @property
    def index(self) -> int:
        """The layer's index, 0 for the first decoder (encoder) layer."""
        return self._index

    @property
    def layer_type(self) -> str:
        """"full_attention", "sliding_attention" or "chunked_attention"."""
        return self._layer_type

    @property
    def mask(self) -> MaskSpec:
        """The layer's MaskSpec (layers of one type share one object)."""
        return self._mask

    @property
    def options(self) -> Dict[str, float]:
        """``{"scale": ..., "softcap": ...}``: pass as ``**options`` to
        masked_softmax (a copy: changing it changes nothing here)."""
        return dict(self._options)

    @property
    def sinks(self) -> bool:
        """True when the layer adds learned sink logits to the softmax
        denominator (gpt-oss): pass them as ``sink_logits``."""
        return self._sinks

    @property
    def causal(self) -> bool:
        """True when a query sees no later key (decoders); False for the
        bidirectional encoders (ModernBERT, EmbeddingGemma)."""
        return self._causal

    @property
    def window_keys(self) -> int:
        """W: keys with ``p_q - p_k < W`` are kept; 0 = no window."""
        return self._window_keys

    @property
    def window_keys_after(self) -> int:
        """A: keys with ``p_k - p_q < A`` are kept; 0 = no limit."""
        return self._window_keys_after

    @property
    def chunk(self) -> int:
        """C: only keys in the query's chunk of C positions; 0 = none."""
        return self._chunk

    def softmax_kwargs(self, sink_logits: Optional[_ArrayLike] = None
                       ) -> Dict[str, Any]:
        """``options`` plus ``sink_logits`` for ``masked_softmax(scores,
        layer.mask, **layer.softmax_kwargs(sinks))``. ValueError when the
        layer has sinks and none are given, or has none and some are."""
        if self._sinks and sink_logits is None:
            raise ValueError(f"layer_masks: layer {self._index} has learned "
                             "sink logits; pass them as sink_logits")
        if not self._sinks and sink_logits is not None:
            raise ValueError(f"layer_masks: layer {self._index} has no sink "
                             "logits, but sink_logits were given")
        kwargs: Dict[str, Any] = dict(self._options)
        if self._sinks:
            kwargs["sink_logits"] = sink_logits
        return kwargs

    def __repr__(self) -> str:
        return (f"LayerMask(index={self._index}, "
                f"layer_type={self._layer_type!r}, causal={self._causal}, "
                f"window_keys={self._window_keys}, "
                f"window_keys_after={self._window_keys_after}, "
                f"chunk={self._chunk}, options={self._options}, "
                f"sinks={self._sinks})")


# Config reading ------------------------------------------------------------

class _Fields:
    """The fields of one (text) config with the errors layer_masks raises."""

    def __init__(self, fields: Mapping[str, Any], family: str) -> None:
        self.fields = fields
        self.family = family

    def has(self, name: str) -> bool:
        return self.fields.get(name) is not None

    def get(self, name: str, default: Any = None) -> Any:
        value = self.fields.get(name)
        return default if value is None else value

    def require(self, name: str, why: str = "",
                allow_null: bool = False) -> Any:
        if name not in self.fields or (self.fields[name] is None and
                                       not allow_null):
            raise ValueError(f"layer_masks: the {self.family} config has no "
                             f"`{name}`{why}")
        return self.fields[name]

    def positive_int(self, name: str, why: str = "") -> int:
        value = self.require(name, why)
        if isinstance(value, bool) or not isinstance(value, int) or \
                value <= 0:
            raise ValueError(f"layer_masks: the {self.family} config's "
                             f"`{name}` is {value!r}, not a positive "
                             f"integer{why}")
        return value

    def head_dim(self, use_field: bool = True) -> int:
        if use_field and self.has("head_dim"):
            return self.positive_int("head_dim")
        if "hidden_size" not in self.fields or \
                "num_attention_heads" not in self.fields:
            what = "`head_dim` or " if use_field else ""
            raise ValueError(f"layer_masks: the {self.family} config has no "
                             f"{what}`hidden_size` and `num_attention_heads`")
        return self.positive_int("hidden_size") // \
            self.positive_int("num_attention_heads")

    def layer_types(self, default: Callable[[int], str]) -> List[str]:
        n = self.positive_int("num_hidden_layers")
        if self.has("layer_types"):
            types = list(self.fields["layer_types"])
            if len(types) != n:
                raise ValueError(f"layer_masks: the {self.family} config's "
                                 f"`layer_types` has {len(types)} entries, "
                                 f"`num_hidden_layers` is {n}")
            return types
        return [default(i) for i in range(n)]


class _Plan:
    """What a family's code makes of its config: the layer types and the
    rules and options of each type."""

    def __init__(self, family: str, layer_types: List[str], scale: float,
                 softcap: float = 0.0, sinks: bool = False,
                 causal: bool = True, window: int = 0, window_after: int = 0,
                 chunk: int = 0, images: bool = False) -> None:
        allowed = {FULL, SLIDING, CHUNKED}
        for i, t in enumerate(layer_types):
            if t not in allowed:
                raise ValueError(f"layer_masks: the {family} config's layer "
                                 f"{i} has type {t!r}; known: "
                                 f"{sorted(allowed)}")
        if SLIDING in layer_types and window <= 0:
            raise ValueError(f"layer_masks: the {family} config has sliding "
                             "layers but no `sliding_window`")
        if CHUNKED in layer_types and chunk <= 0:
            raise ValueError(f"layer_masks: the {family} config has chunked "
                             "layers but no `attention_chunk_size`")
        self.family = family
        self.layer_types = layer_types
        self.scale = scale
        self.softcap = softcap
        self.sinks = sinks
        self.causal = causal
        self.window = window
        self.window_after = window_after
        self.chunk = chunk
        self.images = images


def _sliding_window(f: _Fields) -> int:
    """HF's `sliding_window` is W here: `kv_idx > q_idx - sliding_window`
    (masking_utils.sliding_window_overlay) is `p_q - p_k < W`."""
    if not f.has("sliding_window"):
        return 0
    return f.positive_int("sliding_window")


def _every_nth_full(n: int) -> Callable[[int], str]:
    """Layers i with (i + 1) % n == 0 are full, the others slide."""
    return lambda i: SLIDING if (i + 1) % n else FULL


def _llama(f: _Fields) -> _Plan:
    return _Plan(f.family, f.layer_types(lambda i: FULL),
                 f.head_dim() ** -0.5)


def _mistral(f: _Fields) -> _Plan:
    # MistralModel: create_sliding_window_causal_mask for every layer when
    # sliding_window is set, create_causal_mask when it is null.
    f.require("sliding_window", " (null for no window)", allow_null=True)
    window = _sliding_window(f)
    n = f.positive_int("num_hidden_layers")
    return _Plan(f.family, [SLIDING if window else FULL] * n,
                 f.head_dim() ** -0.5, window=window)


def _qwen(f: _Fields) -> _Plan:
    # Qwen2Config / Qwen3Config: sliding_window counts only with
    # use_sliding_window; layers from max_window_layers on slide.
    use = bool(f.get("use_sliding_window", False))
    window = _sliding_window(f) if use else 0
    first = f.get("max_window_layers", 28)
    types = f.layer_types(
        lambda i: SLIDING if window and i >= first else FULL)
    if SLIDING in types and not window:
        raise ValueError(f"layer_masks: the {f.family} config's "
                         "`layer_types` has sliding layers, but "
                         "`use_sliding_window` is false or "
                         "`sliding_window` is null")
    return _Plan(f.family, types, f.head_dim() ** -0.5, window=window)


def _gemma2(f: _Fields) -> _Plan:
    if f.get("use_bidirectional_attention", False):
        raise ValueError("layer_masks: the gemma2 config's "
                         "`use_bidirectional_attention` is not read here "
                         "(docs/MODELS.md lists what is)")
    types = f.layer_types(_every_nth_full(2))
    return _Plan(f.family, types,
                 float(f.require("query_pre_attn_scalar")) ** -0.5,
                 softcap=float(f.get("attn_logit_softcapping", 50.0) or 0.0),
                 window=_sliding_window(f))


def _gemma3(f: _Fields, images: bool) -> _Plan:
    pattern = f.get("sliding_window_pattern", 6)
    types = f.layer_types(_every_nth_full(pattern))
    scale = float(f.require("query_pre_attn_scalar")) ** -0.5
    softcap = float(f.get("attn_logit_softcapping", 0.0) or 0.0)
    bidirectional = f.get("use_bidirectional_attention", False)
    if not isinstance(bidirectional, bool):
        raise ValueError("layer_masks: the gemma3 config's "
                         "`use_bidirectional_attention` is "
                         f"{bidirectional!r}, not true or false")
    if bidirectional:
        # EmbeddingGemma: Gemma3TextConfig turns sliding_window into
        # sliding_window // 2 + 1 and Gemma3TextModel keeps
        # abs(q - k) < that on sliding layers, every key on full ones.
        if images:
            raise ValueError("layer_masks: image groups with "
                             "use_bidirectional_attention are not a "
                             "transformers model")
        reach = _sliding_window(f) // 2 + 1 if f.has("sliding_window") else 0
        return _Plan(f.family, types, scale, softcap=softcap, causal=False,
                     window=reach, window_after=reach)
    return _Plan(f.family, types, scale, softcap=softcap,
                 window=_sliding_window(f), images=images)


def _cohere2(f: _Fields) -> _Plan:
    # Cohere2Config sets head_dim = hidden_size // num_attention_heads.
    types = f.layer_types(
        _every_nth_full(f.get("sliding_window_pattern", 4)))
    return _Plan(f.family, types, f.head_dim(use_field=False) ** -0.5,
                 window=_sliding_window(f))


def _llama4(f: _Fields) -> _Plan:
    # Llama4TextConfig: no_rope_layers[i] == 1 means layer i uses RoPE and
    # chunked attention; 0 (every no_rope_layer_interval-th) is a NoPE layer
    # with full attention.
    n = f.positive_int("num_hidden_layers")
    rope = f.get("no_rope_layers") or [
        int((i + 1) % f.get("no_rope_layer_interval", 4) != 0)
        for i in range(n)]
    if len(rope) != n:
        raise ValueError(f"layer_masks: the llama4 config's `no_rope_layers` "
                         f"has {len(rope)} entries, `num_hidden_layers` is "
                         f"{n}")
    types = f.layer_types(lambda i: CHUNKED if rope[i] else FULL)
    chunk = 0
    if CHUNKED in types:
        chunk = f.positive_int("attention_chunk_size",
                               " (its chunked layers need it)")
    return _Plan(f.family, types, f.head_dim() ** -0.5, chunk=chunk)


def _gpt_oss(f: _Fields) -> _Plan:
    types = f.layer_types(_every_nth_full(2))
    return _Plan(f.family, types, f.head_dim() ** -0.5, sinks=True,
                 window=_sliding_window(f))


def _modernbert(f: _Fields) -> _Plan:
    # ModernBertConfig: layer i is global when i % global_attn_every_n_layers
    # == 0; local layers keep abs(q - k) <= local_attention // 2.
    every = f.get("global_attn_every_n_layers", 3)
    types = f.layer_types(lambda i: FULL if i % every == 0 else SLIDING)
    reach = 0
    if SLIDING in types:
        reach = f.positive_int("local_attention",
                               " (its local layers need it)") // 2 + 1
    return _Plan(f.family, types, f.head_dim(use_field=False) ** -0.5,
                 causal=False, window=reach, window_after=reach)


# model_type -> (family, reader, whether image groups apply). A config with a
# `text_config` (gemma3, llama4) is read from its text config.
_FAMILIES: Dict[str, Tuple[str, Callable[..., _Plan], bool]] = {
    "llama": ("llama", _llama, False),
    "mistral": ("mistral", _mistral, False),
    "qwen2": ("qwen2", _qwen, False),
    "qwen3": ("qwen3", _qwen, False),
    "gemma2": ("gemma2", _gemma2, False),
    "gemma3_text": ("gemma3", lambda f: _gemma3(f, False), False),
    "gemma3": ("gemma3", lambda f: _gemma3(f, True), True),
    "cohere2": ("cohere2", _cohere2, False),
    "llama4": ("llama4", _llama4, False),
    "llama4_text": ("llama4", _llama4, False),
    "gpt_oss": ("gpt_oss", _gpt_oss, False),
    "modernbert": ("modernbert", _modernbert, False),
}


def supported_model_types() -> List[str]:
    """The ``model_type`` values layer_masks reads (docs/MODELS.md)."""
    return sorted(_FAMILIES)


def _plan(config: Any) -> _Plan:
    if hasattr(config, "to_dict") and not isinstance(config, Mapping):
        config = config.to_dict()  # a transformers PretrainedConfig
    if not isinstance(config, Mapping):
        raise TypeError("layer_masks: config must be a dict of config.json "
                        f"fields, not {type(config).__name__}")
    model_type = config.get("model_type")
    text = config.get("text_config")
    if text is not None and not isinstance(text, Mapping):
        raise TypeError("layer_masks: text_config must be a dict, not "
                        f"{type(text).__name__}")
    if model_type not in _FAMILIES and text is not None and \
            text.get("model_type") in _FAMILIES:
        model_type = text.get("model_type")
    if model_type is None:
        raise ValueError("layer_masks: the config has no `model_type`")
    if model_type not in _FAMILIES:
        raise ValueError(f"layer_masks: unknown model_type {model_type!r}; "
                         f"known: {supported_model_types()}")
    family, reader, _ = _FAMILIES[model_type]
    return reader(_Fields(text if text is not None else config, family))


# Cache layout --------------------------------------------------------------

def _int_rows(name: str, value: _ArrayLike, batch: int,
              k_len: int) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    a = np.asarray(value)
    if a.ndim == 1 and batch == 1:
        a = a[None, :]
    if a.shape != (batch, k_len):
        raise ValueError(f"layer_masks: {name} has shape {a.shape}, not "
                         f"(batch, k_len) = ({batch}, {k_len})")
    if a.dtype != np.bool_ and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"layer_masks: {name} has dtype {a.dtype}, not an "
                         "integer or bool dtype")
    return a.astype(np.int64)


def _image_groups(token_type_ids: np.ndarray) -> np.ndarray:
    """Gemma 3: each run of consecutive image tokens (type 1) is one group,
    numbered from 1 along the row; 0 = text."""
    image = token_type_ids == 1
    previous = np.zeros_like(image)
    previous[:, 1:] = image[:, :-1]
    groups = np.cumsum(image & ~previous, axis=1)
    return np.where(image, groups, 0).astype(np.int32)


class _Layout:
    """The cache layout's arrays, shared by every layer's MaskSpec."""

    def __init__(self, plan: _Plan, batch: int, q_len: int, k_len: int,
                 query_offset: Optional[_ArrayLike],
                 attention_mask: Optional[_ArrayLike],
                 token_type_ids: Optional[_ArrayLike],
                 image_groups: Optional[_ArrayLike],
                 segments: Optional[_ArrayLike]) -> None:
        for name, v in (("batch", batch), ("q_len", q_len),
                        ("k_len", k_len)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) \
                    or v < 1:
                raise ValueError(f"layer_masks: {name} is {v!r}, not a "
                                 "positive integer")
        if query_offset is None:
            offsets = np.full(batch, k_len - q_len, dtype=np.int64)
        else:
            offsets = np.asarray(query_offset, dtype=np.int64).reshape(-1)
            if offsets.size == 1:
                offsets = np.full(batch, int(offsets[0]), dtype=np.int64)
            if offsets.shape != (batch,):
                raise ValueError("layer_masks: query_offset has "
                                 f"{offsets.size} values, not 1 or batch = "
                                 f"{batch}")
        if (offsets < 0).any() or (offsets + q_len > k_len).any():
            raise ValueError(f"layer_masks: query_offset {offsets.tolist()} "
                             f"puts queries outside the k_len = {k_len} "
                             f"cache slots (q_len = {q_len})")
        # Slot of query q in row b.
        self.q_slots = offsets[:, None] + np.arange(q_len)[None, :]
        self.offsets = np.ascontiguousarray(offsets)
        self.q_positions = self.k_positions = None
        if attention_mask is not None:
            keep = _int_rows("attention_mask", attention_mask, batch,
                             k_len) != 0
            # Left padding: the leading zeros (masking_utils'
            # create_chunked_causal_mask); positions start after it, so
            # chunks do too, and windows (differences) do not change.
            left = np.where(keep.any(axis=1), keep.argmax(axis=1), k_len)
            k_pos = np.arange(k_len)[None, :] - left[:, None]
            self.k_positions = np.ascontiguousarray(
                np.where(keep, k_pos, -1), dtype=np.int64)
            self.q_positions = np.ascontiguousarray(
                self.q_slots - left[:, None], dtype=np.int64)
        self.q_groups = self.k_groups = None
        if token_type_ids is not None and image_groups is not None:
            raise ValueError("layer_masks: pass token_type_ids or "
                             "image_groups, not both")
        if token_type_ids is not None or image_groups is not None:
            if not plan.images:
                raise ValueError(f"layer_masks: the {plan.family} model has "
                                 "no image token groups (token_type_ids / "
                                 "image_groups are for gemma3)")
            if token_type_ids is not None:
                groups = _image_groups(_int_rows(
                    "token_type_ids", token_type_ids, batch, k_len))
            else:
                groups = _int_rows("image_groups", image_groups, batch,
                                   k_len)
                if (groups < 0).any() or (groups > 2**31 - 1).any():
                    raise ValueError("layer_masks: image_groups holds "
                                     "values outside [0, 2^31)")
            self.k_groups = np.ascontiguousarray(groups, dtype=np.int32)
            self.q_groups = self._at_query_slots(self.k_groups)
        self.q_segments = self.k_segments = None
        if segments is not None:
            seg = _int_rows("segments", segments, batch, k_len)
            if (seg < -2**31).any() or (seg > 2**31 - 1).any():
                raise ValueError("layer_masks: segments holds values "
                                 "outside int32")
            self.k_segments = np.ascontiguousarray(seg, dtype=np.int32)
            self.q_segments = self._at_query_slots(self.k_segments)

    def _at_query_slots(self, rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(
            np.take_along_axis(rows, self.q_slots, axis=1), dtype=np.int32)

    def spec(self, plan: _Plan, layer_type: str) -> MaskSpec:
        m = MaskSpec.causal() if plan.causal else MaskSpec.none()
        m = m.with_query_offsets(self.offsets)
        if self.q_positions is not None:
            m = m.with_positions(self.q_positions, self.k_positions)
        if layer_type == SLIDING:
            m = m.with_window_keys(plan.window)
            if plan.window_after:
                m = m.with_window_keys_after(plan.window_after)
        elif layer_type == CHUNKED:
            m = m.with_chunk(plan.chunk)
        if self.q_groups is not None:
            m = m.with_groups(self.q_groups, self.k_groups)
        if self.q_segments is not None:
            m = m.with_segments(self.q_segments, self.k_segments)
        return m


def layer_masks(config: Any, *, batch: int = 1, q_len: int, k_len: int,
                query_offset: Optional[_ArrayLike] = None,
                attention_mask: Optional[_ArrayLike] = None,
                token_type_ids: Optional[_ArrayLike] = None,
                image_groups: Optional[_ArrayLike] = None,
                segments: Optional[_ArrayLike] = None) -> List[LayerMask]:
    """One LayerMask per layer (``num_hidden_layers`` of them) of the model
    ``config`` describes, for scores ``[batch, heads, q_len, k_len]``.

    ``config``: the fields of its ``config.json`` as a dict (or a
    transformers config object); a multimodal config's ``text_config`` is
    read for gemma3 and llama4. Known ``model_type`` values:
    ``supported_model_types()``.

    The cache: key slot k holds token k of the row; ``query_offset`` (an int
    or one per batch row, default ``k_len - q_len``) is the slot of query
    row 0, so a prefill is ``q_len == k_len`` and a decode step ``q_len ==
    1``. ``attention_mask`` ``[batch, k_len]``: 0 marks padding keys (left
    padding shifts chunk starts as in transformers). ``token_type_ids``
    ``[batch, k_len]`` (gemma3, 1 = image token; each run of consecutive
    image tokens is one group) or ``image_groups`` (group ids, 0 = text):
    a query sees every key of its own image group, whatever causality or
    the window says. ``segments`` ``[batch, k_len]``: packed sequences; a
    query sees only keys of its own segment.

    ValueError names an unknown ``model_type``, a missing config field the
    family needs, or a layout argument of the wrong shape or range."""
    plan = _plan(config)
    layout = _Layout(plan, batch, q_len, k_len, query_offset,
                     attention_mask, token_type_ids, image_groups, segments)
    options = {"scale": float(plan.scale), "softcap": float(plan.softcap)}
    specs: Dict[str, MaskSpec] = {}
    layers = []
    for i, layer_type in enumerate(plan.layer_types):
        if layer_type not in specs:
            specs[layer_type] = layout.spec(plan, layer_type)
        sliding = layer_type == SLIDING
        layers.append(LayerMask(
            i, layer_type, specs[layer_type], options, plan.sinks,
            plan.causal, plan.window if sliding else 0,
            plan.window_after if sliding else 0,
            plan.chunk if layer_type == CHUNKED else 0))
    return layers
