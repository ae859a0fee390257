"""Benchmarks (outside the package): vector search on one large user scope, exact and two-pass.

Builds ``--n`` records (default 1,000,000, dimension 384) in ONE user scope of the embedded
store's vector index (``NumpyVectorIndex``, the code ``EmbeddedStore.search`` calls; no SQLite,
so that a million rows build in seconds) and measures, over ``--queries`` queries (default 200,
after a warm-up):

- build time (generating the vectors is timed apart from loading them into the index);
- p50 / p95 latency of exact search (every float32 vector scanned) and of the two-pass search
  of ``vector_search="auto"`` (sign-bit Hamming scan, then exact re-scoring of the candidates);
- recall@10 of the two-pass search against the exact search of the same index, without and
  with a filter (one record type of two, about half the rows);
- peak RSS of the process and the load average of the machine.

Data (``--data``): ``mixture`` (default: unit vectors drawn around a few thousand random
centroids, closer to sentence embeddings), ``random`` (isotropic Gaussian: the worst case for
sign bits), ``minilm`` (real all-MiniLM-L6-v2 embeddings of generated sentences; slow to embed,
about 100 texts/s, so ``--cache FILE.npy`` keeps them between runs).

Run: ``python benchmarks/bench_scale.py`` (about 3 minutes and 3 GB of memory at the default
size), ``--n 20000 --data minilm --cache minilm.npy`` for the real-embedding check, ``--n 5000
--queries 20`` for a smoke run. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from palimpsest.adapters.embedded.codec import NO_EXPIRY_US, TYPE_CODES
from palimpsest.adapters.embedded.vector_index import (
    APPROXIMATE_MIN_ROWS,
    CANDIDATES_MIN,
    CANDIDATES_PER_RESULT,
    IndexBatch,
    NumpyVectorIndex,
    VectorCandidate,
    VectorFilter,
)
from palimpsest.domain import RecordType

USER = "solo"
FACT, PREFERENCE = TYPE_CODES[RecordType.FACT], TYPE_CODES[RecordType.PREFERENCE]
DATA_KINDS = ("mixture", "random", "minilm")
_TIE = 1e-6  # a returned row scoring within this of the exact k-th best counts as a true hit


@dataclass(frozen=True)
class Config:
    n: int = 1_000_000
    dim: int = 384
    k: int = 10
    queries: int = 200
    warmup: int = 10
    data: str = "mixture"
    centroids: int = 4_096
    noise: float = 1.5  # norm of the noise added to a unit centroid (cosine to it ≈ 1/sqrt(1+noise²))
    seed: int = 20_261_201
    batch: int = 100_000
    approximate_min_rows: int | None = None  # None: the library default, or 0 if n is below it
    candidates_min: int = CANDIDATES_MIN
    candidates_per_result: int = CANDIDATES_PER_RESULT
    cache: Path | None = None  # minilm: embeddings kept here between runs

    @property
    def threshold(self) -> int:
        if self.approximate_min_rows is not None:
            return self.approximate_min_rows
        return APPROXIMATE_MIN_ROWS if self.n > APPROXIMATE_MIN_ROWS else 0


@dataclass
class Result:
    config: Config
    timings: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (p50, p95)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # name -> p50 of the process's CPU time
    recall: dict[str, float] = field(default_factory=dict)  # tie-aware recall@k, mean over queries
    recall_min: dict[str, float] = field(default_factory=dict)
    overlap: dict[str, float] = field(default_factory=dict)  # plain id overlap, mean
    peak_rss_mb: float = 0.0
    index_mb: float = 0.0
    load: tuple[tuple[float, float, float], tuple[float, float, float]] = ((0, 0, 0), (0, 0, 0))


# -- data ------------------------------------------------------------------------------------


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def synthetic(config: Config, count: int, stream: int) -> np.ndarray:
    """``count`` unit float32 vectors of ``config.data`` (``mixture`` or ``random``)."""
    rng = np.random.default_rng([config.seed, stream])
    out = np.empty((count, config.dim), dtype=np.float32)
    centres = None
    if config.data == "mixture":
        centres = _unit(
            np.random.default_rng([config.seed, 0]).standard_normal((config.centroids, config.dim))
        )
        centres = centres.astype(np.float32)
    for start in range(0, count, config.batch):
        stop = min(count, start + config.batch)
        noise = rng.standard_normal((stop - start, config.dim), dtype=np.float32)
        if centres is None:
            out[start:stop] = _unit(noise)
        else:
            labels = rng.integers(0, len(centres), stop - start)
            out[start:stop] = _unit(centres[labels] + noise * np.float32(config.noise / np.sqrt(config.dim)))
    return out


# Sentence parts: "name: part | part | ...", a line starting with spaces continues the one above.
_PARTS = """
subjects: I | my sister | our team | the user | my landlord | the doctor | my manager | we | my
    partner | the kids | my neighbour | the client | my father | our teacher | the coach
