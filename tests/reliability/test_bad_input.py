"""Bad input, generated: every public method of ``AgentMemory`` and ``MemoryThread`` either
succeeds or raises an error of the project's tree, and a failed call writes nothing.

Methods are enumerated by introspection; a method or parameter without a strategy in
``strategies_public_api`` fails ``test_every_public_method_has_a_strategy``. Each example
builds a freshly seeded store (two users' threads, messages, memories of every type, links, a
summary), calls one method with generated arguments, and on failure compares snapshots of
everything stored (threads, messages, memories, links, summaries, settings, pending jobs)
taken through the store's unit of work before and after.

The in-memory store runs more examples; the embedded store (SQLite) runs a few in the default
run. ``-m slow`` runs many more of both.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from images_samples import png
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.backends import BACKENDS
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryThread
from palimpsest.application.testing import ScriptedExtractor, ScriptedSummariser
from palimpsest.domain import (
    AgentMemoryError,
    ArgumentTypeError,
    InvalidMetadataError,
    InvalidMetadataFilterError,
    ValidationError,
)
from palimpsest.domain.ports import MemoryStore
from strategies_public_api import (
    PUBLIC_METHODS,
    START,
    THREAD_IDS,
    calls,
    parameters,
    public_methods,
    seed,
    strategy_for,
    sync_name,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SETTINGS_KEYS = ("memory_retention_config", "embedding_model")
CLASSES: dict[str, type] = {"AgentMemory": AgentMemory, "MemoryThread": MemoryThread}
SYNC_METHODS = sorted((cls, name) for cls, names in PUBLIC_METHODS.items() for name in names)
ASYNC_TWINS = sorted(
    (cls, name) for cls, klass in CLASSES.items() for name in public_methods(klass) if name.endswith("_async")
)


def snapshot(store: MemoryStore) -> dict[str, Any]:
    """Everything stored, expired rows included, in a comparable form."""
    with store.unit_of_work() as uow:
        threads = uow.threads.list(limit=None)
        return {
            "threads": sorted(threads, key=lambda t: t.id),
            "messages": {t.id: uow.messages.list_for_thread(t.id, now=EPOCH) for t in threads},
            "summaries": {t.id: uow.summaries.list_for_thread(t.id) for t in threads},
            "records": sorted(uow.records.list(now=EPOCH, limit=None), key=lambda r: r.id),
            "links": sorted(uow.links.list(limit=None), key=lambda link: link.id),
            "settings": {key: uow.settings.get(key) for key in SETTINGS_KEYS},
            "jobs": sorted(uow.jobs.pending(EPOCH, limit=None), key=lambda job: job.id),
        }


# -- stores: one freshly seeded store per example ------------------------------------------------


def _client(store: MemoryStore, strategy: str, with_models: bool) -> AgentMemory:
    """With ``with_models``, a summariser and an extractor that finds nothing; without, neither
    (summaries fall back to a transcript, and no extraction pass runs)."""
    return build_client(
        store=store,
        embedder=HashingEmbedder(),
        summariser=ScriptedSummariser() if with_models else None,
        extractor=ScriptedExtractor(lambda request: []) if with_models else None,
        clock=ManualClock(START),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        search_strategy=strategy,  # type: ignore[arg-type]
    )


class _EmbeddedTemplate:
    """A seeded store file made once; each example opens a copy."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="bad-input-"))
        template = self.folder / "template.db"
        store = EmbeddedStore(template)
        seed(_client(store, "vector", True))
        store.close()
        self.template = template
        self.count = 0

    def open(self) -> EmbeddedStore:
        self.count += 1
        path = self.folder / f"copy-{self.count}.db"
        shutil.copyfile(self.template, path)
        return EmbeddedStore(path)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def embedded_template() -> Iterator[_EmbeddedTemplate]:
    gc.collect()
    gc.freeze()  # each EmbeddedStore open ends with a full collection; keep it cheap
    template = _EmbeddedTemplate()
    yield template
    template.remove()
    gc.unfreeze()


