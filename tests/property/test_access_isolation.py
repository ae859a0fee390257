"""Isolation property (ARCHITECTURE.md D44): two principals make random calls through
``memory.acting_for``, naming their own and each other's records, threads, links and user ids;
one never reads, lists, finds by search, links to, updates or deletes the other's data.

A plain model keeps each user's records (id → content), links and threads; after every step
each user's records and links in the store must be exactly the model's, so a call of one
principal that changed the other's data fails the run.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from clients import build_client
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import NO_EXTRACTION
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AccessScope, Principal
from palimpsest.application.requests import (
    AddMemory,
    AppendMessages,
    CardRequest,
    DeleteRecordLink,
    LinkRecords,
    ListRecords,
    ListThreads,
    UpdateMemory,
    UpdateRecordLink,
)
from palimpsest.domain.errors import (
    ConflictError,
    InvalidLinkError,
    InvalidScopeError,
    RecordNotFoundError,
    ThreadNotFoundError,
)

USERS = ("alice", "bob")
WORDS = ("tea", "paris", "launch", "code", "garden", "rome")
actors = st.sampled_from(USERS)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


class Isolation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp: str | None = None
        self.memory = build_client(
            **self.store_options(),
            embedder=HashingEmbedder(),
            clock=ManualClock(datetime(2030, 1, 1, tzinfo=UTC)),
            memory_extraction_config=NO_EXTRACTION,
        )
        self.scoped = {u: self.memory.acting_for(Principal(u, scope=AccessScope.WRITE)) for u in USERS}
        self.records: dict[str, dict[str, str]] = {u: {} for u in USERS}
        self.links: dict[str, dict[str, tuple[str, str]]] = {u: {} for u in USERS}
        self.threads: dict[str, set[str]] = {u: set() for u in USERS}
        self.ids = itertools.count()
        for user in USERS:
            for n in range(2):
                thread_id = f"{user}-t{n}"
                self.memory.create_thread(thread_id=thread_id, user_id=user)
                self.threads[user].add(thread_id)

    def store_options(self) -> dict[str, object]:
        return {"store": InMemoryStore()}

    def teardown(self) -> None:
        self.memory.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- what a request may name: anyone's ids, and some that never existed ----------------------

    def _any_record(self, data: st.DataObject) -> str:
        known = sorted(set(self.records["alice"]) | set(self.records["bob"]) | {"absent"})
        return data.draw(st.sampled_from(known))

    def _any_link(self, data: st.DataObject) -> str:
        known = sorted(set(self.links["alice"]) | set(self.links["bob"]) | {"absent-link"})
        return data.draw(st.sampled_from(known))

    def _any_thread(self, data: st.DataObject) -> str:
        known = sorted(self.threads["alice"] | self.threads["bob"] | {"absent-thread"})
        return data.draw(st.sampled_from(known))

    # -- rules ------------------------------------------------------------------------------------

    @rule(actor=actors, content=texts, data=st.data())
    def add_memory(self, actor: str, content: str, data: st.DataObject) -> None:
        body: dict[str, object] = {"content": content, "memory_id": f"m{next(self.ids)}"}
        named = data.draw(st.sampled_from([None, *USERS]))
        if named is not None:
            body["user_id"] = named
        target = self._any_record(data) if data.draw(st.booleans()) else None
        if target is not None:
            body.update(memory_id_to_link=target, link_type="related_to")
        thread = self._any_thread(data) if data.draw(st.booleans()) else None
        if thread is not None:
            body["thread_id"] = thread
        request = AddMemory.from_json(body)
        scoped = self.scoped[actor]
        if named is not None and named != actor:
            expected: type[Exception] | None = InvalidScopeError
        elif thread is not None and thread not in self.threads[actor]:
            expected = ThreadNotFoundError
        elif target is not None and target not in self.records[actor]:
            expected = RecordNotFoundError
        else:
            expected = None
        if expected is not None:
            try:
                scoped.add_memory(request)
            except expected:
                return
            raise AssertionError(f"{actor} added {body} but {expected.__name__} was expected")
        record_id = scoped.add_memory(request)
        self.records[actor][record_id] = content
        if target is not None:
            (link,) = self.memory.admin.links_among([record_id, target])
            self.links[actor][link.id] = (record_id, target)

    @rule(actor=actors, content=texts, data=st.data())
    def update_memory(self, actor: str, content: str, data: st.DataObject) -> None:
        record_id = self._any_record(data)
        if record_id in self.records[actor]:
            self.scoped[actor].update_memory(UpdateMemory.from_json({"memory_id": record_id, "content": content}))
            self.records[actor][record_id] = content
            return
        try:
            self.scoped[actor].update_memory(UpdateMemory(record_id, content=content))
        except RecordNotFoundError:
            return
        raise AssertionError(f"{actor} updated {record_id}, not theirs")

    @rule(actor=actors, data=st.data())
    def delete_memory(self, actor: str, data: st.DataObject) -> None:
        record_id = self._any_record(data)
        deleted = self.scoped[actor].delete_memory(record_id)
        assert deleted == int(record_id in self.records[actor])
        if deleted:
            del self.records[actor][record_id]
            self.links[actor] = {k: v for k, v in self.links[actor].items() if record_id not in v}

    @rule(actor=actors, data=st.data())
    def link_records(self, actor: str, data: st.DataObject) -> None:
        source, target = self._any_record(data), self._any_record(data)
        request = LinkRecords(source, "memory", target, "memory", "related_to")
        own = source in self.records[actor] and target in self.records[actor]
        try:
            link_id = self.scoped[actor].link_records(request)
        except RecordNotFoundError:
            assert not own, f"{actor} could not link their own {source} -> {target}"
            return
        except (ConflictError, InvalidLinkError):
            assert own, "a conflict on another user's records tells they exist"
            return
        assert own, f"{actor} linked {source} -> {target}, not both theirs"
        self.links[actor][link_id] = (source, target)

    @rule(actor=actors, data=st.data())
    def update_link(self, actor: str, data: st.DataObject) -> None:
        link_id = self._any_link(data)
        metadata = {"by": actor}
        changed = self.scoped[actor].update_record_link(UpdateRecordLink(link_id, metadata=metadata))
        assert changed == int(link_id in self.links[actor])

    @rule(actor=actors, data=st.data())
    def delete_link(self, actor: str, data: st.DataObject) -> None:
        link_id = self._any_link(data)
        if data.draw(st.booleans()) or link_id == "absent-link":
            request = DeleteRecordLink(relation_id=link_id)
        else:
            owner = "alice" if link_id in self.links["alice"] else "bob"
            source, target = self.links[owner][link_id]
            request = DeleteRecordLink(source, "memory", target, "memory", "related_to")
        deleted = self.scoped[actor].delete_record_link(request)
        assert deleted == int(link_id in self.links[actor])
        if deleted:
            del self.links[actor][link_id]

    @rule(actor=actors, content=texts, data=st.data())
    def add_messages(self, actor: str, content: str, data: st.DataObject) -> None:
        thread_id = self._any_thread(data)
        request = AppendMessages([{"role": "user", "content": content}])
        try:
            self.scoped[actor].add_messages(thread_id, request)
        except ThreadNotFoundError:
            assert thread_id not in self.threads[actor]
            return
        assert thread_id in self.threads[actor]

    @rule(actor=actors, data=st.data())
    def context_card(self, actor: str, data: st.DataObject) -> None:
        thread_id = self._any_thread(data)
        try:
            card = self.scoped[actor].context_card(thread_id, CardRequest())
        except ThreadNotFoundError:
            assert thread_id not in self.threads[actor]
            return
        assert thread_id in self.threads[actor]
        other = next(u for u in USERS if u != actor)
        assert not set(self.records[other]) & {r.record.id for r in card.relevant_results}

    @rule(actor=actors, data=st.data())
    def thread_summary(self, actor: str, data: st.DataObject) -> None:
        thread_id = self._any_thread(data)
        try:
            self.scoped[actor].thread_summary(thread_id)
        except ThreadNotFoundError:
            assert thread_id not in self.threads[actor]
            return
        assert thread_id in self.threads[actor]

    @rule(actor=actors, query=texts, named=st.sampled_from([None, *USERS]))
    def search(self, actor: str, query: str, named: str | None) -> None:
        scoped = self.scoped[actor]
        body: dict[str, object] = {"query": query, "num_hops": 2}
        if named is not None:
            body["user_id"] = named
        try:
            results = scoped.search(scoped.search_request(body))
        except InvalidScopeError:
            assert named not in (None, actor)
            return
        assert named in (None, actor)
        seen = set()
        stack = list(results)
        while stack:
            result = stack.pop()
            seen.add(result.record.id)
            assert result.record.user_id == actor
            stack.extend(linked for _, linked in result.linked_results)
        other = next(u for u in USERS if u != actor)
        assert not seen & set(self.records[other])

    @rule(actor=actors, data=st.data())
    def read_one(self, actor: str, data: st.DataObject) -> None:
        record_id = self._any_record(data)
        try:
            history = self.scoped[actor].memory_history(record_id)
        except RecordNotFoundError:
            assert record_id not in self.records[actor]
            return
        assert record_id in self.records[actor]
        assert set(history.related) <= set(self.records[actor])
        assert {lk.id for lk in history.links} <= set(self.links[actor])

    # -- what every step leaves ---------------------------------------------------------------------

    @invariant()
    def each_user_holds_exactly_their_own(self) -> None:
        for user in USERS:
            listed = self.scoped[user].list_memories(ListRecords())
            assert {r.id: r.content for r in listed} == self.records[user]
            stored = self.memory.admin.list_records(user_id=user)
            assert {r.id: r.content for r in stored} == self.records[user]
            threads = self.scoped[user].list_threads(ListThreads(user))
            assert {t.id for t in threads} == self.threads[user]
            links = self.memory.admin.links_among(self.records[user])
            assert {lk.id for lk in links} == set(self.links[user])


class EmbeddedIsolation(Isolation):
    def store_options(self) -> dict[str, object]:
        self.tmp = tempfile.mkdtemp(prefix="palimpsest-isolation-")
        return {"path": Path(self.tmp) / "store.db"}


TestIsolationInMemory = Isolation.TestCase
TestIsolationEmbedded = EmbeddedIsolation.TestCase
TestIsolationEmbedded.settings = settings(max_examples=10, deadline=None)
