"""MiniLM tests: the numpy BERT pieces that need no model files (the GELU, packed encoding on a tiny random BERT)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from palimpsest.adapters.minilm import bert


def _exact_gelu(values: np.ndarray) -> np.ndarray:
    return np.array([v * 0.5 * math.erfc(-v / math.sqrt(2.0)) for v in values.astype(np.float64).tolist()])


def test_gelu_is_within_4e_7_of_the_erf_gelu() -> None:
    grid = np.linspace(-20.0, 20.0, 400_001)
    noise = np.random.default_rng(5).standard_normal(100_000) * 3.0
    x = np.concatenate([grid, noise]).astype(np.float32)
    got = bert.gelu(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.abs(got.astype(np.float64) - _exact_gelu(x)).max() <= 4e-7


def test_gelu_keeps_the_shape_and_the_limits() -> None:
    x = np.array([[np.inf, -np.inf, 1e30, -1e30], [0.0, -0.0, 17.0, -17.0]], dtype=np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = bert.gelu(x)
    assert got.shape == (2, 4)
    assert np.array_equal(got, np.array([[np.inf, 0.0, 1e30, 0.0], [0.0, 0.0, 17.0, 0.0]], dtype=np.float32))
    assert np.isnan(bert.gelu(np.array([np.nan], dtype=np.float32)))[0]


def test_gelu_on_an_executor_gives_the_same_bits() -> None:
    rng = np.random.default_rng(9)
    small = rng.standard_normal((13, 1536)).astype(np.float32)
    large = rng.standard_normal(bert.GELU_POOL_MIN_ELEMENTS + 12_345).astype(np.float32) * 4
    with ThreadPoolExecutor(3) as pool:
        assert np.array_equal(bert.gelu(large, pool), bert.gelu(large))
        assert np.array_equal(bert.gelu(small, pool), bert.gelu(small))


CONFIG = bert.BertConfig(
    hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16, max_position_embeddings=16
)


def _random_state(seed: int = 3) -> dict[str, np.ndarray]:
    """A tiny BERT's tensors under Hugging Face's names (``weight`` is (out, in), as torch keeps it)."""
    rng = np.random.default_rng(seed)
    h, inner = CONFIG.hidden_size, CONFIG.intermediate_size
    state = {
        "embeddings.word_embeddings.weight": rng.standard_normal((50, h)),
        "embeddings.position_embeddings.weight": rng.standard_normal((CONFIG.max_position_embeddings, h)),
        "embeddings.token_type_embeddings.weight": rng.standard_normal((2, h)),
        "embeddings.LayerNorm.weight": 1 + 0.1 * rng.standard_normal(h),
        "embeddings.LayerNorm.bias": 0.1 * rng.standard_normal(h),
    }
    for i in range(CONFIG.num_hidden_layers):
        base = f"encoder.layer.{i}"
        for name, (rows, cols) in {
            "attention.self.query": (h, h),
            "attention.self.key": (h, h),
            "attention.self.value": (h, h),
            "attention.output.dense": (h, h),
            "intermediate.dense": (inner, h),
            "output.dense": (h, inner),
        }.items():
            state[f"{base}.{name}.weight"] = rng.standard_normal((rows, cols)) / np.sqrt(cols)
            state[f"{base}.{name}.bias"] = 0.1 * rng.standard_normal(rows)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            state[f"{base}.{norm}.weight"] = 1 + 0.1 * rng.standard_normal(h)
            state[f"{base}.{norm}.bias"] = 0.1 * rng.standard_normal(h)
    return state


def _reference(state: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT on one text, written plainly in float64 (the textbook order of operations)."""

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        centred = x - x.mean(axis=-1, keepdims=True)
        scaled = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + CONFIG.layer_norm_eps)
        return scaled * state[f"{name}.weight"] + state[f"{name}.bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ state[f"{name}.weight"].T + state[f"{name}.bias"]

    n, heads = len(ids), CONFIG.num_attention_heads
    d = CONFIG.hidden_size // heads
    x = (
        state["embeddings.word_embeddings.weight"][ids]
        + state["embeddings.position_embeddings.weight"][:n]
        + state["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings.LayerNorm")
    for i in range(CONFIG.num_hidden_layers):
        base = f"encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{base}.attention.self.{p}").reshape(n, heads, d).transpose(1, 0, 2)
            for p in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, heads * d)
        x = norm(dense(context, f"{base}.attention.output.dense") + x, f"{base}.attention.output.LayerNorm")
        inner = dense(x, f"{base}.intermediate.dense")
        inner = np.array([u * 0.5 * math.erfc(-u / math.sqrt(2.0)) for u in inner.reshape(-1)]).reshape(inner.shape)
        x = norm(dense(inner, f"{base}.output.dense") + x, f"{base}.output.LayerNorm")
    return x


def test_packed_texts_are_each_encoded_on_their_own() -> None:
    state = _random_state()
    weights = bert.BertWeights.from_state_dict(CONFIG, state)
    texts = [[1, 7, 9, 4, 2], [1, 3, 3, 8, 2], [1, 5, 2], [1], [1, 11, 12, 13, 14, 15, 2], [1, 6, 2]]
    lengths = [len(t) for t in texts]
    packed = bert.encode(weights, np.array([i for t in texts for i in t], dtype=np.int64), lengths)
    assert packed.shape == (sum(lengths), CONFIG.hidden_size) and packed.dtype == np.float32
    starts = np.cumsum([0, *lengths])
    for text, first, end in zip(texts, starts[:-1], starts[1:], strict=True):
        assert np.abs(packed[first:end] - _reference(state, text)).max() <= 1e-5
    pooled = bert.mean_pool_normalise(packed, lengths)
    expected = np.array([_reference(state, t).mean(axis=0) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.abs(pooled - expected).max() <= 1e-5


def test_attention_in_chunks_of_one_text_gives_the_same_states(monkeypatch: pytest.MonkeyPatch) -> None:
    weights = bert.BertWeights.from_state_dict(CONFIG, _random_state(8))
    lengths = [4, 4, 4, 2, 2]
    ids = np.arange(1, sum(lengths) + 1, dtype=np.int64)
    together = bert.encode(weights, ids, lengths)
    monkeypatch.setattr(bert, "_ATTENTION_SCORES", 1)
    assert np.abs(bert.encode(weights, ids, lengths) - together).max() <= 1e-6


def test_encode_refuses_lengths_that_do_not_match_the_ids() -> None:
    weights = bert.BertWeights.from_state_dict(CONFIG, _random_state())
    with pytest.raises(ValueError):
        bert.encode(weights, np.arange(5, dtype=np.int64), [2, 2])
    with pytest.raises(ValueError):
        bert.encode(weights, np.arange(5, dtype=np.int64), [5, 0])