@contextmanager
def seeded(kind: str, template: Any, strategy: str, with_models: bool) -> Iterator[AgentMemory]:
    """A seeded client: in memory, on a copy of the embedded ``template``, or on PostgreSQL
    (``template``: the pool; a fresh schema per example, dropped afterwards)."""
    dropped: list[str] = []
    if kind == "memory":
        store: MemoryStore = InMemoryStore()
        client = _client(store, strategy, with_models)
        seed(client)
    elif kind == "postgres":
        dropped.append(f"B{uuid.uuid4().hex[:12]}")
        store = BACKENDS["postgres"].open_store(pool=template, memory_store_id=dropped[0])
        client = _client(store, strategy, with_models)
        seed(client)
    else:
        assert template is not None
        store = template.open()
        client = _client(store, strategy, with_models)
    try:
        yield client
    finally:
        client.close()
        store.close()
        drop_stores = BACKENDS[kind].drop_stores
        if dropped and drop_stores is not None:
            drop_stores(template, dropped)


# -- the property -------------------------------------------------------------------------------


def check_call(client: AgentMemory, cls: str, name: str, thread_id: str, call: tuple[tuple[Any, ...], dict[str, Any]],
               run: Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]) -> None:
    """One call with generated arguments: success, or an ``AgentMemoryError`` and no change."""
    target: Any = client if cls == "AgentMemory" else client.get_thread(thread_id)
    args, kwargs = call
    before = snapshot(client.store)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. a TTL clamped to the store's maximum
            run(getattr(target, name), args, kwargs)
    except AgentMemoryError as error:
        after = snapshot(client.store)
        changed = sorted(key for key in before if before[key] != after[key])
        assert after == before, (
            f"{cls}.{name} failed ({type(error).__name__}: {error!s:.200}) but changed the store: "
            + "; ".join(f"{key}: {before[key]!r:.300} -> {after[key]!r:.300}" for key in changed)
        )
    except Exception as exc:
        raise AssertionError(f"{cls}.{name} raised {type(exc).__module__}.{type(exc).__qualname__}: {exc!r:.300}") from exc


def _sync(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return method(*args, **kwargs)


def _async(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return asyncio.run(method(*args, **kwargs))


def _property(kind: str, cls: str, name: str, examples: int, run: Callable[..., Any] = _sync) -> Callable[..., None]:
    klass = CLASSES[cls]

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(
        call=calls(klass, name),
        thread_id=st.sampled_from(THREAD_IDS),
        strategy=st.sampled_from(["vector", "keyword", "hybrid"]),
        with_models=st.booleans(),
    )
    def prop(template: Any, call: Any, thread_id: str, strategy: str, with_models: bool) -> None:
        with seeded(kind, template, strategy, with_models) as client:
            check_call(client, cls, name, thread_id, call, run)

    return prop


def _ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"{cls}.{name}" for cls, name in pairs]


# -- completeness ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_every_public_method_has_a_strategy(cls: str) -> None:
    """A new public method (or async twin, or parameter) without a strategy entry fails here."""
    klass = CLASSES[cls]
    introspected = public_methods(klass)
    missing = sorted(n for n in introspected if sync_name(n) not in PUBLIC_METHODS[cls])
    assert not missing, f"public methods of {cls} without a strategy entry: {missing}"
    stale = sorted(PUBLIC_METHODS[cls] - set(introspected))
    assert not stale, f"strategy entries of {cls} for methods that do not exist: {stale}"
    twins_without_sync = sorted(n for n in introspected if n.endswith("_async") and sync_name(n) not in introspected)
    assert not twins_without_sync
    unparameterised = sorted(
        f"{name}({p.name})" for name in introspected for p in parameters(klass, name) if strategy_for(klass, name, p.name) is None
    )
    assert not unparameterised, f"parameters without a strategy: {unparameterised}"


# -- quick runs (the default run) ------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "name"), SYNC_METHODS, ids=_ids(SYNC_METHODS))
def test_bad_input_in_memory(cls: str, name: str) -> None:
    _property("memory", cls, name, examples=12)(None)


@pytest.mark.parametrize(("cls", "name"), SYNC_METHODS, ids=_ids(SYNC_METHODS))
def test_bad_input_embedded(cls: str, name: str, embedded_template: _EmbeddedTemplate) -> None:
    _property("embedded", cls, name, examples=3)(embedded_template)


@pytest.mark.postgres
@pytest.mark.parametrize(("cls", "name"), SYNC_METHODS, ids=_ids(SYNC_METHODS))
def test_bad_input_postgres(cls: str, name: str, postgres_pool: Any) -> None:
    _property("postgres", cls, name, examples=2)(postgres_pool)


@pytest.mark.parametrize(("cls", "name"), ASYNC_TWINS, ids=_ids(ASYNC_TWINS))
def test_bad_input_async_twins_in_memory(cls: str, name: str) -> None:
    _property("memory", cls, name, examples=3, run=_async)(None)


# -- slow runs ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "name"), SYNC_METHODS, ids=_ids(SYNC_METHODS))
def test_bad_input_in_memory_thorough(cls: str, name: str) -> None:
    _property("memory", cls, name, examples=400)(None)


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "name"), SYNC_METHODS, ids=_ids(SYNC_METHODS))
def test_bad_input_embedded_thorough(cls: str, name: str, embedded_template: _EmbeddedTemplate) -> None:
    _property("embedded", cls, name, examples=60)(embedded_template)


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "name"), ASYNC_TWINS, ids=_ids(ASYNC_TWINS))
def test_bad_input_async_twins_thorough(cls: str, name: str) -> None:
    _property("memory", cls, name, examples=40, run=_async)(None)


