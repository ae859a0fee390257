"""Isolation, generated: nothing scoped to one user or agent ever returns or changes another's record.

Hypothesis generates users and agents (and unscoped records) with threads, messages and
memories of every type, and links between random pairs of memories, across users too. A link
across tenants (two users, two agents, or from an unscoped record into a user's) must be refused
with ``CrossScopeLinkError`` and change nothing; it is then stored past the service, as an older
version could have stored it, because a graph hop over such a link is the obvious way for one
user's record to leak into another's results. Then every scoped read is checked, for each user,
each (user, agent) pair and the unscoped (``None``) scope:

* ``AgentMemory.search`` with each strategy (vector, keyword, hybrid), graph hops included;
* ``MemoryThread.search`` (the thread's user and agent, or the thread alone, and attempts to
  widen it: ``exact_user_match=False``, another user, a ``SearchScope`` without or with another
  user) and the thread's context card (relevant records with their linked trees, recent messages);
* ``list_threads``, ``list_memories`` and ``get_messages``;
* ``collect_graph`` (the graph picture's data);
* the command line's JSON Lines listings ``threads --json`` and ``memories --json`` with
  ``--user`` / ``--agent`` (``export`` itself writes the whole store and takes no scope).

Every returned record, and every record in every linked tree, must belong to the scope.

Writes are checked too: through every thread handle, updates, deletes, links, link updates and
link deletes of records outside its thread are refused or do nothing, and its own writes
succeed; every user-scoped client call (and every unscoped one) that would link to, retire or
retype another user's record is refused. Other users' records, statuses and links must be
exactly as before.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.backends import BACKENDS
from palimpsest.adapters.cli import app
from palimpsest.adapters.cli.graph import collect_graph
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import (
    AgentMemory,
    MemoryExtractionConfig,
    SearchResult,
    SearchScope,
)
from palimpsest.application.record_service import RecordService
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import (
    LIFECYCLE_TYPES,
    ConflictError,
    CrossScopeLinkError,
    InvalidScopeError,
    LinkedRecord,
    MemoryRecord,
    Message,
    RecordLink,
    RecordNotFoundError,
    RecordType,
    opposite_label,
)
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
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

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


Scope = tuple[str | None, str | None]  # (user, agent)


def crosses(source: Scope, target: Scope, relation: str | None = None) -> bool:
    """The link rule, restated: two users, two agents, an unscoped source into a user's record,
    or a user's lifecycle link into an unscoped record (it would retire it for every user)."""
    (source_user, source_agent), (target_user, target_agent) = source, target
    if target_user is not None and source_user != target_user:
        return True
    if relation in LIFECYCLE_TYPES and target_user is None and source_user is not None:
        return True
    return source_agent is not None and target_agent is not None and source_agent != target_agent


def tenant_state(store: MemoryStore, users: Iterable[str | None]) -> tuple[list[MemoryRecord], list[RecordLink]]:
    """The records of ``users`` (expired included, with their statuses) and every link touching them."""
    wanted = set(users)
    with store.unit_of_work() as uow:
        records = sorted((r for r in uow.records.list(now=EPOCH, limit=None) if r.user_id in wanted), key=lambda r: r.id)
        ids = {r.id for r in records}
        links = sorted((l for l in uow.links.list(limit=None) if ids & {l.source_id, l.target_id}), key=lambda l: l.id)
    return records, links


def store_legacy_link(store: MemoryStore, source: str, target: str, types: dict[str, str], relation: str) -> None:
    """Store a crossing link past the service, as a version without the scope rule could have."""
    with store.unit_of_work() as uow:
        if uow.links.between(source, target):
            return  # the pair is already linked: one orientation, one link per type
        uow.links.add(RecordLink(id=f"legacy-{source}-{target}", source_id=source, source_type=RecordType(types[source]),
                                 target_id=target, target_type=RecordType(types[target]), relation_type=relation,
                                 opposite_relation_type=opposite_label(relation), created_at=START))
        RecordService(store, ManualClock(START)).rederive_in(uow, [target], START)
        uow.commit()


