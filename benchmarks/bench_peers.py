"""Side-by-side benchmarks (outside the package): palimpsest's embedded store against its peers.

One command measures, with the same vectors for every system, and prints ratios as well as times:

* vector search, k=10, scoped (1 % of the rows: one of 100 users) and unscoped, at each size:
  palimpsest (``EmbeddedStore.search`` with a ``SearchQuery`` built inside the timed region),
  sqlite-vec (a ``vec0`` table with the user as partition key, in a file and in memory),
  LangGraph's ``InMemoryStore`` with an index (one namespace per user), Chroma (a collection per
  user, or one collection and a ``where`` filter), LanceDB (one table, a prefiltered search, with
  and without an IVF-PQ index) and a plain numpy scan (the memory-bandwidth reference); p50/p95
  latency and recall@10 against an exact numpy ranking. Each system's timed region is in ``TIMED``;
* open time of each persisted system: a fresh process opens the data written by the build and runs
  a first scoped search (the library's import is timed apart);
* peak and resident memory of each system, each measured in its own child process;
* palimpsest's graph expansion, ``num_hops`` 0..5 over 100,000 links (the builder of
  ``bench_search.py``);
* ``get_context_card`` and ``add_messages`` (the code of ``bench_api.py``).

Data: a seeded Gaussian mixture of 100 clusters in 384 dimensions, unit-normalised; queries are
drawn from the same mixture. Rows are assigned to users round-robin, independently of clusters.

Run ``python benchmarks/bench_peers.py`` (sizes 10,000 and 100,000), ``--sizes 10000,100000,1000000``,
``--quick`` for a smoke run of a few seconds, ``--json out.json`` to keep the report. Peers are
optional (``pip install -e '.[bench]'``): a peer that is not installed is reported as skipped,
with the command that installs it.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np


def _sibling(name: str) -> Any:
    """A sibling benchmark script (``bench_search``, ``bench_api``), imported only when needed:
    they load palimpsest's whole stack, which a worker measuring a peer should not pay for."""
    folder = str(Path(__file__).resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


PALIMPSEST = "palimpsest"
NUMPY = "numpy"
SQLITE_VEC_FILE = "sqlite-vec"
SQLITE_VEC_MEMORY = "sqlite-vec-mem"
LANGGRAPH = "langgraph"
CHROMA_PER_USER = "chroma-per-user"
CHROMA_WHERE = "chroma-where"
LANCEDB = "lancedb"
LANCEDB_IVF_PQ = "lancedb-ivfpq"
SYSTEMS = (
    PALIMPSEST,
    NUMPY,
    SQLITE_VEC_FILE,
    SQLITE_VEC_MEMORY,
    LANGGRAPH,
    CHROMA_PER_USER,
    CHROMA_WHERE,
    LANCEDB,
    LANCEDB_IVF_PQ,
)
# On this clustered data PQ distances alone rank poorly (recall@10 about 0.8 scoped, 0.04 unscoped
# at 100,000 rows); re-scoring 10× k candidates on the full vectors is LanceDB's remedy.
LANCE_REFINE_FACTOR = 10
DESCRIPTIONS = {
    PALIMPSEST: "palimpsest EmbeddedStore (SQLite file + numpy partitions), store.search(SearchQuery)",
    NUMPY: "numpy brute force: one float32 matrix (unscoped) or one per user (scoped), argpartition",
    SQLITE_VEC_FILE: "sqlite-vec vec0, user_id partition key, cosine, in a file (page cache 2 GB)",
    SQLITE_VEC_MEMORY: "sqlite-vec vec0, user_id partition key, cosine, in :memory:",
    LANGGRAPH: "LangGraph InMemoryStore with an index, one namespace per user",
    CHROMA_PER_USER: "Chroma PersistentClient, one collection per user, HNSW (cosine, Chroma's defaults)",
    CHROMA_WHERE: "Chroma PersistentClient, one collection, metadata user_id, HNSW (cosine, Chroma's defaults)",
    LANCEDB: "LanceDB, one table with a user_id column (bitmap index), no vector index: exact scan",
    LANCEDB_IVF_PQ: "LanceDB, the same table with an IVF-PQ vector index (cosine, LanceDB's defaults), "
    f"refine_factor {LANCE_REFINE_FACTOR}",
}
# What the timed region of one search holds, per system (q: the query as a float32 numpy vector).
TIMED = {
    PALIMPSEST: "ScopeFilter(user_id=u) and SearchQuery(k=10, now, vector=tuple(q.tolist()), scope) "
    "built, store.search(query), the hits' ids read",
    NUMPY: "matrix @ q, argpartition, argsort of the top 10",
    SQLITE_VEC_FILE: "q.tobytes(), the k-NN SELECT (... AND user_id = ?), the rowids fetched",
    SQLITE_VEC_MEMORY: "idem",
    LANGGRAPH: "store.search(namespace, query=..., limit=10): the lookup embedder returns q as a list "
    "of floats, the store scores and returns items",
    CHROMA_PER_USER: "collection.query(query_embeddings=[q], n_results=10) on the user's collection "
    "(ids, documents, metadatas, distances); unscoped: one query per user collection, merged by distance",
    CHROMA_WHERE: "collection.query(query_embeddings=[q], n_results=10, where={'user_id': u}) "
    "(ids, documents, metadatas, distances)",
    LANCEDB: "table.search(q).distance_type('cosine').where(\"user_id = 'u'\", prefilter=True)"
    ".limit(10).select(['id', 'text', '_distance']).to_arrow(), the ids read",
    LANCEDB_IVF_PQ: f"idem with .refine_factor({LANCE_REFINE_FACTOR}) (the IVF-PQ index answers, LanceDB's "
    "default nprobes; the candidates re-scored on their full vectors)",
}
# Exact systems score every row in scope; these answer from an approximate index.
APPROXIMATE = frozenset({CHROMA_PER_USER, CHROMA_WHERE, LANCEDB_IVF_PQ})
# Systems whose data outlives the process, so that a fresh process can open it.
PERSISTED = frozenset({PALIMPSEST, SQLITE_VEC_FILE, CHROMA_PER_USER, CHROMA_WHERE, LANCEDB, LANCEDB_IVF_PQ})
INSTALL = {
    SQLITE_VEC_FILE: "pip install sqlite-vec apsw",
    SQLITE_VEC_MEMORY: "pip install sqlite-vec apsw",
    LANGGRAPH: "pip install langgraph langchain-core",
    CHROMA_PER_USER: "pip install chromadb",
    CHROMA_WHERE: "pip install chromadb",
    LANCEDB: "pip install lancedb",
    LANCEDB_IVF_PQ: "pip install lancedb",
}
ANN_MIN_ROWS = 10_000  # below this an IVF-PQ index is not trained (too few rows per partition)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # as bench_search.py
NOW = EPOCH + timedelta(days=1)
SCOPED, UNSCOPED = "scoped", "unscoped"
SCOPED_USER = "u7"
GRAPH, API = "graph", "api"
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
RSS_SAFETY = 0.6  # skip a cell whose projected memory exceeds this share of the available memory


@dataclass(frozen=True)
class Config:
    sizes: tuple[int, ...] = (10_000, 100_000)
    dim: int = 384
    k: int = 10
    users: int = 100
    clusters: int = 100
    spread: float = 0.35  # noise per dimension relative to the cluster centre's norm (1)
    queries: int = 200
    warmup: int = 10
    cell_budget_s: float = 60.0  # a slow peer stops measuring after this, with at least min_queries
    min_queries: int = 10
    max_build_s: float = 900.0  # skip a cell whose projected build time exceeds this
    seed: int = 20_260_101
    graph_records: int = 100_000
    graph_links: int = 100_000
    graph_queries: int = 200
    api_messages: int = 10_000
    api_memories: int = 10_000
    api_cards: int = 200
    systems: tuple[str, ...] = SYSTEMS
    # One BLAS thread by default: sqlite-vec and LangGraph's loop use one core, and on a shared
    # 2-core machine a multi-threaded gemv pays more in thread hand-offs than it gains. 0 leaves
    # numpy's default.
    blas_threads: int = 1
    graph_and_api: bool = True

    @classmethod
    def quick(cls) -> Config:
        return cls(
            sizes=(1_000,),
            queries=10,
            warmup=2,
            min_queries=5,
            cell_budget_s=5.0,
            graph_records=500,
            graph_links=500,
            graph_queries=8,
            api_messages=100,
            api_memories=30,
            api_cards=5,
        )


# -- data ------------------------------------------------------------------------------------


def mixture(rng: np.random.Generator, centres: np.ndarray, count: int, spread: float) -> np.ndarray:
    """``count`` unit vectors from a Gaussian mixture around ``centres`` (equal weights)."""
    labels = rng.integers(0, len(centres), size=count)
    out = np.empty((count, centres.shape[1]), dtype=np.float32)
    for start in range(0, count, 20_000):  # bounded temporaries at 1M rows
        stop = min(start + 20_000, count)
        noise = rng.standard_normal((stop - start, centres.shape[1])).astype(np.float32)
        block = centres[labels[start:stop]] + noise * (spread / np.sqrt(centres.shape[1]))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    return out


def _centres(config: Config) -> np.ndarray:
    rng = np.random.default_rng([config.seed, 1])
    centres = rng.standard_normal((config.clusters, config.dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    return centres


def query_vectors(config: Config) -> np.ndarray:
    """The warm-up and measured queries (the same at every size)."""
    return mixture(
        np.random.default_rng([config.seed, 2]), _centres(config), config.warmup + config.queries, config.spread
    )


def dataset(config: Config, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, queries): the same arrays for every system, from the seed alone."""
    rows = mixture(np.random.default_rng([config.seed, 3, size]), _centres(config), size, config.spread)
    return rows, query_vectors(config)


def user_of(i: int, users: int) -> str:
    return f"u{i % users}"


def scoped_rows(size: int, users: int) -> np.ndarray:
    return np.arange(int(SCOPED_USER[1:]), size, users)


def exact_top_k(
    rows: np.ndarray, queries: np.ndarray, k: int, subset: np.ndarray | None = None
) -> list[set[int]]:
    """Exact top-k row numbers per query (cosine = dot product on unit vectors)."""
    matrix = rows if subset is None else rows[subset]
    truth: list[set[int]] = []
    for start in range(0, len(queries), 16):  # bounded score matrices at 1M rows
        scores = queries[start : start + 16] @ matrix.T
        for line in scores:
            take = min(k, len(line))
            top = np.argpartition(-line, take - 1)[:take]
            truth.append({int(subset[t]) if subset is not None else int(t) for t in top})
    return truth


# -- systems: each builds from (rows, users) and answers (vector, user or None) -> row numbers --


class NumpySystem:
    def __init__(self, config: Config, workdir: Path, rows: np.ndarray) -> None:
        self.k = config.k
        self.matrix = np.ascontiguousarray(rows)
        self.parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        users = np.arange(len(rows)) % config.users
        for u in range(config.users):
            index = np.flatnonzero(users == u)
            self.parts[f"u{u}"] = (np.ascontiguousarray(rows[index]), index)

    def search(self, vector: np.ndarray, user: str | None) -> list[int]:
        matrix, index = (self.matrix, None) if user is None else self.parts[user]
        scores = matrix @ vector
        take = min(self.k, len(scores))
        top = np.argpartition(-scores, take - 1)[:take]
        top = top[np.argsort(-scores[top])]
        return top.tolist() if index is None else index[top].tolist()

    def close(self) -> None:
        pass


class PalimpsestSystem:
    """Built through units of work of 5,000 records (``rows``), or opened on the persisted file."""

    def __init__(self, config: Config, workdir: Path, rows: np.ndarray | None = None) -> None:
        from palimpsest.adapters.embedded import EmbeddedStore
        from palimpsest.domain import MemoryRecord, RecordType, ScopeFilter, SearchQuery

        self._query, self._scope, self.k = SearchQuery, ScopeFilter, config.k
        self.store = EmbeddedStore(workdir / "palimpsest.db", dimension=config.dim)
        if rows is None:
            return
        batch = 5_000
        for start in range(0, len(rows), batch):
            stop = min(start + batch, len(rows))
            with self.store.unit_of_work() as uow:
                for i in range(start, stop):
                    created = EPOCH + timedelta(microseconds=i)
                    record = MemoryRecord(
                        id=f"r{i:07d}",
                        record_type=RecordType.MEMORY,
                        content=f"benchmark memory {i}",
                        created_at=created,
                        updated_at=created,
                        user_id=user_of(i, config.users),
                    )
                    uow.records.add(record, embedding=rows[i].tolist())
                uow.commit()

    def search(self, vector: np.ndarray, user: str | None) -> list[int]:
        """The query object is built here, inside the timed region, as a caller would."""
        scope = self._scope() if user is None else self._scope(user_id=user)
        query = self._query(k=self.k, now=NOW, vector=tuple(vector.tolist()), scope=scope)
        return [int(hit.id[1:]) for hit in self.store.search(query)]

    def close(self) -> None:
        self.store.close()


def sqlite_vec_connection(path: str) -> tuple[Any, str]:
    """A connection able to load sqlite-vec: apsw first, then pysqlite3 (the standard sqlite3
    module of many Python builds cannot load extensions)."""
    import sqlite_vec

    errors: list[str] = []
    try:
        import apsw

        conn = apsw.Connection(path)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        return conn, f"apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()})"
    except Exception as error:  # noqa: BLE001 - try the next driver, report all reasons
        errors.append(f"apsw: {error}")
    for name in ("pysqlite3.dbapi2", "sqlite3"):
        try:
            module: Any = importlib.import_module(name)
            conn = module.connect(path, isolation_level=None)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            return conn, f"{name.split('.')[0]} (SQLite {module.sqlite_version})"
        except Exception as error:  # noqa: BLE001
            errors.append(f"{name}: {error}")
    raise RuntimeError("no SQLite driver here can load sqlite-vec: " + "; ".join(errors))


class SqliteVecSystem:
    def __init__(
        self, config: Config, workdir: Path, rows: np.ndarray | None = None, *, in_memory: bool
    ) -> None:
        self.k = config.k
        self.conn, self.driver = sqlite_vec_connection(":memory:" if in_memory else str(workdir / "vec.db"))
        self.conn.execute(
            "PRAGMA cache_size = -2000000"
        )  # 2 GB: the vectors stay in memory, as palimpsest's do
        if rows is None:
            return
        self.conn.execute(
            f"CREATE VIRTUAL TABLE items USING vec0(user_id text partition key, "
            f"embedding float[{config.dim}] distance_metric=cosine)"
        )
        self.conn.execute("BEGIN")
        for start in range(0, len(rows), 5_000):
            self.conn.executemany(
                "INSERT INTO items(rowid, user_id, embedding) VALUES (?, ?, ?)",
                [
                    (i, user_of(i, config.users), rows[i].tobytes())
                    for i in range(start, min(start + 5_000, len(rows)))
                ],
            )
        self.conn.execute("COMMIT")

    def search(self, vector: np.ndarray, user: str | None) -> list[int]:
        blob = vector.astype(np.float32).tobytes()
        if user is None:
            cursor = self.conn.execute(
                "SELECT rowid FROM items WHERE embedding MATCH ? AND k = ? ORDER BY distance", (blob, self.k)
            )
        else:
            cursor = self.conn.execute(
                "SELECT rowid FROM items WHERE embedding MATCH ? AND k = ? AND user_id = ? ORDER BY distance",
                (blob, self.k, user),
            )
        return [row[0] for row in cursor]

    def close(self) -> None:
        self.conn.close()


class LangGraphSystem:
    """``InMemoryStore(index=...)`` fed precomputed vectors by a lookup 'embeddings' object."""

    def __init__(self, config: Config, workdir: Path, rows: np.ndarray, queries: np.ndarray) -> None:
        from langchain_core.embeddings import Embeddings
        from langgraph.store.base import PutOp
        from langgraph.store.memory import InMemoryStore

        class Lookup(Embeddings):
            """Returns the benchmark's vectors for texts 'd<row>' and 'q<query>', as lists of floats
            (the Embeddings interface's type)."""

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [rows[int(t[1:])].tolist() for t in texts]

            def embed_query(self, text: str) -> list[float]:
                return queries[int(text[1:])].tolist()

        self.k = config.k
        self.store = InMemoryStore(index={"dims": config.dim, "embed": Lookup(), "fields": ["text"]})
        for start in range(0, len(rows), 5_000):
            self.store.batch(
                [
                    PutOp(("users", user_of(i, config.users)), f"{i}", {"text": f"d{i}"})
                    for i in range(start, min(start + 5_000, len(rows)))
                ]
            )

    def search_query_number(self, number: int, user: str | None) -> list[int]:
        prefix = ("users",) if user is None else ("users", user)
        return [int(item.key) for item in self.store.search(prefix, query=f"q{number}", limit=self.k)]

    def close(self) -> None:
        pass


def chroma_collection_name(user: str) -> str:
    return f"user-{user}"  # Chroma refuses names shorter than 3 characters


class ChromaSystem:
    """A persistent Chroma client in the cell's folder, precomputed vectors (no embedding function):
    one collection per user (``per_user``) or one collection with ``user_id`` in the metadata."""

    def __init__(
        self, config: Config, workdir: Path, rows: np.ndarray | None = None, *, per_user: bool
    ) -> None:
        import chromadb
        from chromadb.config import Settings

        self.k, self.per_user = config.k, per_user
        self.names = [chroma_collection_name(f"u{u}") for u in range(config.users)]
        self.client = chromadb.PersistentClient(
            path=str(workdir / "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        self._collections: dict[str, Any] = {}
        if rows is None:
            return
        space = {"hnsw": {"space": "cosine"}}
        batch = min(5_000, self.client.get_max_batch_size())
        if per_user:
            for u in range(config.users):
                name = chroma_collection_name(f"u{u}")
                collection = self.client.create_collection(name, embedding_function=None, configuration=space)
                self._collections[name] = collection
                index = np.arange(u, len(rows), config.users)
                for start in range(0, len(index), batch):
                    self._add(collection, rows, index[start : start + batch], config)
        else:
            collection = self.client.create_collection("items", embedding_function=None, configuration=space)
            self._collections["items"] = collection
            for start in range(0, len(rows), batch):
                self._add(collection, rows, np.arange(start, min(start + batch, len(rows))), config)

    @staticmethod
    def _add(collection: Any, rows: np.ndarray, index: np.ndarray, config: Config) -> None:
        collection.add(
            ids=[str(i) for i in index],
            embeddings=rows[index],
            documents=[f"benchmark memory {i}" for i in index],
            metadatas=[{"user_id": user_of(int(i), config.users)} for i in index],
        )

    def _collection(self, name: str) -> Any:
        """The handle, fetched once (a first search after opening pays for it)."""
        if name not in self._collections:
            self._collections[name] = self.client.get_collection(name, embedding_function=None)
        return self._collections[name]

    def search(self, vector: np.ndarray, user: str | None) -> list[int]:
        if not self.per_user:
            where = None if user is None else {"user_id": user}
            found = self._collection("items").query(query_embeddings=[vector], n_results=self.k, where=where)
            return [int(i) for i in found["ids"][0]]
        names = self.names if user is None else [chroma_collection_name(user)]
        hits: list[tuple[float, int]] = []
        for name in names:
            found = self._collection(name).query(query_embeddings=[vector], n_results=self.k)
            hits.extend(zip(found["distances"][0], (int(i) for i in found["ids"][0])))
        hits.sort()
        return [i for _, i in hits[: self.k]]

    def close(self) -> None:
        self.client.close()


class LanceSystem:
    """One LanceDB table in the cell's folder (written in one call), a bitmap index on ``user_id``
    for the prefilter (ten times faster scoped than without it at 100,000 rows); the subclass adds
    an IVF-PQ vector index."""

    refine_factor: int | None = None

    def __init__(self, config: Config, workdir: Path, rows: np.ndarray | None = None) -> None:
        import lancedb

        self.k = config.k
        self.db = lancedb.connect(str(workdir / "lance"))
        if rows is None:
            self.table = self.db.open_table("items")
        else:
            self.table = self._create(rows, config)

    def _create(self, rows: np.ndarray, config: Config) -> Any:
        import pyarrow as pa
        from lancedb.index import Bitmap

        data = pa.table(
            {
                "id": pa.array(np.arange(len(rows), dtype=np.int64)),
                "user_id": pa.array([user_of(i, config.users) for i in range(len(rows))]),
                "text": pa.array([f"benchmark memory {i}" for i in range(len(rows))]),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), config.dim),
            }
        )
        table = self.db.create_table("items", data=data)
        table.create_index("user_id", config=Bitmap())
        return table

    def search(self, vector: np.ndarray, user: str | None) -> list[int]:
        query = self.table.search(vector).distance_type("cosine")
        if user is not None:
            query = query.where(f"user_id = '{user}'", prefilter=True)
        if self.refine_factor is not None:
            query = query.refine_factor(self.refine_factor)
        found = query.limit(self.k).select(["id", "text", "_distance"]).to_arrow()
        return [int(i) for i in found.column("id").to_pylist()]

    def close(self) -> None:
        pass


class LanceIvfPqSystem(LanceSystem):
    refine_factor = LANCE_REFINE_FACTOR

    def _create(self, rows: np.ndarray, config: Config) -> Any:
        from lancedb.index import IvfPq

        table = super()._create(rows, config)
        table.create_index("vector", config=IvfPq(distance_type="cosine"))
        return table


def import_system(system: str) -> None:
    """Import ``system``'s library (timed apart from building or opening)."""
    if system == PALIMPSEST:
        import palimpsest.adapters.embedded
        import palimpsest.domain  # noqa: F401
    elif system == LANGGRAPH:
        import langgraph.store.memory  # noqa: F401
    elif system in (SQLITE_VEC_FILE, SQLITE_VEC_MEMORY):
        sqlite_vec_connection(":memory:")[0].close()
    elif system in (CHROMA_PER_USER, CHROMA_WHERE):
        import chromadb  # noqa: F401
    elif system in (LANCEDB, LANCEDB_IVF_PQ):
        import lancedb  # noqa: F401
        import pyarrow  # noqa: F401


def make_system(
    system: str, config: Config, workdir: Path, rows: np.ndarray | None, queries: np.ndarray | None = None
) -> Any:
    """``system`` built from ``rows``, or (``rows`` None) opened on what a build left in ``workdir``."""
    if system == PALIMPSEST:
        return PalimpsestSystem(config, workdir, rows)
    if system in (SQLITE_VEC_FILE, SQLITE_VEC_MEMORY):
        return SqliteVecSystem(config, workdir, rows, in_memory=system == SQLITE_VEC_MEMORY)
    if system in (CHROMA_PER_USER, CHROMA_WHERE):
        return ChromaSystem(config, workdir, rows, per_user=system == CHROMA_PER_USER)
    if system == LANCEDB:
        return LanceSystem(config, workdir, rows)
    if system == LANCEDB_IVF_PQ:
        return LanceIvfPqSystem(config, workdir, rows)
    if rows is None:
        raise ValueError(f"{system} keeps nothing to open")
    if system == NUMPY:
        return NumpySystem(config, workdir, rows)
    if system == LANGGRAPH:
        assert queries is not None
        return LangGraphSystem(config, workdir, rows, queries)
    raise ValueError(system)


# -- availability ----------------------------------------------------------------------------


def unavailable(system: str) -> str | None:
    """Why ``system`` cannot run here, or None."""

    def missing(*modules: str) -> str | None:
        absent = []
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError:
                absent.append(module)
        if not absent:
            return None
        return f"not installed ({', '.join(absent)}): {INSTALL[system]} (or pip install -e '.[bench]')"

    def not_found(*modules: str) -> str | None:
        """As ``missing``, without importing (a heavy library's import warnings stay out of here)."""
        absent = [m for m in modules if importlib.util.find_spec(m) is None]
        if not absent:
            return None
        return f"not installed ({', '.join(absent)}): {INSTALL[system]} (or pip install -e '.[bench]')"

    if system in (PALIMPSEST, NUMPY):
        return None
    if system in (SQLITE_VEC_FILE, SQLITE_VEC_MEMORY):
        reason = missing("sqlite_vec")
        if reason:
            return reason
        try:
            conn, _ = sqlite_vec_connection(":memory:")
            conn.close()
        except Exception as error:  # noqa: BLE001
            return str(error)
        return None
    if system == LANGGRAPH:
        return missing("langgraph", "langchain_core")
    if system in (CHROMA_PER_USER, CHROMA_WHERE):
        return not_found("chromadb")
    if system in (LANCEDB, LANCEDB_IVF_PQ):
        return not_found("lancedb", "pyarrow")
    return f"unknown system {system!r}"


def size_skip(system: str, size: int) -> str | None:
    """Why ``system`` is not measured at ``size`` rows although it is installed, or None."""
    if system == LANCEDB_IVF_PQ and size < ANN_MIN_ROWS:
        return f"no IVF-PQ index below {ANN_MIN_ROWS:,} rows (too few rows to train its partitions)"
    return None


# -- the worker: one system, one size, in its own process ------------------------------------


def _status_kib(field: str) -> int | None:
    """A memory line of /proc/self/status (Linux), in KiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kib() -> int:
    current = _status_kib("VmRSS")
    return current if current is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS, so that the peak measured later
    is the system's and not the data generator's. Linux only; False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


def _peak_kib() -> int:
    peak = _status_kib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _percentile(samples: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (as bench_search.py)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def worker(system: str, size: int, config: Config, workdir: Path) -> dict[str, Any]:
    """Build ``system`` with ``size`` rows, measure scoped and unscoped search. Memory figures are
    taken in this process, over a baseline (the resident set before the build: data, ground truth
    and the system's imports): the peak during build and queries (the peak is reset at the
    baseline), and the resident set after the queries with the system still open. A persisted
    system is then closed and opened by a fresh process (``open_worker``)."""
    rows, queries = dataset(config, size)
    scoped = scoped_rows(size, config.users)
    truth = {
        SCOPED: exact_top_k(rows, queries[config.warmup :], config.k, scoped),
        UNSCOPED: exact_top_k(rows, queries[config.warmup :], config.k),
    }
    first_truth = exact_top_k(rows, queries[:1], config.k, scoped)[0]  # the open's first search
    gc.collect()
    # Import the system's modules before the baseline so that a library's import is not counted as
    # data; the import cost is reported on its own.
    before_import = _rss_kib()
    import_system(system)
    gc.collect()
    baseline = _rss_kib()
    peak_reset = _reset_peak()
    started = time.perf_counter()
    instance = make_system(system, config, workdir, rows, queries)
    build_s = time.perf_counter() - started

    def caller(user: str | None) -> Callable[[int], list[int]]:
        if isinstance(instance, LangGraphSystem):
            return lambda n: instance.search_query_number(n, user)
        return lambda n: instance.search(queries[n], user)

    cells: dict[str, Any] = {}
    try:
        for scope, user in ((SCOPED, SCOPED_USER), (UNSCOPED, None)):
            search = caller(user)
            warm_end = time.perf_counter() + config.cell_budget_s / 2  # a slow system warms up less
            for n in range(config.warmup):
                search(n)
                if time.perf_counter() > warm_end:
                    break
            gc.collect()
            samples: list[float] = []
            cpu: list[float] = []  # process CPU time, every thread: above the wall time, more than one core
            recalls: list[float] = []
            budget_end = time.perf_counter() + config.cell_budget_s
            for j in range(config.queries):
                n = config.warmup + j
                c0 = time.process_time()
                t0 = time.perf_counter()
                found = search(n)
                samples.append((time.perf_counter() - t0) * 1000.0)
                cpu.append((time.process_time() - c0) * 1000.0)
                recalls.append(len(truth[scope][j] & set(found[: config.k])) / len(truth[scope][j]))
                if j + 1 >= config.min_queries and time.perf_counter() > budget_end:
                    break
            cells[scope] = {
                "p50_ms": statistics.median(samples),
                "p95_ms": _percentile(samples, 95),
                "cpu_p50_ms": statistics.median(cpu),
                "queries": len(samples),
                "recall_at_10": statistics.fmean(recalls),
                "rows_in_scope": len(scoped) if scope == SCOPED else size,
            }
        gc.collect()
        resident = _rss_kib()  # the system still open: what it holds after build and queries
    finally:
        instance.close()
    peak = _peak_kib()
    opened: dict[str, Any]
    if system in PERSISTED:
        opened = run_open_worker(system, size, config, workdir)
        opened["first_recall_at_10"] = len(first_truth & set(opened.pop("first_ids"))) / len(first_truth)
    else:
        opened = {"status": "n/a", "reason": "held in memory: nothing persisted to open"}
    return {
        "system": system,
        "size": size,
        "build_s": build_s,
        "driver": getattr(instance, "driver", None),
        "search": cells,
        "open": opened,
        "memory": {
            "import_mib": (baseline - before_import) / 1024,
            "peak_over_baseline_mib": (peak - baseline) / 1024,
            "resident_over_baseline_mib": (resident - baseline) / 1024,
            # Without a reset, the peak is the process's whole life, data generation included.
            "peak_reset": peak_reset,
        },
    }


def open_worker(system: str, config: Config, workdir: Path) -> dict[str, Any]:
    """In a fresh process: import ``system``'s library, open what the build left in ``workdir`` and
    run one scoped search (the first warm-up query). ``open_ms`` runs from the open call to the
    first result, query object included; the page cache still holds the files just written."""
    vector = query_vectors(config)[0]
    started = time.perf_counter()
    import_system(system)
    imported = time.perf_counter()
    instance = make_system(system, config, workdir, None)
    connected = time.perf_counter()
    found = instance.search(vector, SCOPED_USER)
    done = time.perf_counter()
    instance.close()
    return {
        "status": "ok",
        "import_s": imported - started,
        "open_ms": (done - imported) * 1000.0,
        "connect_ms": (connected - imported) * 1000.0,
        "first_search_ms": (done - connected) * 1000.0,
        "first_ids": found,
    }


def run_open_worker(system: str, size: int, config: Config, workdir: Path) -> dict[str, Any]:
    try:
        return _child(["--open-worker", system], size, config, workdir)
    except RuntimeError as error:
        return {"status": "failed", "reason": str(error), "first_ids": []}


def run_worker(task: str, size: int, config: Config, workdir: Path) -> dict[str, Any]:
    """One task (a system at one size, or ``graph`` / ``api``) in a child process: a separate heap
    for the memory figures, and the BLAS thread count set before numpy loads."""
    return _child(["--worker", task], size, config, workdir)


def _child(task: list[str], size: int, config: Config, workdir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if config.blas_threads > 0:
        for name in BLAS_THREAD_VARIABLES:
            env[name] = str(config.blas_threads)
    process = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            *task,
            "--worker-size",
            str(size),
            "--worker-dir",
            str(workdir),
            "--config-json",
            json.dumps(asdict(config)),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if process.returncode != 0:
        tail = (process.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {process.returncode}: {tail}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def _available_kib() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def projected_skip(system: str, size: int, config: Config, done: list[dict[str, Any]]) -> str | None:
    """A reason to skip (system, size) from that system's own measurement at a smaller size."""
    smaller = [r for r in done if r["system"] == system and r.get("status") == "ok" and r["size"] < size]
    if not smaller:
        return None
    last = max(smaller, key=lambda r: r["size"])
    scale = size / last["size"]
    build = last["build_s"] * scale
    if build > config.max_build_s:
        return (
            f"projected build time {build:,.0f} s (measured {last['build_s']:.1f} s at {last['size']:,} rows, "
            f"scaled linearly) exceeds the limit of {config.max_build_s:,.0f} s (--max-build-s)"
        )
    available = _available_kib()
    peak_mib = last["memory"]["peak_over_baseline_mib"] * scale
    if available is not None and peak_mib * 1024 > RSS_SAFETY * available:
        return (
            f"projected peak memory {peak_mib / 1024:,.1f} GiB (measured "
            f"{last['memory']['peak_over_baseline_mib']:,.0f} MiB at {last['size']:,} rows, scaled linearly) "
            f"exceeds {RSS_SAFETY:.0%} of the {available / 1024**2:,.1f} GiB available"
        )
    return None


# -- graph hops and the API figures (in this process) ----------------------------------------


def graph_hops(config: Config, workdir: Path) -> dict[str, Any]:
    from palimpsest.adapters.embedded import EmbeddedStore

    bench_search = _sibling("bench_search")
    base = bench_search.Config(
        records=config.graph_records,
        links=config.graph_links,
        queries=config.graph_queries,
        warmup=min(10, config.graph_queries),
        batch=min(5_000, config.graph_records),
        seed=config.seed,
    )
    started = time.perf_counter()
    bench_search.build_store(bench_search.SOLO, base, workdir)
    build_s = time.perf_counter() - started
    store = EmbeddedStore(bench_search.store_path(workdir, bench_search.SOLO), dimension=base.dim)
    try:
        rng = np.random.default_rng([config.seed, bench_search.STREAM_QUERIES])
        flat = bench_search.queries(rng, base, bench_search.SOLO_USER)
        per_hops = {h: [replace(q, num_hops=h) for q in flat] for h in range(6)}
        for j in range(base.warmup):
            for h in range(6):
                store.search(per_hops[h][j])
        gc.collect()
        samples: dict[int, list[float]] = {h: [] for h in range(6)}
        linked: dict[int, int] = dict.fromkeys(range(6), 0)
        # Interleaved, so that every depth sees the same machine state.
        for j in range(base.warmup, len(flat)):
            for h in range(6):
                elapsed, hits = bench_search.timed_search(store, per_hops[h][j])
                samples[h].append(elapsed)
                linked[h] += sum(bench_search.tree_size(hit.linked) for hit in hits)
    finally:
        store.close()
    base_p50 = statistics.median(samples[0])
    return {
        "records": base.records,
        "links": base.links,
        "build_s": build_s,
        "rows": [
            {
                "hops": h,
                "p50_ms": statistics.median(samples[h]),
                "p95_ms": _percentile(samples[h], 95),
                "extra_p50_ms": statistics.median(samples[h]) - base_p50,
                "linked_per_search": linked[h] / len(samples[h]),
                "queries": len(samples[h]),
            }
            for h in range(6)
        ],
    }


def api_figures(config: Config, workdir: Path) -> dict[str, Any]:
    """The two figures of bench_api.py, through its own functions."""
    from palimpsest.adapters import HashingEmbedder

    bench_api = _sibling("bench_api")
    rate = bench_api.add_rate(workdir, bench_api.Crc32Embedder(), config.api_messages)
    hashing_rate = bench_api.add_rate(workdir, HashingEmbedder(), config.api_messages)
    client, thread_id, _ = bench_api.build(workdir, config.api_messages, config.api_memories)
    try:
        thread = client.get_thread(thread_id)
        thread.get_summary()  # the durable summary fresh before timing, as bench_api.py does
        gc.collect()
        for _ in range(min(10, config.api_cards)):
            thread.get_context_card()
        samples: list[float] = []
        for _ in range(config.api_cards):
            started = time.perf_counter()
            thread.get_context_card()
            samples.append((time.perf_counter() - started) * 1000.0)
    finally:
        client.close()
    return {
        "messages": config.api_messages,
        "memories": config.api_memories,
        "card_p50_ms": statistics.median(samples),
        "card_p95_ms": _percentile(samples, 95),
        "cards": len(samples),
        "add_messages_per_s": rate,
        "add_messages_hashing_per_s": hashing_rate,
    }


# -- the suite -------------------------------------------------------------------------------


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def versions() -> dict[str, str]:
    out = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite3 module": sqlite3.sqlite_version,
    }
    for name in ("sqlite_vec", "apsw", "pysqlite3", "langgraph", "langchain_core", "chromadb", "lancedb", "pyarrow"):
        try:
            from importlib.metadata import version

            out[name] = version(name.replace("_", "-") if name != "pysqlite3" else "pysqlite3-binary")
        except Exception:  # noqa: BLE001 - absent or named differently: leave it out
            if name == "pysqlite3" and importlib.util.find_spec("pysqlite3") is not None:
                out[name] = "installed"
    return out


def run(
    config: Config, workdir: Path, log: Callable[[str], None] = print, *, in_process: bool = False
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "config": asdict(config),
        "machine": _sibling("bench_search").machine_info(),
        "versions": versions(),
        "load_average": {"start": load_average()},
        "systems": {s: DESCRIPTIONS[s] for s in config.systems},
        "timed": {s: TIMED[s] for s in config.systems},
        "search": [],
        "skipped": [],
    }
    started = time.perf_counter()
    reasons = {s: unavailable(s) for s in config.systems}
    results: list[dict[str, Any]] = []
    for size in config.sizes:
        for system in config.systems:
            reason = reasons[system] or size_skip(system, size) or projected_skip(system, size, config, results)
            if reason:
                log(f"skip {system} at {size:,}: {reason}")
                results.append({"system": system, "size": size, "status": "skipped", "reason": reason})
                continue
            log(f"{system} at {size:,} rows (load {load_average()}) ...")
            cell_dir = workdir / f"{system}-{size}"
            cell_dir.mkdir(parents=True, exist_ok=True)
            try:
                if in_process:
                    outcome = worker(system, size, config, cell_dir)
                else:
                    outcome = run_worker(system, size, config, cell_dir)
                outcome["status"] = "ok"
                outcome["load_average"] = load_average()
            except Exception as error:  # noqa: BLE001 - a failing peer is reported, not fatal
                outcome = {"system": system, "size": size, "status": "failed", "reason": str(error)}
                log(f"  failed: {error}")
            finally:
                shutil.rmtree(cell_dir, ignore_errors=True)
            results.append(outcome)
    report["runs"] = results
    report["search"] = search_rows(results)
    report["skipped"] = [
        {"system": r["system"], "size": r["size"], "reason": r["reason"]}
        for r in results
        if r["status"] != "ok"
    ]
    report["memory"] = memory_rows(results)
    report["open"] = open_rows(results)
    if not config.graph_and_api:
        report["load_average"]["end"] = load_average()
        report["elapsed_s"] = time.perf_counter() - started
        return report
    log(
        f"graph hops on {config.graph_records:,} records / {config.graph_links:,} links (load {load_average()}) ..."
    )
    report["graph_hops"] = _task(GRAPH, config, workdir, in_process)
    log(f"context card and add_messages (load {load_average()}) ...")
    report["api"] = _task(API, config, workdir, in_process)
    report["load_average"]["end"] = load_average()
    report["elapsed_s"] = time.perf_counter() - started
    return report


def _task(task: str, config: Config, workdir: Path, in_process: bool) -> dict[str, Any]:
    folder = workdir / task
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if not in_process:
            return run_worker(task, 0, config, folder)
        return graph_hops(config, folder) if task == GRAPH else api_figures(config, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def search_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (size, scope, system), with the ratio of its p50 to palimpsest's."""
    rows: list[dict[str, Any]] = []
    ok = {(r["system"], r["size"]): r for r in results if r["status"] == "ok"}
    for size in sorted({r["size"] for r in results}):
        for scope in (SCOPED, UNSCOPED):
            reference = ok.get((PALIMPSEST, size))
            ref_p50 = reference["search"][scope]["p50_ms"] if reference else None
            for r in (r for r in results if r["size"] == size):
                row: dict[str, Any] = {
                    "size": size,
                    "scope": scope,
                    "system": r["system"],
                    "status": r["status"],
                }
                if r["status"] == "ok":
                    cell = r["search"][scope]
                    row.update(cell)
                    row["ratio_to_palimpsest"] = cell["p50_ms"] / ref_p50 if ref_p50 else None
                else:
                    row["reason"] = r["reason"]
                rows.append(row)
    return rows


def memory_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        if r["status"] != "ok":
            continue
        per = 100_000 / r["size"]
        rows.append(
            {
                "system": r["system"],
                "size": r["size"],
                "build_s": r["build_s"],
                "rows_per_s": r["size"] / r["build_s"] if r["build_s"] > 0 else None,
                "import_mib": r["memory"]["import_mib"],
                "peak_mib": r["memory"]["peak_over_baseline_mib"],
                "peak_mib_per_100k": r["memory"]["peak_over_baseline_mib"] * per,
                "resident_mib_per_100k": r["memory"]["resident_over_baseline_mib"] * per,
            }
        )
    return rows


def open_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per system and size that ran: its open figures, or why there are none."""
    return [{"system": r["system"], "size": r["size"], **r["open"]} for r in results if r["status"] == "ok"]


def _fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def render(report: dict[str, Any]) -> str:
    c = report["config"]
    lines = ["palimpsest side-by-side benchmark", *report["machine"]]
    lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()))
    lines.append(
        f"load average: start {report['load_average']['start']}, end {report['load_average'].get('end', '?')}; "
        f"data: Gaussian mixture, {c['clusters']} clusters, dim {c['dim']}, unit-normalised, seed {c['seed']}; "
        f"k={c['k']}; scoped = 1 of {c['users']} users; BLAS threads {c['blas_threads'] or 'default'}"
    )
    lines.append(
        "ratio = system p50 / palimpsest p50 at the same size and scope (above 1: palimpsest is faster)"
    )
    lines.append("timed region of one search (q: the query as a float32 numpy vector):")
    lines.extend(f"  {system:<15} {text}" for system, text in report["timed"].items())
    approximate = sorted(APPROXIMATE & set(report["timed"]))
    if approximate:
        lines.append(f"approximate (recall below 1 is the index's): {', '.join(approximate)}")
    lines.append("")
    lines.append(
        "cpu ms = p50 of the process's CPU time per search, all threads (above p50 ms: more than one core)"
    )
    lines.append(
        f"{'size':>9} {'scope':<8} {'system':<15} {'p50 ms':>9} {'p95 ms':>9} {'cpu ms':>8} {'ratio':>8} {'recall@10':>9} {'n':>4}"
    )
    for row in report["search"]:
        if row["status"] != "ok":
            lines.append(
                f"{row['size']:>9,} {row['scope']:<8} {row['system']:<15} {row['status']}: {row['reason']}"
            )
            continue
        lines.append(
            f"{row['size']:>9,} {row['scope']:<8} {row['system']:<15} {row['p50_ms']:>9.3f} {row['p95_ms']:>9.3f} "
            f"{row['cpu_p50_ms']:>8.3f} {_fmt_ratio(row['ratio_to_palimpsest']):>8} {row['recall_at_10']:>9.3f} {row['queries']:>4}"
        )
    lines.append("")
    lines.append(
        "memory (each system in its own process; over a baseline holding the data and the ground truth):"
    )
    lines.append(
        f"{'system':<15} {'size':>9} {'build s':>8} {'rows/s':>9} {'peak MiB':>9} {'peak/100k':>10} {'resident/100k':>14} {'import':>7}"
    )
    for m in report["memory"]:
        lines.append(
            f"{m['system']:<15} {m['size']:>9,} {m['build_s']:>8.1f} {m['rows_per_s'] or 0:>9,.0f} {m['peak_mib']:>9.1f} "
            f"{m['peak_mib_per_100k']:>10.1f} {m['resident_mib_per_100k']:>14.1f} {m['import_mib']:>7.1f}"
        )
    lines.append("")
    lines.append(
        "open (a fresh process on the persisted data, page cache warm): import of the library, then "
        "open + first scoped search (query object included), split as connect / first search:"
    )
    lines.append(
        f"{'system':<15} {'size':>9} {'import s':>9} {'open ms':>10} {'connect ms':>11} {'search ms':>10} {'recall':>7}"
    )
    for o in report["open"]:
        if o["status"] != "ok":
            lines.append(f"{o['system']:<15} {o['size']:>9,} {o['status']}: {o['reason']}")
            continue
        lines.append(
            f"{o['system']:<15} {o['size']:>9,} {o['import_s']:>9.2f} {o['open_ms']:>10.1f} "
            f"{o['connect_ms']:>11.1f} {o['first_search_ms']:>10.1f} {o['first_recall_at_10']:>7.2f}"
        )
    g = report.get("graph_hops")
    if g is None:
        return "\n".join([*lines, "", _render_skipped(report), f"total {report['elapsed_s']:.0f} s"])
    lines.append("")
    lines.append(
        f"graph expansion, palimpsest, {g['records']:,} records in one scope, {g['links']:,} links, k={c['k']}:"
    )
    for row in g["rows"]:
        lines.append(
            f"  num_hops={row['hops']}: p50 {row['p50_ms']:.3f} ms, p95 {row['p95_ms']:.3f} ms, "
            f"{row['extra_p50_ms']:+.3f} ms over 0 hops, {row['linked_per_search']:.1f} linked records per search"
        )
    a = report["api"]
    lines.append("")
    lines.append(
        f"get_context_card ({a['messages']:,} messages, {a['memories']:,} memories): p50 {a['card_p50_ms']:.3f} ms, "
        f"p95 {a['card_p95_ms']:.3f} ms"
    )
    lines.append(
        f"add_messages, batches of 100: {a['add_messages_per_s']:,.0f} msg/s (near-free embedder), "
        f"{a['add_messages_hashing_per_s']:,.0f} msg/s (hashing embedder)"
    )
    lines.extend(["", _render_skipped(report), f"total {report['elapsed_s']:.0f} s"])
    return "\n".join(lines)


def _render_skipped(report: dict[str, Any]) -> str:
    if not report["skipped"]:
        return "skipped: none"
    return "\n".join(
        ["skipped:", *(f"  {s['system']} at {s['size']:,}: {s['reason']}" for s in report["skipped"])]
    )


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=_int_list, help="row counts, e.g. 10000,100000,1000000")
    parser.add_argument("--queries", type=int, help="measured queries per cell (default 200)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run of a few seconds")
    parser.add_argument("--json", type=Path, help="also write the report here as JSON")
    parser.add_argument("--systems", help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--budget-s", type=float, help="time budget per search cell (default 60 s)")
    parser.add_argument(
        "--max-build-s", type=float, help="skip cells whose projected build exceeds this (default 900 s)"
    )
    parser.add_argument(
        "--graph-links", type=int, help="records and links of the graph figure (default 100,000)"
    )
    parser.add_argument(
        "--blas-threads", type=int, help="BLAS threads in the children (default 1; 0: numpy's default)"
    )
    parser.add_argument(
        "--search-only", action="store_true", help="skip the graph, card and add_messages figures"
    )
    parser.add_argument(
        "--no-children",
        action="store_true",
        help="measure every system in this process (memory figures then mean little)",
    )
    parser.add_argument("--worker", choices=(*SYSTEMS, GRAPH, API), help=argparse.SUPPRESS)
    parser.add_argument("--open-worker", choices=sorted(PERSISTED), help=argparse.SUPPRESS)
    parser.add_argument("--worker-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--config-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker or args.open_worker:  # internal: one task, the result as JSON on stdout
        raw = json.loads(args.config_json)
        config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
        if args.open_worker:
            outcome = open_worker(args.open_worker, config, args.worker_dir)
        elif args.worker == GRAPH:
            outcome = graph_hops(config, args.worker_dir)
        elif args.worker == API:
            outcome = api_figures(config, args.worker_dir)
        else:
            outcome = worker(args.worker, args.worker_size, config, args.worker_dir)
        print(json.dumps(outcome))
        return 0

    config = Config.quick() if args.quick else Config()
    overrides: dict[str, Any] = {}
    if args.sizes:
        overrides["sizes"] = args.sizes
    if args.queries:
        overrides["queries"] = args.queries
    if args.systems:
        chosen = tuple(s.strip() for s in args.systems.split(",") if s.strip())
        unknown = [s for s in chosen if s not in SYSTEMS]
        if unknown:
            parser.error(f"unknown systems {unknown}; choose from {SYSTEMS}")
        overrides["systems"] = chosen
    if args.budget_s:
        overrides["cell_budget_s"] = args.budget_s
    if args.max_build_s:
        overrides["max_build_s"] = args.max_build_s
    if args.search_only:
        overrides["graph_and_api"] = False
    if args.blas_threads is not None:
        overrides["blas_threads"] = args.blas_threads
    if args.graph_links:
        overrides["graph_records"] = overrides["graph_links"] = args.graph_links
    config = replace(config, **overrides)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="palimpsest-peers-") as folder:
        report = run(config, Path(folder), log, in_process=args.no_children)
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