# -- regressions: the defects these properties found, one example each ----------------------------

REGRESSIONS: list[tuple[str, str, str, tuple[Any, ...], dict[str, Any], type[AgentMemoryError]]] = [
    # a time zone pushes the instant past datetime.max when converted to UTC (OverflowError)
    ("timestamp past 9999 in UTC", "AgentMemory", "add_memory", ("x",), {"timestamp": "9999-12-31T23:59:59-12:00"}, ValidationError),
    ("link timestamp past 9999", "AgentMemory", "update_record_link", ("l1",), {"timestamp": "9999-12-31T23:59:59-12:00"},
     ValidationError),
    # a TTL whose expiry is past year 9999 (OverflowError from timedelta or datetime)
    ("huge integer ttl", "MemoryThread", "add_messages", ([{"role": "user", "content": "x"}],), {"ttl_days": 10**12},
     ValidationError),
    ("huge float ttl", "AgentMemory", "add_memory", ("x",), {"ttl_days": 1e300}, ValidationError),
    ("ttl from a late timestamp", "AgentMemory", "add_memory", ("x",),
     {"timestamp": "9999-12-30T00:00:00Z", "ttl_days": 10, "ttl_anchor": "timestamp"}, ValidationError),
    # autonomous_linking was checked after the memory was stored: a failed call wrote it
    ("autonomous_linking not a bool", "MemoryThread", "add_memory", ("x",), {"autonomous_linking": ""}, ValidationError),
    ("autonomous_linking not a bool, client", "AgentMemory", "add_memory", ("x",), {"autonomous_linking": "yes"},
     ValidationError),
    # reembed called a non-callable progress after its first committed batch (TypeError)
    ("progress not callable", "AgentMemory", "reembed", (), {"progress": ""}, ValidationError),
    # get_messages(start=None) compared None with an int (TypeError)
    ("start=None", "MemoryThread", "get_messages", (), {"start": None}, ValidationError),
    # record_types that is not iterable (TypeError)
    ("record_types=5", "AgentMemory", "search", ("pizza",), {"user_id": "u1", "record_types": 5}, ArgumentTypeError),
    # lone surrogates: the embedded store cannot encode them (UnicodeEncodeError); now refused everywhere
    ("surrogate in content", "AgentMemory", "add_memory", ("a\ud800b",), {"user_id": "u1"}, ValidationError),
    ("surrogate in a scope id", "AgentMemory", "add_memory", ("x",), {"user_id": "u\udfff"}, ValidationError),
    ("surrogate in a metadata key", "AgentMemory", "add_memory", ("x",), {"metadata": {"k\ud800": 1}}, InvalidMetadataError),
    ("surrogate in a metadata value", "AgentMemory", "update_memory", ("m1",), {"metadata": {"k": ["\udfff"]}},
     InvalidMetadataError),
    ("surrogate in message content", "MemoryThread", "add_messages", ([{"role": "user", "content": "x\ud800"}],), {},
     ValidationError),
    ("surrogate in a role", "MemoryThread", "add_messages", ([{"role": "us\ud800er", "content": "x"}],), {}, ValidationError),
    ("surrogate in an edit", "MemoryThread", "update_message", ("msg1",), {"content": "\ud83d"}, ValidationError),
    ("surrogate in a link label", "AgentMemory", "link_records", ("m3", "fact", "m1", "preference", "x\ud800"), {},
     ValidationError),
    ("surrogate in thread metadata", "AgentMemory", "create_thread", (), {"metadata": {"k": "\ud800"}}, InvalidMetadataError),
]