def build(memory: AgentMemory, world: World) -> None:
    for index, (user, agent_id, messages) in enumerate(world.threads):
        thread = memory.create_thread(thread_id=f"t{index}", user_id=user, agent_id=agent_id)
        thread.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": m} for i, m in enumerate(messages)])
    for index, (user, agent_id, thread_index, memory_type, content) in enumerate(world.memories):
        thread_id = f"t{thread_index}" if thread_index is not None and thread_index < len(world.threads) else None
        if thread_id is not None and (user, agent_id) != tuple(world.threads[thread_index][:2]):
            # A memory of another scope than its thread's is refused; one stored by a version
            # before that rule is still generated (past the service), so handles are tested on it.
            with pytest.raises(InvalidScopeError):
                memory.add_memory(content, memory_type=memory_type, user_id=user, agent_id=agent_id,
                                  thread_id=thread_id, autonomous_linking=False)
            with memory.store.unit_of_work() as uow:
                uow.records.add(MemoryRecord(id=f"m{index}", record_type=RecordType(memory_type), content=content,
                                             user_id=user, agent_id=agent_id, thread_id=thread_id,
                                             created_at=START, updated_at=START))
                uow.commit()
            continue
        memory.add_memory(content, memory_id=f"m{index}", memory_type=memory_type, user_id=user, agent_id=agent_id,
                          thread_id=thread_id, autonomous_linking=False)
    types = {f"m{i}": spec[3] for i, spec in enumerate(world.memories)}
    scopes = {f"m{i}": (spec[0], spec[1]) for i, spec in enumerate(world.memories)}
    everyone = (*USERS, None)
    for source, target, relation in world.links:
        s, t = f"m{source}", f"m{target}"
        if s == t or s not in types or t not in types:
            continue
        if crosses(scopes[s], scopes[t], relation):
            before = tenant_state(memory.store, everyone)
            with pytest.raises(CrossScopeLinkError):
                memory.link_records(s, types[s], t, types[t], relation)
            assert tenant_state(memory.store, everyone) == before, f"the refused link {s} -> {t} changed the store"
            store_legacy_link(memory.store, s, t, types, relation)
            continue
        try:
            memory.link_records(s, types[s], t, types[t], relation)
        except ConflictError:  # the pair is already linked (either orientation)
            pass


def _client(store: MemoryStore, strategy: str) -> AgentMemory:
    return build_client(store=store, embedder=HashingEmbedder(), summariser=ScriptedSummariser(), clock=ManualClock(START),
                       memory_extraction_config=NO_EXTRACTION, search_strategy=strategy)  # type: ignore[arg-type]


@contextmanager
def world_store(kind: str, world: World, pool: Any = None) -> Iterator[MemoryStore]:
    """A store of ``kind`` holding ``world``; a pooled backend's (``pool``: its pool) is a fresh
    ``memory_store_id``, dropped afterwards by its row's own hook."""
    folder = Path(tempfile.mkdtemp(prefix="isolation-"))
    store_id = f"I{uuid.uuid4().hex[:12]}"
    backend = BACKENDS[kind]
    store: MemoryStore
    if kind == "memory":
        store = InMemoryStore()
    elif kind == "embedded":
        store = EmbeddedStore(folder / "m.db")
    else:
        store = backend.open_store(pool=pool, memory_store_id=store_id)
    try:
        build(_client(store, "vector"), world)
        yield store
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
        if backend.drop_stores is not None:
            backend.drop_stores(pool, [store_id])


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


def check_world(kind: str, world: World, pool: Any = None) -> None:
    seen = 0
    with world_store(kind, world, pool) as store:
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
                    found = thread.search(query, num_hops=3, max_results=100, scope=SearchScope())
                    assert_in_scope(records_of(found), f"{strategy} SearchScope() search of thread {thread.thread_id}",
                                    user_id=thread.user_id)
                    for widening in _widenings(thread.user_id):
                        with pytest.raises(InvalidScopeError):
                            thread.search(query, num_hops=3, max_results=100, **widening)
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


