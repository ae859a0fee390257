"""MiniLM adapter: the BERT encoder forward pass (embeddings, 6 attention layers) in numpy, float32.

Pure functions over a dict of weight arrays; the key names are those of Hugging Face's
``BertModel`` (``embeddings.word_embeddings.weight``, ``encoder.layer.0.attention.self.query.weight``...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "GELU_POOL_MIN_ELEMENTS",
    "BertConfig",
    "BertWeights",
    "encode",
    "gelu",
    "mean_pool_normalise",
    "normalise",
]

Array = npt.NDArray[np.float32]

# Attention scores computed at once: about 1 MiB of float32, near the size of a core's L2 cache.
_ATTENTION_SCORES = 1 << 18
# The dense layers' row count is rounded up to a multiple of this: BLAS's sgemm kernels work on
# blocks of 4 rows, and the encoder then takes 2-17 % less time on a text of 9-15 tokens.
_ROW_MULTIPLE = 4


@dataclass(frozen=True)
class BertConfig:
    """The shape of the encoder, read from the model's ``config.json``."""

    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    layer_norm_eps: float = 1e-12
    max_position_embeddings: int = 512
    hidden_act: str = "gelu"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BertConfig:
        config = cls(
            hidden_size=int(data.get("hidden_size", cls.hidden_size)),
            num_hidden_layers=int(data.get("num_hidden_layers", cls.num_hidden_layers)),
            num_attention_heads=int(data.get("num_attention_heads", cls.num_attention_heads)),
            intermediate_size=int(data.get("intermediate_size", cls.intermediate_size)),
            layer_norm_eps=float(data.get("layer_norm_eps", cls.layer_norm_eps)),
            max_position_embeddings=int(data.get("max_position_embeddings", cls.max_position_embeddings)),
            hidden_act=str(data.get("hidden_act", cls.hidden_act)),
        )
        if config.hidden_act != "gelu":
            raise ValueError(f"unsupported activation {config.hidden_act!r}; only 'gelu' (exact, erf) is.")
        if config.hidden_size % config.num_attention_heads:
            raise ValueError("hidden_size must be a multiple of num_attention_heads.")
        return config


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: Array  # (3*hidden, hidden): query (scaled by 1/√head_dim), key and value projections fused
    qkv_b: Array
    out_w: Array
    out_b: Array
    ln1_g: Array
    ln1_b: Array
    up_w: Array
    up_b: Array
    down_w: Array
    down_b: Array
    ln2_g: Array
    ln2_b: Array


@dataclass(frozen=True, slots=True)
class BertWeights:
    """The encoder's weights, contiguous float32, linear layers in PyTorch's (out, in) layout:
    :func:`_linear` multiplies them as ``W @ xᵀ`` (see there)."""

    config: BertConfig
    word: Array
    position: Array
    token_type: Array
    emb_ln_g: Array
    emb_ln_b: Array
    layers: tuple[_Layer, ...]

    @classmethod
    def from_state_dict(cls, config: BertConfig, state: Mapping[str, npt.NDArray[Any]]) -> BertWeights:
        prefix = _prefix_of(state)

        def get(name: str) -> Array:
            key = prefix + name
            if key not in state:
                raise KeyError(f"the weights file has no tensor {key!r}")
            return np.ascontiguousarray(state[key], dtype=np.float32)

        def linear(name: str) -> tuple[Array, Array]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        scale = np.float32(1.0 / np.sqrt(config.hidden_size // config.num_attention_heads))
        layers = []
        for i in range(config.num_hidden_layers):
            base = f"encoder.layer.{i}"
            q_w, q_b = linear(f"{base}.attention.self.query")
            q_w, q_b = q_w * scale, q_b * scale  # the attention scores come out scaled
            k_w, k_b = linear(f"{base}.attention.self.key")
            v_w, v_b = linear(f"{base}.attention.self.value")
            out_w, out_b = linear(f"{base}.attention.output.dense")
            up_w, up_b = linear(f"{base}.intermediate.dense")
            down_w, down_b = linear(f"{base}.output.dense")
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([q_w, k_w, v_w], axis=0)),
                    qkv_b=np.concatenate([q_b, k_b, v_b]),
                    out_w=out_w,
                    out_b=out_b,
                    ln1_g=get(f"{base}.attention.output.LayerNorm.weight"),
                    ln1_b=get(f"{base}.attention.output.LayerNorm.bias"),
                    up_w=up_w,
                    up_b=up_b,
                    down_w=down_w,
                    down_b=down_b,
                    ln2_g=get(f"{base}.output.LayerNorm.weight"),
                    ln2_b=get(f"{base}.output.LayerNorm.bias"),
                )
            )
        word = get("embeddings.word_embeddings.weight")
        if word.shape[1] != config.hidden_size:
            raise ValueError(f"word embeddings are {word.shape[1]}-d, config.json says {config.hidden_size}")
        return cls(
            config=config,
            word=word,
            position=get("embeddings.position_embeddings.weight"),
            token_type=get("embeddings.token_type_embeddings.weight"),
            emb_ln_g=get("embeddings.LayerNorm.weight"),
            emb_ln_b=get("embeddings.LayerNorm.bias"),
            layers=tuple(layers),
        )