@pytest.mark.parametrize("kind", ["memory", "embedded"])
@pytest.mark.parametrize(
    ("cls", "name", "args", "kwargs", "error"), [r[1:] for r in REGRESSIONS], ids=[r[0] for r in REGRESSIONS]
)
def test_regression_a_bad_argument_raises_its_typed_error_and_writes_nothing(
    kind: str, cls: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[AgentMemoryError],
    embedded_template: _EmbeddedTemplate,
) -> None:
    with seeded(kind, embedded_template, "hybrid", False) as client:
        target: Any = client if cls == "AgentMemory" else client.get_thread("t1")
        before = snapshot(client.store)
        with pytest.raises(error):
            getattr(target, name)(*args, **kwargs)
        assert snapshot(client.store) == before


@pytest.mark.parametrize("kind", ["memory", "embedded"])
def test_regression_huge_counts_mean_everything(kind: str, embedded_template: _EmbeddedTemplate) -> None:
    """Counts past SQLite's 64-bit integers (OverflowError before): a listing limit keeps every row,
    a card or summary window every message."""
    with seeded(kind, embedded_template, "vector", False) as client:
        assert [t.id for t in client.list_threads("u1", limit=2**70)] == ["t1"]
        assert {r.id for r in client.list_memories(user_id="u1", limit=2**63)} == {"m1", "m2", "m3"}
        thread = client.get_thread("t1")
        assert thread.get_summary(except_last=2**63 - 1).content == ""
        assert thread.get_context_card(max_recent_messages=2**63 - 1).recent_messages == tuple(thread.get_messages())
        assert "sourdough" in thread.get_context_card(fallback_message_count=2**63).summary


def test_regression_extraction_passes_are_not_a_thread_method() -> None:
    """``MemoryThread.extract_now`` ran a pass over any list it was given (and needed its own
    argument checks); a pass is the extraction service's, run by the job runner over the
    messages a job covers. Without an extractor a pass does nothing; with one that finds
    nothing, it stores nothing."""
    assert not hasattr(MemoryThread, "extract_now")
    for with_models in (False, True):
        with seeded("memory", None, "vector", with_models) as client:
            thread = client.get_thread("t1")
            services = client._services
            before = snapshot(client.store)
            stored = services.extraction.extract(
                services.threads.get("t1"), thread.settings, thread.get_messages(), pass_id="pass-1"
            )
            assert stored == []
            assert snapshot(client.store) == before


# -- metadata and filters holding an integer str() cannot write (ValueError before) ---------------

TOO_WIDE = 10**5000
IMAGE = png()
"""More than the 4300 digits Python's int -> str conversion allows (json.dumps raised ValueError)."""

WIDE_CALLS: dict[tuple[str, str, str], tuple[tuple[Any, ...], dict[str, Any]]] = {
    ("AgentMemory", "add_memory", "metadata"): (("x",), {"user_id": "u1"}),
    ("AgentMemory", "add_memory", "link_metadata"): (("x",), {"memory_id_to_link": "m3", "link_type": "supports"}),
    ("AgentMemory", "create_thread", "metadata"): ((), {}),
    ("AgentMemory", "link_records", "metadata"): (("m3", "fact", "m1", "preference", "supports"), {}),
    ("AgentMemory", "list_memories", "metadata_filter"): ((), {}),
    ("AgentMemory", "add_user", "metadata"): (("u9", "A user."), {}),
    ("AgentMemory", "add_agent", "metadata"): (("a9", "An agent."), {}),
    ("AgentMemory", "list_users", "metadata_filter"): ((), {}),
    ("AgentMemory", "list_agents", "metadata_filter"): ((), {}),
    ("AgentMemory", "list_messages", "metadata_filter"): ((), {}),
    ("AgentMemory", "list_threads", "metadata_filter"): ((), {"user_id": "u1"}),
    ("AgentMemory", "search", "metadata_filter"): (("pizza",), {"user_id": "u1"}),
    ("AgentMemory", "update_memory", "metadata"): (("m3",), {}),
    ("AgentMemory", "update_record_link", "metadata"): (("l2",), {}),
    ("AgentMemory", "update_thread", "metadata"): (("t1",), {}),
    ("MemoryThread", "add_memory", "metadata"): (("x",), {}),
    ("MemoryThread", "add_memory", "link_metadata"): (("x",), {"memory_id_to_link": "m1", "link_type": "supports"}),
    ("MemoryThread", "add_messages", "metadata"): (([{"role": "user", "content": "x"}],), {}),
    ("MemoryThread", "get_context_card", "metadata_filter"): ((), {}),
    ("MemoryThread", "link_records", "metadata"): (("m2", "preference", "m1", "preference", "supports"), {}),
    ("MemoryThread", "search", "metadata_filter"): (("pizza",), {}),
    ("MemoryThread", "update_memory", "metadata"): (("m1",), {}),
    ("MemoryThread", "update_message", "metadata"): (("msg1",), {}),
    ("MemoryThread", "update_record_link", "metadata"): (("l1",), {}),
    ("AgentMemory", "add_image", "metadata"): ((IMAGE, "x"), {"user_id": "u1"}),
    ("AgentMemory", "update_image", "metadata"): (("i1",), {}),
    ("AgentMemory", "list_images", "metadata_filter"): ((), {"user_id": "u1"}),
    ("MemoryThread", "add_image", "metadata"): ((IMAGE, "x"), {}),
    ("MemoryThread", "update_image", "metadata"): (("i1",), {}),
    ("MemoryThread", "list_images", "metadata_filter"): ((), {}),
}
WIDE_VALUES = {
    "metadata": [{"k": TOO_WIDE}, {"k": {"deep": [-TOO_WIDE]}}],
    "link_metadata": [{"k": TOO_WIDE}],
    "metadata_filter": [{"k": TOO_WIDE}, {"k": {"$not": TOO_WIDE}}, {"k": {"$array_contains_any": [1, TOO_WIDE]}}],
}