def _widenings(user: str | None) -> list[dict[str, Any]]:
    """Search arguments that would take a thread handle of ``user`` outside its user."""
    others = [u for u in (*USERS, None) if u != user]
    return [
        {"exact_user_match": False},
        {"scope": SearchScope(exact_user_match=False)},
        *({"user_id": other} for other in others),
        *({"scope": SearchScope(user_id=other)} for other in others),
    ]


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


# -- writes -------------------------------------------------------------------------------------


def _links(store: MemoryStore) -> list[RecordLink]:
    with store.unit_of_work() as uow:
        return uow.links.list(limit=None)


def check_thread_writes(memory: AgentMemory, store: MemoryStore, thread_id: str) -> None:
    """A thread handle changes only its own records; other users' stay exactly as they were."""
    thread = memory.get_thread(thread_id)
    others = [u for u in USERS if u != thread.user_id]
    before = tenant_state(store, others)
    current = memory.list_memories(limit=None)
    # A thread owns the records in it that are of its user (the client may file others under it).
    owned = {r.id for r in current if r.thread_id == thread_id and r.user_id == thread.user_id}
    own = [r for r in current if r.id in owned]
    for record in (r for r in current if r.id not in owned):
        with pytest.raises(RecordNotFoundError):
            thread.update_memory(record.id, "rewritten by another thread")
        assert thread.delete_memory(record.id) == 0
        with pytest.raises(RecordNotFoundError):
            thread.add_memory("retires it", memory_id_to_link=record.id, link_type="supersedes")
        for mine in own[:1]:
            with pytest.raises(RecordNotFoundError):
                thread.link_records(mine.id, mine.record_type.value, record.id, record.record_type.value, "supersedes")
            with pytest.raises(RecordNotFoundError):
                thread.link_records(record.id, record.record_type.value, mine.id, mine.record_type.value, "duplicates")
    links = _links(store)
    for link in links:
        if {link.source_id, link.target_id} <= owned:
            continue
        assert thread.update_record_link(link.id, relation_type="supersedes") == 0
        assert thread.delete_record_link(relation_id=link.id) == 0
        assert thread.delete_record_link(link.source_id, link.source_type.value, link.target_id,
                                         link.target_type.value, link.relation_type) == 0
    if own:  # its own writes still work, and still reach no other user's record
        thread.update_memory(own[0].id, "rewritten by its own thread")
        # Deleting a record deletes its links: a crossing link stored by an older version would
        # take the other end's status with it, so the record deleted here touches none.
        scopes = {r.id: (r.user_id, r.agent_id) for r in current}
        crossing = {end for l in links if crosses(scopes[l.source_id], scopes[l.target_id], l.relation_type)
                    for end in (l.source_id, l.target_id)}
        first, last = own[0], next((r for r in reversed(own) if r.id not in crossing), own[0])
        if first.id != last.id and crosses((last.user_id, last.agent_id), (first.user_id, first.agent_id), "supersedes"):
            with pytest.raises(CrossScopeLinkError):  # its records of two agents
                thread.link_records(last.id, last.record_type.value, first.id, first.record_type.value, "supersedes")
        elif first.id != last.id:
            try:
                thread.link_records(last.id, last.record_type.value, first.id, first.record_type.value, "supersedes")
            except ConflictError:
                pass
        if crosses((thread.user_id, thread.agent_id), (first.user_id, first.agent_id), "refines"):
            with pytest.raises(CrossScopeLinkError):
                thread.add_memory("a new note of the thread", memory_id_to_link=first.id, link_type="refines")
        else:
            thread.add_memory("a new note of the thread", memory_id_to_link=first.id, link_type="refines")
        if last.id not in crossing:
            assert thread.delete_memory(last.id) == 1
            # An unscoped record may be a link target of any user's record: deleting it takes
            # those links along, and nothing else of theirs.
            records, links = before
            before = records, [l for l in links if last.id not in (l.source_id, l.target_id)]
    assert tenant_state(store, others) == before, f"writes through thread {thread_id} changed another user's records"


