"""MiniLM tests: the numpy BERT pieces that need no model files (the GELU)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
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