def test_every_metadata_and_filter_parameter_is_checked_for_too_wide_integers() -> None:
    introspected = {
        (cls, name, p.name)
        for cls, klass in CLASSES.items()
        for name in PUBLIC_METHODS[cls]
        for p in parameters(klass, name)
        if "metadata" in p.name and p.name != "memory_extraction_inherit_message_metadata"  # a flag or key list
    }
    assert introspected == set(WIDE_CALLS)


@pytest.mark.parametrize("kind", ["memory", "embedded"])
@pytest.mark.parametrize(("cls", "name", "parameter"), sorted(WIDE_CALLS), ids=[".".join(k) for k in sorted(WIDE_CALLS)])
def test_regression_an_integer_too_wide_to_write_is_a_typed_error_everywhere(
    kind: str, cls: str, name: str, parameter: str, embedded_template: _EmbeddedTemplate
) -> None:
    args, kwargs = WIDE_CALLS[(cls, name, parameter)]
    expected = InvalidMetadataFilterError if parameter == "metadata_filter" else InvalidMetadataError
    with seeded(kind, embedded_template, "hybrid", False) as client:
        target: Any = client if cls == "AgentMemory" else client.get_thread("t1")
        before = snapshot(client.store)
        for value in WIDE_VALUES[parameter]:
            calls_ = [(args, {**kwargs, parameter: value})]
            if (name, parameter) == ("add_messages", "metadata"):  # per message too
                calls_.append((([{"role": "user", "content": "x", "metadata": value}],), kwargs))
            for call_args, call_kwargs in calls_:
                with pytest.raises(expected, match="4300 digits"):
                    getattr(target, name)(*call_args, **call_kwargs)
        assert snapshot(client.store) == before


@pytest.mark.parametrize("kind", ["memory", "embedded"])
@pytest.mark.parametrize("cls", sorted(CLASSES))
@pytest.mark.parametrize("position", ["source_record_id", "target_record_id", "relation_type"])
@pytest.mark.parametrize(
    "bad", ["\ud800", 2**70, ["m3"], None, "", "x" * 129],
    ids=["surrogate", "2**70", "list", "None", "empty", "129 characters"],
)
def test_regression_delete_record_link_by_its_tuple_checks_the_tuple(
    kind: str, cls: str, position: str, bad: object, embedded_template: _EmbeddedTemplate
) -> None:
    """UnicodeEncodeError, OverflowError and "Error binding parameter" before; now the ids are
    checked like every other method's."""
    tuple_ = {
        "source_record_id": "m3",
        "source_record_type": "fact",
        "target_record_id": "m4",
        "target_record_type": "guideline",
        "relation_type": "supports",
        position: bad,
    }
    with seeded(kind, embedded_template, "hybrid", False) as client:
        target: Any = client if cls == "AgentMemory" else client.get_thread("t1")
        before = snapshot(client.store)
        with pytest.raises(ValidationError):
            target.delete_record_link(**tuple_)
        assert snapshot(client.store) == before