def check_scoped_writes(memory: AgentMemory, store: MemoryStore, user: str | None) -> None:
    """Client calls scoped to ``user`` (or to no user) never link to, retire or retype another user's record."""
    others = [u for u in USERS if u != user]
    before = tenant_state(store, others)
    current = memory.list_memories(limit=None)
    mine = [r for r in current if r.user_id == user]
    theirs = [r for r in current if r.user_id in others]
    for record in theirs:
        with pytest.raises(CrossScopeLinkError):
            memory.add_memory("retires it", user_id=user, memory_id_to_link=record.id, link_type="supersedes")
        if user is None:  # naming no user explicitly is an unscoped write (an omitted one is the target's)
            with pytest.raises(CrossScopeLinkError):
                memory.add_memory("retires it", user_id=None, memory_id_to_link=record.id, link_type="supersedes")
        for own in mine:
            with pytest.raises(CrossScopeLinkError):
                memory.link_records(own.id, own.record_type.value, record.id, record.record_type.value, "supersedes")
            if user is not None:
                with pytest.raises(CrossScopeLinkError):
                    memory.link_records(record.id, record.record_type.value, own.id, own.record_type.value, "refines")
    scopes = {r.id: (r.user_id, r.agent_id) for r in current}
    for link in _links(store):
        touches_theirs = {scopes[link.source_id][0], scopes[link.target_id][0]} & set(others)
        if touches_theirs and crosses(scopes[link.source_id], scopes[link.target_id], "supersedes"):
            with pytest.raises(CrossScopeLinkError):  # a crossing link stored by an older version
                memory.update_record_link(link.id, relation_type="supersedes")
    assert tenant_state(store, others) == before, f"calls scoped to {user!r} changed another user's records"


def check_writes(kind: str, world: World, pool: Any = None) -> None:
    with world_store(kind, world, pool) as store:
        memory = _client(store, "keyword")
        for user in (*USERS, None):
            check_scoped_writes(memory, store, user)
        for index in range(len(world.threads)):
            check_thread_writes(memory, store, f"t{index}")
        memory.close()


@pytest.mark.postgres
@settings(max_examples=2, **_SETTINGS)
@given(world=worlds)
def test_no_scoped_read_returns_another_scope_s_record_postgres(postgres_pool: Any, world: World) -> None:
    check_world("postgres", world, postgres_pool)


@settings(max_examples=8, **_SETTINGS)
@given(world=worlds)
def test_no_thread_handle_or_scoped_call_changes_another_user_s_records_in_memory(world: World) -> None:
    check_writes("memory", world)


@settings(max_examples=2, **_SETTINGS)
@given(world=worlds)
def test_no_thread_handle_or_scoped_call_changes_another_user_s_records_embedded(world: World) -> None:
    check_writes("embedded", world)


@pytest.mark.postgres
@settings(max_examples=2, **_SETTINGS)
@given(world=worlds)
def test_no_thread_handle_or_scoped_call_changes_another_user_s_records_postgres(postgres_pool: Any, world: World) -> None:
    check_writes("postgres", world, postgres_pool)


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(world=worlds)
def test_no_thread_handle_or_scoped_call_changes_another_user_s_records_in_memory_thorough(world: World) -> None:
    check_writes("memory", world)


@pytest.mark.slow
@settings(max_examples=60, **_SETTINGS)
@given(world=worlds)
def test_no_thread_handle_or_scoped_call_changes_another_user_s_records_embedded_thorough(world: World) -> None:
    check_writes("embedded", world)


# -- the command line's JSON Lines listings -----------------------------------------------------

_CLEAN_ENVIRONMENT: dict[str, str | None] = dict.fromkeys(("PALIMPSEST_STORE", "PALIMPSEST_EMBEDDER", "PALIMPSEST_MEMORY_STORE_ID", "ORACLE_DSN", "ORACLE_USER", "ORACLE_PASSWORD", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_EMBEDDING_MODEL")) | {"COLUMNS": "200", "NO_COLOR": "1"}


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