verbs: prefers | wants to book | needs to cancel | forgot about | is allergic to | asked about |
    complained about | recommended | is saving for | keeps postponing | loves | hates | signed up
    for | paid for | is worried about | wants to learn about
travel: a flight to Rome | a train to Berlin | the hotel in Lisbon | window seats | travel insurance
    | a hiking trip in the Alps | the passport renewal | a beach holiday in Crete
food: sourdough pizza | vegetarian meals | thin crust pizza | the sushi place near the station |
    gluten-free bread | peanuts | a cooking class | coffee beans | spicy ramen
health: the dentist appointment | physiotherapy for the knee | a yoga class | the flu vaccine |
    sleep problems | the annual check-up | running shoes | a vitamin D test
work: the quarterly report | the budget review | a meeting with Anna | the product launch | the job
    interview | the conference in Madrid | a raise | the onboarding plan
home: the broken heater | a new sofa | the rent increase | the garden fence | solar panels | the
    leaking tap | a bigger flat | the internet contract
money: a pension plan | the tax return | an index fund | the car loan | the electricity bill | a
    savings account | the insurance premium | cryptocurrency
hobbies: guitar lessons | a chess tournament | the photography course | a marathon | bird watching |
    the book club | a pottery workshop | learning Japanese
tails: next Friday | before the summer | this weekend | as soon as possible | every morning |
    since last year | after the holidays | on Tuesday evenings | - | - | - | again
"""


def _parts() -> dict[str, tuple[str, ...]]:
    joined = _PARTS.strip().replace("\n    ", " ")
    out = {}
    for line in joined.splitlines():
        name, _, rest = line.partition(": ")
        out[name] = tuple(part.strip() for part in rest.split(" | "))
    return out


_P = _parts()
_SUBJECTS, _VERBS = _P.pop("subjects"), _P.pop("verbs")
_TAILS = tuple("" if tail == "-" else tail for tail in _P.pop("tails"))  # "-": no time
_TOPICS = _P


def sentences(count: int, seed: int = 11) -> list[str]:
    """``count`` distinct generated memory-like sentences (subject, verb, topic objects, time)."""
    rng = random.Random(seed)
    topics = sorted(_TOPICS)
    out: dict[str, None] = {}
    for _ in range(100 * count):
        if len(out) == count:
            break
        topic = _TOPICS[rng.choice(topics)]
        parts = [rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(topic)]
        if rng.random() < 0.4:
            parts += ["and", rng.choice(topic)]
        tail = rng.choice(_TAILS)
        if tail:
            parts.append(tail)
        out[" ".join(parts).capitalize() + "."] = None
    return list(out)


def minilm(config: Config, count: int, log: Callable[[str], None]) -> np.ndarray:
    """MiniLM embeddings of ``count`` distinct generated sentences (read from the cache if it fits)."""
    if config.cache is not None and config.cache.exists():
        cached = np.load(config.cache)
        if len(cached) >= count:
            return np.ascontiguousarray(cached[:count], dtype=np.float32)
    from palimpsest.adapters.minilm import MiniLMEmbedder

    texts = sentences(count)
    if len(texts) < count:
        raise SystemExit(f"the sentence generator gives only {len(texts):,} distinct sentences")
    started = time.perf_counter()
    vectors = MiniLMEmbedder().load().embed_array(texts).astype(np.float32)
    log(f"embedded {count:,} sentences with MiniLM in {time.perf_counter() - started:.0f} s")
    if config.cache is not None:
        np.save(config.cache, vectors)
    return vectors


def dataset(config: Config, log: Callable[[str], None]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, queries), unit float32. Queries are drawn like the rows but are not among them."""
    if config.data == "minilm":
        both = minilm(config, config.n + config.warmup + config.queries, log)
        both = _unit(both.astype(np.float32))
        return both[: config.n], both[config.n :]
    return synthetic(config, config.n, 1), synthetic(config, config.warmup + config.queries, 2)


