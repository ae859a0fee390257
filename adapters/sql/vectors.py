"""Adapters layer (SQL kit): vector validation and L2 normalisation with numpy (bulk inserts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from palimpsest.domain.errors import VectorDimensionError
from palimpsest.domain.search import check_vector

__all__ = ["normalise", "normalise_many"]


def normalise_many(vectors: Sequence[Sequence[float]], dimension: int | None) -> list[np.ndarray]:
    """:func:`normalise` for a batch in one vectorised pass (bulk inserts); any irregular
    input takes the one-by-one path so that errors name the same problems."""
    if not vectors:
        return []
    try:
        matrix = np.array(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        matrix = None
    if (
        matrix is None
        or matrix.ndim != 2
        or matrix.shape[1] == 0
        or (dimension is not None and matrix.shape[1] != dimension)
        or not np.isfinite(matrix).all()
    ):
        return [normalise(v, dimension) for v in vectors]
    norms = np.linalg.norm(matrix, axis=1)
    if not norms.all():
        return [normalise(v, dimension) for v in vectors]
    unit = (matrix / norms[:, None]).astype(np.float32)
    return list(unit)


def normalise(vector: Sequence[float], dimension: int | None) -> np.ndarray:
    """A validated, L2-normalised float32 copy of ``vector`` (raises ``VectorDimensionError``).

    The domain's :func:`check_vector` defines what a valid vector is; plain numeric sequences
    and arrays take an equivalent vectorised path because per-element Python checks would
    dominate the cost of a bulk insert, and anything else falls back to ``check_vector``.
    """
    try:
        array = np.array(vector, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 1 or array.size == 0:
        # Anything unusual gets the domain's own checks and error messages.
        array = np.asarray(check_vector(vector, dimension), dtype=np.float64)
    else:
        if not np.isfinite(array).all():
            raise VectorDimensionError("a vector must contain only finite values.")
        if dimension is not None and array.size != dimension:
            raise VectorDimensionError(
                f"vector has {array.size} dimensions but this store holds {dimension}-dimensional vectors."
            )
        if not array.any():
            raise VectorDimensionError("a vector must not be all zeros (it has no direction).")
    norm = float(np.sqrt(np.dot(array, array)))
    if not np.isfinite(norm) or norm == 0.0:  # overflowing or underflowing magnitudes
        scale = float(np.abs(array).max())
        array = array / scale
        norm = float(np.sqrt(np.dot(array, array)))
    return (array / norm).astype(np.float32)