def _prefix_of(state: Mapping[str, Any]) -> str:
    """``""`` for a bare ``BertModel`` file, ``"bert."`` or similar for a wrapped one."""
    suffix = "embeddings.word_embeddings.weight"
    for key in state:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    raise KeyError(f"the weights file has no {suffix!r}: not a BERT model")


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    """Layer norm over the last axis of a 2-d ``x``, computed in place; returns ``x``."""
    inv_n = np.float32(1.0 / x.shape[-1])
    mean = x.sum(axis=-1, keepdims=True)
    mean *= inv_n
    x -= mean
    var = np.square(x).sum(axis=-1, keepdims=True)
    var *= inv_n
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta
    return x


# Abramowitz & Stegun 7.1.26: erfc(z) = t·(a1 + a2·t + ... + a5·t⁴)·exp(-z²), t = 1/(1 + p·z), z ≥ 0,
# absolute error below 1.5e-7. With z = |x|/√2 and the coefficients halved, it gives Φ(-|x|).
_PHI_P = np.float32(0.3275911 / np.sqrt(2.0))
_PHI_COEFFICIENTS = tuple(
    np.float32(a / 2) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_GELU_BLOCK = 1 << 16  # elements per pass in one thread: the block's temporaries stay in the L2 cache
# Elements per task on the executor: larger, as every ufunc call takes the GIL again, and with
# smaller blocks the threads mostly wait for it.
_GELU_POOL_BLOCK = 1 << 17
# Below this many elements the blocks are computed in the calling thread: handing them to the
# executor's threads costs more than it saves (measured break-even: bench_minilm_parts.py gelu).
GELU_POOL_MIN_ELEMENTS = 4 * _GELU_POOL_BLOCK


def _gelu_block(x: Array, out: Array) -> None:
    """``out[:] = gelu(x)`` for a small 1-d block, with in-place ufuncs and three temporaries.

    gelu(x) = max(x, 0) - |x|·Φ(-|x|) for either sign, with Φ(-|x|) from A&S 7.1.26: the
    absolute error of the result stays below 4e-7. Past |x| = 16 the product is 0 in float32:
    clipping there keeps x² finite.
    """
    a = np.abs(x)
    np.minimum(a, np.float32(16.0), out=a)
    t = a * _PHI_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * _PHI_COEFFICIENTS[0]
    for c in _PHI_COEFFICIENTS[1:]:
        poly += c
        poly *= t
    np.multiply(a, a, out=out)
    out *= np.float32(-0.5)
    np.exp(out, out=out)
    poly *= out  # Φ(-|x|)
    poly *= a
    np.maximum(x, np.float32(0.0), out=out)
    out -= poly


def gelu(x: Array, executor: Executor | None = None) -> Array:
    """The exact (erf) GELU, ``x * Φ(x)``, as BERT uses it (float32, absolute error below 4e-7).

    With ``executor``, the blocks of an array of at least ``GELU_POOL_MIN_ELEMENTS`` are spread
    over its threads (numpy releases the GIL); the result is the same bit for bit (element-wise
    operations; every block starts at a multiple of the SIMD width).
    """
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    out = np.empty_like(flat)

    def run(start: int, size: int = _GELU_POOL_BLOCK) -> None:
        _gelu_block(flat[start : start + size], out[start : start + size])

    if executor is not None and flat.size >= GELU_POOL_MIN_ELEMENTS:
        try:
            for _ in executor.map(run, range(0, flat.size, _GELU_POOL_BLOCK)):
                pass
            return out.reshape(np.shape(x))
        except RuntimeError:
            # The executor was shut down (at interpreter exit, concurrent.futures shuts every
            # pool down before the last work of daemon threads ends): the blocks are
            # independent, so computing them all here gives the same result.
            pass
    for start in range(0, flat.size, _GELU_BLOCK):
        run(start, _GELU_BLOCK)
    return out.reshape(np.shape(x))


def _runs(lengths: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(first row, texts, length)`` of each run of consecutive texts of one length."""
    runs: list[tuple[int, int, int]] = []
    row = 0
    for n in lengths:
        if n < 1:
            raise ValueError("every text needs at least one token.")
        if runs and runs[-1][2] == n:
            first, count, _ = runs[-1]
            runs[-1] = (first, count + 1, n)
        else:
            runs.append((row, 1, n))
        row += n
    return runs


def _attention(qkv: Array, texts: int, length: int, heads: int, out: Array) -> None:
    """Self-attention of ``texts`` texts of ``length`` tokens each, their rows one after another:
    ``out`` (rows, hidden) gets the context vectors of ``qkv`` (rows, 3*hidden)."""
    head_dim = out.shape[1] // heads
    qkv5 = qkv.reshape(texts, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, t, h, s, d)
    q, k, v = qkv5[0], qkv5[1], qkv5[2]
    # Keys along axis -2: numpy reduces across rows far faster than along short rows.
    scores = k @ q.transpose(0, 1, 3, 2)  # (t, h, keys, queries), already scaled
    scores -= scores.max(axis=-2, keepdims=True)
    np.exp(scores, out=scores)
    sums = scores.sum(axis=-2)[..., None]  # (t, h, queries, 1)
    context = scores.transpose(0, 1, 3, 2) @ v  # (t, h, queries, d), then normalised
    context /= sums
    out.reshape(texts, length, heads, head_dim)[...] = context.transpose(0, 2, 1, 3)


def encode(
    weights: BertWeights,
    input_ids: npt.NDArray[np.int64],
    lengths: Sequence[int],
    executor: Executor | None = None,
) -> Array:
    """Last hidden states, shape (tokens, hidden), of texts packed one after another (token type 0).

    ``input_ids``: the token ids of every text, concatenated (1-d); ``lengths``: the texts' token
    counts, in order. Nothing is padded: the dense layers run on all the tokens at once, the
    attention on each run of consecutive texts of one length (put texts of a length together).
    ``executor``: threads for the element-wise GELU (the matmuls use BLAS's own threads).
    """
    config = weights.config
    hidden = config.hidden_size
    heads = config.num_attention_heads
    eps = config.layer_norm_eps
    runs = _runs(lengths)
    if input_ids.ndim != 1 or sum(lengths) != input_ids.shape[0]:
        raise ValueError("input_ids must be the texts' token ids one after another, sum(lengths) of them.")
    # Attention in chunks of texts whose scores stay near the L2 cache in size.
    chunks = []
    for first, texts, length in runs:
        per_chunk = max(1, _ATTENTION_SCORES // (heads * length * length))
        for done in range(0, texts, per_chunk):
            count = min(per_chunk, texts - done)
            chunks.append((slice(first + done * length, first + (done + count) * length), count, length))

    tokens = input_ids.shape[0]
    # Rows past the tokens up to a multiple of _ROW_MULTIPLE: finite (zero-based), never attended
    # to, dropped at the end.
    x = np.zeros((-(-tokens // _ROW_MULTIPLE) * _ROW_MULTIPLE, hidden), dtype=np.float32)
    np.take(weights.word, input_ids, axis=0, out=x[:tokens])
    for rows, texts, length in chunks:
        x[rows].reshape(texts, length, hidden)[...] += weights.position[:length]
    x += weights.token_type[0]
    _layer_norm(x, weights.emb_ln_g, weights.emb_ln_b, eps)

    context = np.zeros_like(x)
    for layer in weights.layers:
        qkv = _linear(x, layer.qkv_w)  # (tokens, 3*hidden)
        qkv += layer.qkv_b
        for rows, texts, length in chunks:
            _attention(qkv[rows], texts, length, heads, context[rows])
        attended = _linear(context, layer.out_w)
        attended += layer.out_b
        attended += x
        _layer_norm(attended, layer.ln1_g, layer.ln1_b, eps)
        inner = _linear(attended, layer.up_w)
        inner += layer.up_b
        inner = gelu(inner, executor)
        x = _linear(inner, layer.down_w)
        x += layer.down_b
        x += attended
        _layer_norm(x, layer.ln2_g, layer.ln2_b, eps)
    return x[:tokens]


_SMALL_ROWS = 64
"""Up to this many rows (a query, a chat turn or two), :func:`_linear` puts the weight first."""


def _linear(x: Array, weight: Array) -> Array:
    """``x @ weightᵀ``, C-contiguous. For a few rows it is computed as ``(weight @ xᵀ)ᵀ``: with
    the weight as sgemm's row operand, OpenBLAS streams it once where ``x @ W`` pays more per row
    (measured, one thread, this model's four shapes × 6 layers: 13 rows 6.9 → 6.0 ms, 32 rows
    9.2 → 6.9, 64 rows 14.4 → 13.3). Above ``_SMALL_ROWS`` rows the two orders cost the same
    and the plain one needs no copy back to row order."""
    if x.shape[0] <= _SMALL_ROWS:
        product: Array = np.ascontiguousarray((weight @ x.T).T)
        return product
    plain: Array = x @ weight.T
    return plain


def mean_pool_normalise(hidden_states: Array, lengths: Sequence[int]) -> Array:
    """Mean of each text's token vectors (``hidden_states`` as :func:`encode` packs them), then
    L2-normalised (sentence-transformers' Pooling + Normalize): shape (texts, hidden)."""
    counts = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pooled: Array = np.add.reduceat(hidden_states, starts, axis=0)
    pooled /= counts.astype(np.float32)[:, None]
    return normalise(pooled)


def normalise(vectors: Array) -> Array:
    """Each row divided by its L2 norm (sentence-transformers' Normalize), in place; returns it."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.maximum(norms, np.float32(1e-12))
    return vectors