# -- index -----------------------------------------------------------------------------------


def build_index(config: Config, rows: np.ndarray) -> NumpyVectorIndex:
    """All rows in one user scope, loaded as the store loads them (``IndexBatch`` of float32 blobs).

    Even rows are facts and odd rows preferences, so that a type filter admits half of them.
    """
    index = NumpyVectorIndex(
        int(NO_EXPIRY_US),
        vector_search="auto",
        approximate_min_rows=config.threshold,
        candidates_min=config.candidates_min,
        candidates_per_result=config.candidates_per_result,
    )
    never = int(NO_EXPIRY_US)
    for start in range(0, len(rows), config.batch):
        stop = min(len(rows), start + config.batch)
        count = stop - start
        blob = rows[start:stop].astype("<f4").tobytes()
        width = 4 * config.dim
        index.upsert(
            IndexBatch(
                keys=[(False, f"r{i:07d}") for i in range(start, stop)],
                users=[USER] * count,
                agents=[None] * count,
                threads=[None] * count,
                types=[FACT if i % 2 == 0 else PREFERENCE for i in range(start, stop)],
                valid=[True] * count,
                expires=[never] * count,
                blobs=[blob[j * width : (j + 1) * width] for j in range(count)],
            )
        )
    return index


def search_filter(type_codes: frozenset[int]) -> VectorFilter:
    return VectorFilter(
        type_codes=type_codes,
        now_us=0,
        include_invalid=False,
        user_id=USER,
        agent_code=None,
        thread_code=None,
    )


