"""Isolation, generated: nothing scoped to one user or agent ever returns another's record.

Hypothesis generates users and agents (and unscoped records) with threads, messages and
memories of every type, and links between random pairs of memories, across users too: the link
rules have no scope condition (a link joins any two memory-like records), so a graph hop is the
obvious way for one user's record to leak into another's results. Then every scoped read is
checked, for each user, each (user, agent) pair and the unscoped (``None``) scope:

* ``AgentMemory.search`` with each strategy (vector, keyword, hybrid), graph hops included;
* ``MemoryThread.search`` (the thread's user and agent, or the thread alone) and the thread's
  context card (relevant records with their linked trees, recent messages);
* ``list_threads``, ``list_memories`` and ``get_messages``;
* ``collect_graph`` (the graph picture's data);
* the command line's JSON Lines listings ``threads --json`` and ``memories --json`` with
  ``--user`` / ``--agent`` (``export`` itself writes the whole store and takes no scope).

Every returned record, and every record in every linked tree, must belong to the scope.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from palimpsest.adapters.cli import app
from palimpsest.adapters.cli.graph import collect_graph
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.memory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, SearchResult
from palimpsest.application.testing import HashingEmbedder, ScriptedSummariser
from palimpsest.domain import ConflictError, LinkedRecord, MemoryRecord, Message
from palimpsest.domain.ports import MemoryStore
from strategies_public_api import START
from typer.testing import CliRunner

USERS = ("u0", "u1", "u2")
AGENTS = ("a0", "a1")
WORDS = ("pizza", "sourdough", "tea", "lyon", "coffee", "crust", "garden", "music")
TYPES = ("memory", "fact", "guideline", "preference")
RELATIONS = ("supersedes", "refines", "duplicates", "supports", "contradicts", "custom")
STRATEGIES = ("vector", "keyword", "hybrid")
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False, context_summary_update_frequency=1)

owner = st.sampled_from((*USERS, None))
agent = st.sampled_from((*AGENTS, None))
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


@dataclass(frozen=True)
class World:
    threads: list[tuple[str | None, str | None, list[str]]]  # (user, agent, messages)
    memories: list[tuple[str | None, str | None, int | None, str, str]]  # (user, agent, thread index, type, text)
    links: list[tuple[int, int, str]]


worlds = st.builds(
    World,
    threads=st.lists(st.tuples(owner, agent, st.lists(text, min_size=1, max_size=4)), min_size=1, max_size=5),
    memories=st.lists(
        st.tuples(owner, agent, st.one_of(st.none(), st.integers(0, 4)), st.sampled_from(TYPES), text),
        min_size=1,
        max_size=12,
    ),
    links=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.sampled_from(RELATIONS)), max_size=14),
)


def build(memory: AgentMemory, world: World) -> None:
    for index, (user, agent_id, messages) in enumerate(world.threads):
        thread = memory.create_thread(thread_id=f"t{index}", user_id=user, agent_id=agent_id)
        thread.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": m} for i, m in enumerate(messages)])
    for index, (user, agent_id, thread_index, memory_type, content) in enumerate(world.memories):
        thread_id = f"t{thread_index}" if thread_index is not None and thread_index < len(world.threads) else None
        memory.add_memory(content, memory_id=f"m{index}", memory_type=memory_type, user_id=user, agent_id=agent_id,
                          thread_id=thread_id, autonomous_linking=False)
    types = {f"m{i}": spec[3] for i, spec in enumerate(world.memories)}
    for source, target, relation in world.links:
        s, t = f"m{source}", f"m{target}"
        if s == t or s not in types or t not in types:
            continue
        try:
            memory.link_records(s, types[s], t, types[t], relation)
        except ConflictError:  # the pair is already linked (either orientation)
            pass


def _client(store: MemoryStore, strategy: str) -> AgentMemory:
    return AgentMemory(store=store, embedder=HashingEmbedder(), summariser=ScriptedSummariser(), clock=ManualClock(START),
                       memory_extraction_config=NO_EXTRACTION, search_strategy=strategy)  # type: ignore[arg-type]


@contextmanager
def world_store(kind: str, world: World) -> Iterator[MemoryStore]:
    folder = Path(tempfile.mkdtemp(prefix="isolation-"))
    store: MemoryStore = InMemoryStore() if kind == "memory" else EmbeddedStore(folder / "m.db")
    try:
        build(_client(store, "vector"), world)
        yield store
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


# -- ownership checks ---------------------------------------------------------------------------


def _tree(nodes: Iterable[LinkedRecord]) -> Iterator[MemoryRecord]:
    for node in nodes:
        yield node.record
        yield from _tree(node.children)


def records_of(results: Iterable[SearchResult]) -> Iterator[MemoryRecord | Message]:
    """Every record a list of results shows: the hits and their whole linked trees."""
    for result in results:
        yield result.record
        yield from _tree(result.linked_records)
        for _, linked in result.linked_results:  # the public view of the same tree
            yield linked.record


def assert_in_scope(records: Iterable[Any], what: str, **scope: str | None) -> int:
    count = 0
    for record in records:
        count += 1
        for field, value in scope.items():
            assert getattr(record, field) == value, (
                f"{what}: {type(record).__name__} {record.id!r} has {field}={getattr(record, field)!r}, "
                f"outside the scope {scope}"
            )
    return count


def queries(world: World) -> list[str]:
    used = sorted({w for spec in world.memories for w in spec[4].split()} | {w for t in world.threads for m in t[2] for w in m.split()})
    return [" ".join(used), used[0], "pizza tea lyon"]


# -- the property -------------------------------------------------------------------------------


def check_world(kind: str, world: World) -> None:
    seen = 0
    with world_store(kind, world) as store:
        clients = {strategy: _client(store, strategy) for strategy in STRATEGIES}
        memory = clients["vector"]
        for user in (*USERS, None):
            for strategy, client in clients.items():
                for query in queries(world):
                    found = client.search(query, user_id=user, num_hops=3, max_linked_results=50, max_results=100)
                    seen += assert_in_scope(records_of(found), f"{strategy} search of {user}", user_id=user)
                    for agent_id in (*AGENTS, None):
                        found = client.search(query, user_id=user, agent_id=agent_id, num_hops=2, max_results=100,
                                              include_invalid_results=False)
                        assert_in_scope(records_of(found), f"{strategy} search of {user}/{agent_id}",
                                        user_id=user, agent_id=agent_id)
            assert_in_scope(memory.list_threads(user), f"threads of {user}", user_id=user)
            assert_in_scope(memory.list_memories(user_id=user), f"memories of {user}", user_id=user)
            if user is not None:
                graph = collect_graph(memory, user_id=user)
                nodes = {node.id for node in graph.nodes}
                assert nodes == {r.id for r in memory.list_memories(user_id=user)}
                assert all(e.source in nodes and e.target in nodes for e in graph.edges)
            for agent_id in (*AGENTS, None):
                assert_in_scope(memory.list_threads(user, agent_id=agent_id), f"threads of {user}/{agent_id}",
                                user_id=user, agent_id=agent_id)
                assert_in_scope(memory.list_memories(user_id=user, agent_id=agent_id), f"memories of {user}/{agent_id}",
                                user_id=user, agent_id=agent_id)
        for agent_id in AGENTS:
            graph = collect_graph(memory, agent_id=agent_id)
            assert {node.id for node in graph.nodes} == {r.id for r in memory.list_memories(agent_id=agent_id)}
            assert_in_scope(memory.list_memories(agent_id=agent_id), f"memories of agent {agent_id}", agent_id=agent_id)
        for index in range(len(world.threads)):
            for strategy, client in clients.items():
                thread = client.get_thread(f"t{index}")
                scope = {"user_id": thread.user_id, "agent_id": thread.agent_id}
                assert_in_scope(thread.get_messages(start=0, end=None), f"messages of {thread.thread_id}",
                                thread_id=thread.thread_id)
                for query in queries(world):
                    found = thread.search(query, num_hops=3, max_results=100)
                    assert_in_scope(records_of(found), f"{strategy} search of thread {thread.thread_id}", **scope)
                    found = thread.search(query, num_hops=1, exact_thread_match=True, max_results=100)
                    assert_in_scope(records_of(found), f"{strategy} thread-only search of {thread.thread_id}",
                                    thread_id=thread.thread_id, **scope)
                card = thread.get_context_card(max_relevant_results=30, max_recent_messages=2,
                                               min_relevant_results_by_type={"message": 1, "memory": 1})
                assert_in_scope(records_of(card.relevant_results), f"{strategy} card of {thread.thread_id}", **scope)
                messages = [r.record for r in card.relevant_results if isinstance(r.record, Message)]
                assert_in_scope(messages, f"card messages of {thread.thread_id}", thread_id=thread.thread_id)
                assert_in_scope(card.recent_messages, f"card recent messages of {thread.thread_id}",
                                thread_id=thread.thread_id)
        for client in clients.values():
            client.close()
    assert seen > 0, "no search returned anything: the property checked nothing"


_SETTINGS: dict[str, Any] = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}


@settings(max_examples=8, **_SETTINGS)
@given(world=worlds)
def test_no_scoped_read_returns_another_scope_s_record_in_memory(world: World) -> None:
    check_world("memory", world)


@settings(max_examples=2, **_SETTINGS)
@given(world=worlds)
def test_no_scoped_read_returns_another_scope_s_record_embedded(world: World) -> None:
    check_world("embedded", world)


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(world=worlds)
def test_no_scoped_read_returns_another_scope_s_record_in_memory_thorough(world: World) -> None:
    check_world("memory", world)


@pytest.mark.slow
@settings(max_examples=60, **_SETTINGS)
@given(world=worlds)
def test_no_scoped_read_returns_another_scope_s_record_embedded_thorough(world: World) -> None:
    check_world("embedded", world)


# -- the command line's JSON Lines listings -----------------------------------------------------

_CLEAN_ENVIRONMENT: dict[str, str | None] = {
    name: None
    for name in ("PALIMPSEST_STORE", "PALIMPSEST_EMBEDDER", "PALIMPSEST_MEMORY_STORE_ID", "ORACLE_DSN", "ORACLE_USER",
                 "ORACLE_PASSWORD", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_EMBEDDING_MODEL")
} | {"COLUMNS": "200", "NO_COLOR": "1"}


def _json_lines(runner: CliRunner, *args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, list(args), env=_CLEAN_ENVIRONMENT)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def check_cli(world: World) -> None:
    folder = Path(tempfile.mkdtemp(prefix="isolation-cli-"))
    try:
        path = folder / "m.db"
        store = EmbeddedStore(path)
        build(_client(store, "vector"), world)
        store.close()
        runner = CliRunner()
        for user in USERS:
            for kind in ("threads", "memories"):
                rows = _json_lines(runner, "--store", str(path), kind, "--user", user, "--json", "--limit", "0")
                assert_in_scope([_Row(r) for r in rows], f"{kind} --user {user} --json", user_id=user)
                for agent_id in AGENTS:
                    rows = _json_lines(runner, "--store", str(path), kind, "--user", user, "--agent", agent_id, "--json",
                                       "--limit", "0")
                    assert_in_scope([_Row(r) for r in rows], f"{kind} --user {user} --agent {agent_id} --json",
                                    user_id=user, agent_id=agent_id)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Row:
    def __init__(self, row: dict[str, Any]) -> None:
        self.id = row["id"]
        self.user_id = row.get("user_id")
        self.agent_id = row.get("agent_id")


@settings(max_examples=1, **_SETTINGS)
@given(world=worlds)
def test_the_command_line_s_scoped_json_lines_hold_only_the_scope(world: World) -> None:
    check_cli(world)


@pytest.mark.slow
@settings(max_examples=25, **_SETTINGS)
@given(world=worlds)
def test_the_command_line_s_scoped_json_lines_hold_only_the_scope_thorough(world: World) -> None:
    check_cli(world)
