"""Benchmarks (outside the package): the parts of the numpy MiniLM forward pass, one at a time.

* ``gelu``: ``gelu(x)`` in the calling thread against ``gelu(x, executor)`` (a pool of
  ``--threads``), for ``rows × 1536`` arrays (the intermediate layer of ``rows`` tokens): µs per
  call, and the size from which the pool is faster (its break-even).
* ``matmul``: ``x @ W`` for the four weight shapes of a layer, ``rows`` tokens: µs per call and
  GFLOP/s, the weights hot in the cache (one matrix again and again) and streamed (the six
  layers' weights in turn, as a forward pass reads them).
* ``floor``: the forward pass of ``--tokens`` tokens (default 13, the tokens of the 9-word
  question of ``bench_minilm.py --mode query``): its FLOPs, the time of its matmuls alone
  (streamed), the time of ``encode`` and of ``embed``, and the floors these give.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_minilm_parts.py gelu|matmul|floor``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from palimpsest.adapters.minilm import MiniLMEmbedder, bert, find_model_folder

HIDDEN, INTERMEDIATE = 384, 1536
SHAPES = ((HIDDEN, 3 * HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN))


_RUN = {"quick": False}  # --quick: one call, one round per figure (a smoke run; the figures mean nothing)


def _median_seconds(fn: Callable[[], object], *, calls: int, rounds: int = 9) -> float:
    if _RUN["quick"]:
        calls = rounds = 1
    for _ in range(1 if _RUN["quick"] else max(3, calls // 10)):
        fn()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - started) / calls)
    return sorted(times)[rounds // 2]


def gelu_break_even(threads: int, rows: list[int]) -> None:
    rng = np.random.default_rng(0)
    print(
        f"gelu on rows × {INTERMEDIATE} float32, inline vs a pool of {threads} threads (µs per call, median)"
    )
    threshold = getattr(bert, "GELU_POOL_MIN_ELEMENTS", 0)
    if threshold:
        bert.GELU_POOL_MIN_ELEMENTS = 0  # type: ignore[misc]  # the pool for every size here
    break_even = None
    with ThreadPoolExecutor(threads) as pool:
        for n in rows:
            x = (rng.standard_normal((n, INTERMEDIATE)) * 2).astype(np.float32)
            calls = max(5, 200_000 // x.size * 10)
            inline = _median_seconds(lambda x=x: bert.gelu(x), calls=calls)
            pooled = _median_seconds(lambda x=x: bert.gelu(x, pool), calls=calls)
            print(
                f"  rows {n:5d} ({x.size:8,d} elements): inline {inline * 1e6:9.1f}  pool {pooled * 1e6:9.1f}"
                f"  pool/inline {pooled / inline:5.2f}"
            )
            if pooled < inline and break_even is None:
                break_even = x.size
            elif pooled >= inline:
                break_even = None
    print(
        f"  the pool is faster from {break_even or '-'} elements on; the library uses it from {threshold or 'two blocks'}"
    )


def _weights() -> bert.BertWeights:
    from safetensors.numpy import load_file

    folder = find_model_folder()
    config = bert.BertConfig.from_json(json.loads((folder / "config.json").read_text(encoding="utf-8")))
    return bert.BertWeights.from_state_dict(config, load_file(str(folder / "model.safetensors")))


def _layer_weights(weights: bert.BertWeights) -> list[list[np.ndarray]]:
    return [[layer.qkv_w, layer.out_w, layer.up_w, layer.down_w] for layer in weights.layers]


def matmul_rates(rows: list[int]) -> None:
    layers = _layer_weights(_weights())
    rng = np.random.default_rng(0)
    per_token = 2 * sum(k * n for k, n in SHAPES)
    print("x @ W, float32 (µs per call hot in cache; GFLOP/s); streamed: the model's own product (bert._linear)")
    for n in rows:
        inputs = {k: rng.standard_normal((n, k)).astype(np.float32) for k in (HIDDEN, INTERMEDIATE)}
        cells = []
        for k, m in SHAPES:
            w = rng.standard_normal((k, m)).astype(np.float32)
            seconds = _median_seconds(lambda w=w, x=inputs[k]: x @ w, calls=max(20, 4000 // n))
            cells.append(f"{k}x{m} {seconds * 1e6:7.1f} µs {2 * n * k * m / seconds / 1e9:5.1f}")

        def streamed(inputs: dict[int, np.ndarray] = inputs) -> None:
            for layer in layers:
                for w in layer:
                    bert._linear(inputs[w.shape[1]], w)

        seconds = _median_seconds(streamed, calls=max(5, 400 // n))
        rate = n * per_token * len(layers) / seconds / 1e9
        print(
            f"  rows {n:4d}: "
            + " | ".join(cells)
            + f" || 6 layers streamed {seconds * 1e3:6.2f} ms {rate:5.1f}"
        )


def _attention_flops(tokens: int, heads: int = 12, head_dim: int = 32) -> int:
    return 2 * 2 * heads * tokens * tokens * head_dim


def floor(tokens: int) -> None:
    embedder = MiniLMEmbedder(threads=1, backend="numpy").load()  # the parts measured are numpy's
    weights = _weights()
    layers = _layer_weights(weights)
    rng = np.random.default_rng(0)
    per_layer = 2 * tokens * sum(k * n for k, n in SHAPES) + _attention_flops(tokens)
    flops = per_layer * len(layers)
    nbytes = sum(w.nbytes for layer in layers for w in layer)
    inputs = {k: rng.standard_normal((tokens, k)).astype(np.float32) for k in (HIDDEN, INTERMEDIATE)}

    def matmuls() -> None:
        for layer in layers:
            for w in layer:
                bert._linear(inputs[w.shape[1]], w)

    big = {k: rng.standard_normal((1024, k)).astype(np.float32) for k in (HIDDEN, INTERMEDIATE)}
    peak_w = rng.standard_normal((HIDDEN, INTERMEDIATE)).astype(np.float32)
    peak = 2 * 1024 * HIDDEN * INTERMEDIATE / _median_seconds(lambda: big[HIDDEN] @ peak_w, calls=20) / 1e9
    source = np.ones(64 * 2**20 // 4, dtype=np.float32)
    bandwidth = source.nbytes / _median_seconds(source.sum, calls=3) / 1e9
    ids = rng.integers(1000, 20000, size=tokens).astype(np.int64)
    text = " ".join(["word"] * (tokens - 2))
    matmul_s = _median_seconds(matmuls, calls=50)
    encode_s = _median_seconds(lambda: bert.encode(weights, ids, [tokens]), calls=50)
    embed_s = _median_seconds(lambda: embedder.embed([text]), calls=50)
    print(f"forward pass of {tokens} tokens: {flops / 1e6:.1f} MFLOP, weights read {nbytes / 2**20:.1f} MiB")
    print(
        f"  sgemm peak (1024 rows, 384x1536, hot): {peak:.1f} GFLOP/s -> compute floor {flops / peak / 1e9 * 1e3:.2f} ms"
    )
    print(
        f"  read bandwidth (64 MiB sum): {bandwidth:.1f} GB/s -> memory floor {nbytes / bandwidth / 1e9 * 1e3:.2f} ms"
    )
    print(f"  its matmuls alone, streamed: {matmul_s * 1e3:.2f} ms ({flops / matmul_s / 1e9:.1f} GFLOP/s)")
    print(f"  encode: {encode_s * 1e3:.2f} ms; embed (tokeniser and pooling too): {embed_s * 1e3:.2f} ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("part", choices=("gelu", "matmul", "floor"))
    parser.add_argument("--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--rows", type=int, nargs="*", default=None)
    parser.add_argument("--tokens", type=int, default=13)
    parser.add_argument("--quick", action="store_true", help="one call per figure: a smoke run")
    args = parser.parse_args(argv)
    _RUN["quick"] = args.quick
    if args.part == "gelu":
        gelu_break_even(args.threads, args.rows or [16, 64, 128, 256, 342, 512, 1024, 2048, 4096])
    elif args.part == "matmul":
        matmul_rates(args.rows or [1, 8, 12, 13, 16, 32, 64, 256, 1024])
    else:
        floor(args.tokens)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