def percentile(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def timed(
    index: NumpyVectorIndex, queries: np.ndarray, flt: VectorFilter, k: int, warmup: int
) -> tuple[list[float], list[float], list[list[VectorCandidate]]]:
    """Wall-clock and CPU milliseconds per measured search, and the answers.

    CPU time counts every thread of the process, OpenBLAS workers spinning while they wait
    included, so on two cores it is about twice the wall time of any search that calls BLAS.
    """
    for query in queries[:warmup]:
        index.search(query, flt, k)
    samples: list[float] = []
    cpu: list[float] = []
    answers: list[list[VectorCandidate]] = []
    for query in queries[warmup:]:
        started, started_cpu = time.perf_counter(), time.process_time()
        found = index.search(query, flt, k)
        samples.append((time.perf_counter() - started) * 1000.0)
        cpu.append((time.process_time() - started_cpu) * 1000.0)
        answers.append(found)
    return samples, cpu, answers


def recall(
    exact: list[list[VectorCandidate]], approximate: list[list[VectorCandidate]], k: int
) -> tuple[float, float, float]:
    """(mean tie-aware recall@k, its minimum, mean plain id overlap).

    Tie-aware: a returned row counts when its exact score reaches the exact k-th best score
    (within 1e-6), so an equally good row swapped for another is not a miss. Both searches
    report exact cosine scores, so this compares like with like.
    """
    scores: list[float] = []
    overlaps: list[float] = []
    for truth, found in zip(exact, approximate):
        if not truth:
            continue
        kth = truth[min(k, len(truth)) - 1][0]
        wanted = min(k, len(truth))
        scores.append(sum(1 for c in found[:k] if c[0] >= kth - _TIE) / wanted)
        overlaps.append(len({c[2] for c in truth[:k]} & {c[2] for c in found[:k]}) / wanted)
    return float(np.mean(scores)), float(np.min(scores)), float(np.mean(overlaps))


def run(config: Config, log: Callable[[str], None] = print) -> Result:
    result = Result(config)
    result.load = (os.getloadavg(), (0.0, 0.0, 0.0))
    started = time.perf_counter()
    rows, queries = dataset(config, log)
    result.timings["data_s"] = time.perf_counter() - started
    started = time.perf_counter()
    index = build_index(config, rows)
    result.timings["build_s"] = time.perf_counter() - started
    result.index_mb = (rows.nbytes + len(rows) * 8 * -(-config.dim // 64)) / 2**20
    del rows
    assert index.approximate(USER), "the two-pass path must be in use for the measurement"
    log(f"data in {result.timings['data_s']:.1f} s, index built in {result.timings['build_s']:.1f} s")

    threshold = index.approximate_min_rows
    for name, codes in (("all", frozenset({FACT, PREFERENCE})), ("one type", frozenset({FACT}))):
        flt = search_filter(codes)
        index.approximate_min_rows = sys.maxsize  # the exact scan, same index and code
        exact_ms, exact_cpu, exact = timed(index, queries, flt, config.k, config.warmup)
        index.approximate_min_rows = threshold
        approx_ms, approx_cpu, approx = timed(index, queries, flt, config.k, config.warmup)
        result.cpu_ms[f"exact, {name}"] = percentile(exact_cpu, 50)
        result.cpu_ms[f"two-pass, {name}"] = percentile(approx_cpu, 50)
        result.latency_ms[f"exact, {name}"] = (percentile(exact_ms, 50), percentile(exact_ms, 95))
        result.latency_ms[f"two-pass, {name}"] = (percentile(approx_ms, 50), percentile(approx_ms, 95))
        mean, low, overlap = recall(exact, approx, config.k)
        result.recall[name], result.recall_min[name], result.overlap[name] = mean, low, overlap
        log(
            f"{name}: exact p50 {result.latency_ms[f'exact, {name}'][0]:.1f} ms, "
            f"two-pass p50 {result.latency_ms[f'two-pass, {name}'][0]:.1f} ms, recall {mean:.4f}"
        )
    result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    result.load = (result.load[0], os.getloadavg())
    return result


def report(result: Result) -> str:
    c = result.config
    data = {
        "mixture": f"Gaussian mixture, {c.centroids:,} centroids, noise {c.noise:g}",
        "random": "isotropic Gaussian (worst case for sign bits)",
        "minilm": "all-MiniLM-L6-v2 embeddings of generated sentences",
    }[c.data]
    lines = [
        "palimpsest vector search at scale (NumpyVectorIndex, one user scope)",
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} logical cores",
        f"n={c.n:,} dim={c.dim} k={c.k}, data: {data}; {c.queries} measured queries after {c.warmup} warm-up",
        (
            f"two-pass settings: partitions above {c.threshold:,} rows, "
            f"candidates max({c.candidates_min:,}, {c.candidates_per_result} x k)"
        ),
        (
            f"build: data {result.timings['data_s']:.1f} s, index {result.timings['build_s']:.1f} s; "
            f"vectors + sign bits {result.index_mb:,.0f} MiB; peak RSS {result.peak_rss_mb:,.0f} MiB"
        ),
    ]
    for name, (p50, p95) in result.latency_ms.items():
        cpu = result.cpu_ms[name]
        lines.append(f"{name:>20}: p50 {p50:8.2f} ms   p95 {p95:8.2f} ms   (CPU time p50 {cpu:8.2f} ms)")
    for name in result.recall:
        lines.append(
            f"recall@{c.k} two-pass vs exact ({name}): {result.recall[name]:.4f} "
            f"(min {result.recall_min[name]:.2f}; plain id overlap {result.overlap[name]:.4f})"
        )
    before, after = result.load
    lines.append(f"load average before {before[0]:.2f}, after {after[0]:.2f} (1 min)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=Config.n, help="records in the scope (default 1,000,000)")
    parser.add_argument("--dim", type=int, default=Config.dim)
    parser.add_argument("--k", type=int, default=Config.k)
    parser.add_argument("--queries", type=int, default=Config.queries)
    parser.add_argument("--warmup", type=int, default=Config.warmup)
    parser.add_argument("--data", choices=DATA_KINDS, default=Config.data)
    parser.add_argument("--centroids", type=int, default=Config.centroids)
    parser.add_argument("--noise", type=float, default=Config.noise)
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--approximate-min-rows", type=int, help="default: the library's, or 0 below it")
    parser.add_argument("--candidates-min", type=int, default=Config.candidates_min)
    parser.add_argument("--candidates-per-result", type=int, default=Config.candidates_per_result)
    parser.add_argument("--cache", type=Path, help="minilm: keep the embeddings in this .npy file")
    args = parser.parse_args(argv)
    config = replace(
        Config(),
        n=args.n,
        dim=384 if args.data == "minilm" else args.dim,
        k=args.k,
        queries=args.queries,
        warmup=args.warmup,
        data=args.data,
        centroids=args.centroids,
        noise=args.noise,
        seed=args.seed,
        approximate_min_rows=args.approximate_min_rows,
        candidates_min=args.candidates_min,
        candidates_per_result=args.candidates_per_result,
        cache=args.cache,
    )
    if config.queries < 200:
        print("note: fewer than 200 measured queries; p95 and recall are noisy", file=sys.stderr)
    result = run(config, lambda line: print(line, file=sys.stderr))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
