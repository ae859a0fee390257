"""Moving up: a store built on the embedded backend, exported with the command line, imports into
PostgreSQL with the command line and answers the same searches (same ids in the same order, same
scores, same linked trees), holding the same threads, messages, records, links and summaries;
and back again. An import that fails midway into PostgreSQL writes nothing, and can be run again.

The store is built through the public API only: three users, threads with speakers and metadata,
inline extraction (extracted memories, thread extraction state), durable summaries, memories of
every type with metadata, TTLs (one already expired at search time), lifecycle links (superseded
and invalidated history) and custom links, vectors from the deterministic hashing embedder.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryRetentionConfig, SearchResult
from palimpsest.application.transfer import import_items, read_items
from palimpsest.domain.errors import StoreUnavailableError
from postgres_server import PostgresTarget
from psycopg import conninfo, sql
from typer.testing import CliRunner, Result

START = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
SEARCH_AT = START + timedelta(days=10)
"""When both stores are searched: the voucher (ttl 2 days) has expired, the trial (ttl 30) has not."""
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
TOLERANCE = 1e-5


# --- the store ---------------------------------------------------------------------------------


def build_embedded_store(path: Path) -> None:
    clock = ManualClock(START, tick=timedelta(milliseconds=7))
    inline = MemoryExtractionConfig(
        extraction_mode="inline", memory_extraction_frequency=2, enable_context_summary=True,
        context_summary_update_frequency=3,
    )
    with open_memory(
        path,
        embedder=HashingEmbedder(),
        clock=clock,
        memory_extraction_config=inline,
        memory_retention_config=MemoryRetentionConfig(default_ttl_days=None, max_ttl_days=3650),
    ) as memory:
        food = memory.create_thread(thread_id="t-food", user_id="u1", agent_id="a1", metadata={"topic": "food"})
        food.add_messages(
            [
                {"role": "user", "content": "I live in Lyon and I love pizza.", "name": "Ana"},
                {"role": "assistant", "content": "Noted: Lyon, and pizza."},
                {"role": "user", "content": "I prefer thin crust pizza, never deep dish.", "name": "Ana"},
                {"role": "assistant", "content": "Thin crust it is."},
                {"role": "user", "content": "Actually I now prefer sourdough pizza.", "name": "Ana"},
                {"role": "user", "content": "Find me a sourdough pizza place for Friday.", "name": "Ana"},
            ]
        )
        food.get_summary()
        travel = memory.create_thread(thread_id="t-travel", user_id="u1", agent_id="a2", metadata={"topic": "travel"})
        travel.add_messages(
            [
                {"role": "user", "content": "Book a train from Lyon to Ghent in March.", "metadata": {"channel": "web"}},
                {"role": "assistant", "content": "Trains to Ghent go through Brussels."},
                {"role": "user", "content": "My passport expires in 2027."},
            ]
        )
        work = memory.create_thread(thread_id="t-work", user_id="u2", agent_id="a1")
        work.add_messages(
            [
                {"role": "user", "content": "The project deadline is the 14th of July.", "name": "Bo"},
                {"role": "user", "content": "Our team uses PostgreSQL and Python for the billing service.", "name": "Cy"},
                {"role": "assistant", "content": "Deadline noted for the billing service."},
                {"role": "user", "content": "Bo is allergic to peanuts; no peanuts at the team lunch.", "name": "Cy"},
            ]
        )
        work.get_summary()
        quiet = memory.create_thread(thread_id="t-quiet", user_id="u3", metadata={"nested": {"a": [1, 2, {"b": None}]}})
        quiet.add_messages([{"role": "user", "content": "Remind me to water the basil and the tomatoes."}])

        add = memory.add_memory
        add("The user's preferred pizza is thin crust.", memory_type="preference", user_id="u1", memory_id="m-thin",
            autonomous_linking=False, metadata={"source": "chat", "confidence": 0.7})
        add("The user now prefers sourdough pizza.", memory_type="preference", user_id="u1", memory_id="m-sour",
            autonomous_linking=False, metadata={"source": "chat", "tags": ["pizza", "bread"]})
        add("The user lives in Lyon.", memory_type="fact", user_id="u1", agent_id="a1", thread_id="t-food",
            memory_id="f-lyon", autonomous_linking=False, timestamp="2025-05-30T12:00:00+00:00")
        add("The user lived in Paris before Lyon.", memory_type="fact", user_id="u1", memory_id="f-paris",
            autonomous_linking=False)
        add("The user lives in Paris.", memory_type="fact", user_id="u1", memory_id="f-paris-old",
            autonomous_linking=False)
        add("Always answer politely and briefly.", memory_type="guideline", user_id="u2", agent_id="a1",
            memory_id="g-polite", autonomous_linking=False)
        add("Quote prices in euros.", memory_type="guideline", memory_id="g-euros", autonomous_linking=False)
        add("A pizza voucher for Friday that runs out soon.", user_id="u1", memory_id="m-voucher", ttl_days=2,
            autonomous_linking=False, metadata={"kind": "voucher"})
        add("A trial of the sourdough club for a month.", user_id="u1", memory_id="m-trial", ttl_days=30,
            autonomous_linking=False)
        add("The billing service deadline moved to the 21st of July.", memory_type="fact", user_id="u2",
            agent_id="a1", thread_id="t-work", memory_id="f-deadline", autonomous_linking=False,
            memory_id_to_link="g-polite", link_type="relates to", link_id="l-deadline")
        add("Bo cannot eat peanuts.", memory_type="fact", user_id="u2", memory_id="f-peanuts", autonomous_linking=False)
        add("The user plans a trip to Ghent.", user_id="u1", agent_id="a2", thread_id="t-travel",
            memory_id="m-ghent", autonomous_linking=False)
        add("The user is vegetarian.", memory_type="fact", user_id="u3", memory_id="f-veg", autonomous_linking=False)
        add("The user eats fish on Fridays.", memory_type="fact", user_id="u3", memory_id="f-fish",
            autonomous_linking=False)

        link = memory.link_records
        link("m-sour", "preference", "m-thin", "preference", "supersedes", relation_id="l-sour-thin")
        link("f-lyon", "fact", "m-sour", "preference", "supports", relation_id="l-lyon-sour",
             metadata={"why": "Lyon has sourdough"})
        link("f-paris", "fact", "f-paris-old", "fact", "supersedes", relation_id="l-paris")
        link("m-ghent", "memory", "f-paris", "fact", "departs from", opposite_relation_type="destination of",
             relation_id="l-ghent")
        link("f-fish", "fact", "f-veg", "fact", "contradicts", relation_id="l-fish")
        link("f-peanuts", "fact", "g-polite", "guideline", "relates to", relation_id="l-peanuts")
        link("m-trial", "memory", "m-sour", "preference", "supports", relation_id="l-trial")
        # invalid history: a record retired and brought back (its supersession withdrawn)
        link("f-lyon", "fact", "f-paris", "fact", "supersedes", relation_id="l-lyon-paris")
        memory.delete_record_link(relation_id="l-lyon-paris")
        memory.update_memory("m-sour", metadata={"source": "chat", "tags": ["pizza", "bread"], "edited": True})
        travel.update_message(travel.get_messages()[1].id, content="Trains to Ghent change in Brussels-Midi.")
        memory.update_thread("t-quiet", {"nested": {"a": [1, 2, {"b": None}]}, "renamed": "garden"})


# --- the command line --------------------------------------------------------------------------


def cli(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def export(store: str, target: Path) -> list[dict[str, Any]]:
    result = cli("--store", store, "export", str(target))
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def import_(store: str, source: Path) -> Result:
    return cli("--store", store, "--embedder", "hashing", "import", "--reembed", str(source))


@pytest.fixture
def postgres_url(postgres_target: PostgresTarget) -> Iterator[Any]:
    """``url(store_id)``: a ``postgresql://`` URL of the session's server for a fresh store
    (dropped after the test), as a user writes it."""
    params = conninfo.conninfo_to_dict(postgres_target.url)
    made: list[str] = []

    def url(store_id: str) -> str:
        made.append(store_id)
        user = params.get("user") or "postgres"
        password = f":{params['password']}" if params.get("password") else ""
        host = str(params.get("host") or "")
        port = f":{params['port']}" if params.get("port") and not host.startswith("/") else ""
        database = params.get("dbname") or user
        if host.startswith("/"):
            socket_port = f":{params['port']}" if params.get("port") else ""
            return f"postgresql://{user}{password}@{socket_port}/{database}?host={host}&memory_store_id={store_id}"
        return f"postgresql://{user}{password}@{host}{port}/{database}?memory_store_id={store_id}"

    yield url
    with psycopg.connect(postgres_target.url, autocommit=True) as conn:
        for store_id in made:
            schema = f"palimpsest_{store_id.lower()}"
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="module")
def embedded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("moving-up") / "memory.db"
    build_embedded_store(path)
    return path


# --- comparing stores --------------------------------------------------------------------------


QUERIES = (
    "pizza",
    "where does the user live",
    "sourdough bread for Friday",
    "billing service deadline",
    "peanuts at lunch",
    "train to Ghent",
    "what does the user eat",
    "basil tomatoes",
)
SCOPES: tuple[dict[str, Any], ...] = (
    {"user_id": "u1"},
    {"user_id": "u1", "thread_id": "t-food"},
    {"user_id": "u1", "agent_id": "a2"},
    {"user_id": "u2"},
    {"user_id": "u3", "exact_user_match": True},
    {"user_id": None},
)
OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {"num_hops": 2, "max_linked_results": 10},
    {"num_hops": 2, "include_invalid_results": True},
    {"record_types": ["fact", "preference"], "num_hops": 1},
    {"metadata_filter": {"source": "chat"}},
)


def _tree(result: SearchResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "type": result.record_type.value,
        "status": result.status.value,
        "relevance": result.relevance,
        "linked": [{**_tree(linked), "link": link.id} for link, linked in result.linked_results],
    }


def _close(a: Any, b: Any, where: str) -> None:
    if isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOLERANCE, f"{where}: {a} != {b}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert [x.get("id") for x in a] == [y.get("id") for y in b], where
        for number, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{number}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _client(location: str) -> AgentMemory:
    return open_memory(
        location, embedder=HashingEmbedder(), clock=ManualClock(SEARCH_AT, tick=timedelta(0)),
        memory_extraction_config=NO_EXTRACTION,
    )


def answers(location: str) -> dict[str, list[dict[str, Any]]]:
    """Every search of the grid: keyword, vector and hybrid, per scope, with and without hops."""
    found: dict[str, list[dict[str, Any]]] = {}
    with _client(location) as memory:
        for strategy in ("keyword", "vector", "hybrid"):
            for scope in SCOPES:
                for options in OPTIONS:
                    for query in QUERIES:
                        key = f"{strategy} {scope} {options} {query!r}"
                        results = memory.search(query, search_strategy=strategy, max_results=6, **scope, **options)
                        trees = [_tree(result) for result in results]
                        # Results scored 0 (a hashed vector orthogonal to the query's) tie: which
                        # of them fill the page, and in what order, follows each store's float
                        # noise (0.0 against 7e-9), not the data. They are counted, not compared.
                        scored = [t for t in trees if math.isnan(t["relevance"]) or t["relevance"] > TOLERANCE]
                        found[key] = [*scored, {"unscored": len(trees) - len(scored)}]
    return found


def assert_same_answers(expected: dict[str, list[dict[str, Any]]], got: dict[str, list[dict[str, Any]]]) -> None:
    assert expected.keys() == got.keys()
    for key in expected:
        _close(expected[key], got[key], key)
    assert sum(len(results) > 1 for results in expected.values()) > len(expected) * 0.4, "many searches find something scored"


# --- the tests ---------------------------------------------------------------------------------


def test_an_embedded_export_imports_into_postgresql_and_answers_the_same_searches(
    embedded_store: Path, postgres_url: Any, tmp_path: Path
) -> None:
    exported = export(str(embedded_store), tmp_path / "embedded.jsonl")
    kinds = {row["kind"] for row in exported}
    assert kinds == {"setting", "thread", "message", "memory", "link", "summary"}
    statuses = {row["id"]: row["status"] for row in exported if row["kind"] == "memory"}
    assert statuses["m-thin"] == "invalid" and statuses["f-paris-old"] == "invalid"
    assert statuses["f-paris"] == "valid"  # retired, then its supersession withdrawn
    extracted = [row for row in exported if row["kind"] == "memory" and not row["id"].startswith(("m-", "f-", "g-"))]
    assert extracted, "extraction added memories of its own"
    assert any(row["kind"] == "thread" and row["state"] for row in exported)

    url = postgres_url(f"mv{uuid.uuid4().hex[:10]}")
    result = import_(url, tmp_path / "embedded.jsonl")
    assert result.exit_code == 0, result.output
    assert "imported" in result.output

    # the same rows: threads (state included), messages, records, links, summaries, settings
    again = export(url, tmp_path / "postgres.jsonl")
    assert again == exported
    # the same answers
    assert_same_answers(answers(str(embedded_store)), answers(url))


def test_a_postgresql_export_imports_into_an_embedded_file_and_answers_the_same_searches(
    embedded_store: Path, postgres_url: Any, tmp_path: Path
) -> None:
    export(str(embedded_store), tmp_path / "embedded.jsonl")
    url = postgres_url(f"mv{uuid.uuid4().hex[:10]}")
    assert import_(url, tmp_path / "embedded.jsonl").exit_code == 0
    from_postgres = export(url, tmp_path / "postgres.jsonl")
    back = tmp_path / "back" / "memory.db"
    result = import_(str(back), tmp_path / "postgres.jsonl")
    assert result.exit_code == 0, result.output
    assert export(str(back), tmp_path / "back.jsonl") == from_postgres
    assert_same_answers(answers(url), answers(str(back)))


def _rows(url: str) -> int:
    result = cli("--store", url, "export", "-")
    assert result.exit_code == 0, result.output
    return len([line for line in result.stdout.splitlines() if line.strip()])


def test_an_import_refused_midway_into_postgresql_writes_nothing_and_can_be_run_again(
    embedded_store: Path, postgres_url: Any, tmp_path: Path
) -> None:
    """Threads, messages and memories are written before links: a link line the rules refuse
    (its target is missing) comes after thousands of written rows, and all of them go."""
    good = tmp_path / "embedded.jsonl"
    export(str(embedded_store), good)
    lines = good.read_text(encoding="utf-8").splitlines()
    bad_link = json.loads(next(line for line in lines if '"kind":"link"' in line))
    bad_link.update(id="l-dangling", target_id="no-such-record")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines, json.dumps(bad_link)]) + "\n", encoding="utf-8")

    url = postgres_url(f"mv{uuid.uuid4().hex[:10]}")
    refused = import_(url, bad)
    assert refused.exit_code == 1
    assert f"line {len(lines) + 1}" in refused.output and "no-such-record" in refused.output
    assert _rows(url) == 0  # the store was created, and nothing was written into it
    assert import_(url, good).exit_code == 0  # run again, from the start
    assert _rows(url) == len(lines)
    twice = import_(url, good)  # every id is taken now: refused at its first line, nothing added
    assert twice.exit_code == 1 and "line " in twice.output
    assert _rows(url) == len(lines)


def test_an_import_whose_connection_is_lost_midway_writes_nothing(
    embedded_store: Path, postgres_url: Any, postgres_target: PostgresTarget, tmp_path: Path
) -> None:
    """The server ends the importing session halfway through: a typed error, and the
    transaction's rows are gone (a second import of the same file then succeeds)."""
    good = tmp_path / "embedded.jsonl"
    export(str(embedded_store), good)
    items = read_items(good.read_text(encoding="utf-8").splitlines(keepends=True), source="embedded.jsonl")
    store_id = f"mv{uuid.uuid4().hex[:10]}"
    url = postgres_url(store_id)
    cut: list[int] = []

    def cut_halfway(done: int, total: int) -> None:
        if done >= total // 2 and not cut:
            with psycopg.connect(postgres_target.url, autocommit=True) as admin:
                # the session holding the import's transaction (it has written, and waits for us)
                killed = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                    "AND datname = current_database() AND backend_xid IS NOT NULL AND state = 'idle in transaction'"
                ).fetchall()
            cut.append(len(killed))

    with _client(url) as memory, pytest.raises(StoreUnavailableError):
        import_items(memory.store, items, batch_size=16, progress=cut_halfway, embedder=HashingEmbedder())
    assert cut == [1]
    assert _rows(url) == 0
    assert import_(url, good).exit_code == 0
    assert _rows(url) == len(items)
