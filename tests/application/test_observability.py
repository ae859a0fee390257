"""Observability: context-local listeners hear a started and a completed event around every public
operation of the client and of a thread (their ``_async`` twins included), and around every call
of an embedder; events are frozen, mask what is sensitive when dumped, and are built only while a
listener wants them; a listener that raises never breaks the operation."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import (
    AgentMemory,
    AgentMemoryCompletedEvent,
    AgentMemoryStartedEvent,
    ApiOperationCompletedEvent,
    ApiOperationStartedEvent,
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    EventListener,
    ExtractedMemory,
    ExtractionRequest,
    GenericEventListener,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OperationKind,
    ThreadCompletedEvent,
    ThreadStartedEvent,
    emit_event,
    observability,
    register_event_listeners,
)
from palimpsest.application.observability import REDACTED, active_event_listeners, is_listened, operation_kind
from palimpsest.application.testing import ScriptedExtractor
from palimpsest.domain import RecordType
from palimpsest.domain.errors import ArgumentTypeError, ThreadNotFoundError

SECRET = "Saffron-7731 is the vault code"
FACADES = (AgentMemoryStartedEvent, AgentMemoryCompletedEvent, ThreadStartedEvent, ThreadCompletedEvent)


class Recorder(EventListener):
    """Keeps every event it subscribes to, with the name of the thread that emitted it."""

    def __init__(self, *types: type[Event]) -> None:
        self.types = types or None
        self.events: list[Event] = []
        self.threads: list[str] = []
        self._lock = threading.Lock()

    def on_event(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            self.threads.append(threading.current_thread().name)

    def subscribed_event_types(self) -> Any:
        return self.types

    def names(self) -> list[str]:
        return [e.event_name for e in self.events]


@pytest.fixture
def memory(root_client: Callable[..., AgentMemory]) -> AgentMemory:
    return root_client()


# --- the facades' operations -----------------------------------------------------------------------


def test_each_operation_emits_a_started_and_a_completed_event_named_after_its_component_and_method(
    memory: AgentMemory,
) -> None:
    recorder = Recorder(*FACADES)  # the embedder's events left out
    with register_event_listeners([recorder]):
        thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
        thread.add_messages([{"role": "user", "content": "I live in Rome."}])
        memory.search("Rome", user_id="u1")
        memory.delete_thread("t1")
    assert recorder.names() == [
        "agent_memory.create_thread.started",
        "agent_memory.create_thread.completed",
        "thread.add_messages.started",
        "thread.add_messages.completed",
        "agent_memory.search.started",
        "agent_memory.search.completed",
        "agent_memory.delete_thread.started",
        "agent_memory.delete_thread.completed",
    ]
    started, completed = recorder.events[2], recorder.events[3]
    assert isinstance(started, ThreadStartedEvent) and isinstance(completed, ThreadCompletedEvent)
    assert (started.component, started.api_class, started.concrete_class, started.method) == (
        "thread", "MemoryThread", "MemoryThread", "add_messages"
    )
    assert (started.thread_id, started.user_id, started.agent_id) == ("t1", "u1", "a1")
    assert started.operation_kind is OperationKind.CREATE and completed.operation_kind is OperationKind.CREATE
    assert started.event_id.startswith("ev_") and started.event_id.endswith(".started")
    assert completed.started_event_id == started.event_id
    assert completed.event_id == started.event_id.replace(".started", ".completed")
    assert completed.success is True and completed.error_type is None
    assert completed.result_summary == {"result_count": 1}
    kinds = [e.operation_kind for e in recorder.events if isinstance(e, AgentMemoryStartedEvent)]
    assert kinds == [OperationKind.CREATE, OperationKind.READ, OperationKind.DELETE]
    assert [e.result_summary for e in recorder.events if isinstance(e, AgentMemoryCompletedEvent)][1:] == [
        {"result_count": 1},  # one search result
        {"result_count": 1},  # one thread deleted
    ]


def test_the_argument_summary_says_which_arguments_were_given_never_their_values(memory: AgentMemory) -> None:
    recorder = Recorder(AgentMemoryStartedEvent)
    with register_event_listeners([recorder]):
        memory.add_memory(SECRET, user_id="u1", metadata={"source": SECRET})
    (started,) = recorder.events
    assert isinstance(started, AgentMemoryStartedEvent)
    summary = started.argument_summary or {}
    assert summary["content"] == summary["user_id"] == summary["metadata"] == {"is_provided": True}
    assert summary["agent_id"] == summary["memory_type"] == summary["memory_id_to_link"] == {"is_provided": False}
    assert "Saffron" not in json.dumps(summary)
    # the values are on the event for a listener to read, masked in every dump unless asked for
    assert started.arguments is not None and started.arguments["content"] == SECRET
    for dumped in (started.model_dump(), started.to_observability_dict(), json.loads(started.model_dump_json())):
        assert dumped["arguments"] == REDACTED and dumped["argument_summary"] == summary
        assert "Saffron" not in json.dumps(dumped)
    raw = json.loads(started.model_dump_json(mask_sensitive_information=False))
    assert raw["arguments"]["content"] == SECRET and raw["arguments"]["metadata"] == {"source": SECRET}
    assert started.model_dump(mask_sensitive_information=False)["arguments"]["user_id"] == "u1"


def test_a_thread_event_masks_its_identifiers_and_its_result_when_dumped(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t-secret", user_id="alice@example.com")
    recorder = Recorder(ThreadCompletedEvent)
    with register_event_listeners([recorder]):
        ids = thread.add_messages([{"role": "user", "content": SECRET}])
    (completed,) = recorder.events
    assert isinstance(completed, ThreadCompletedEvent) and completed.result == ids
    dumped = completed.model_dump()
    assert dumped["thread_id"] == dumped["user_id"] == dumped["result"] == REDACTED
    assert dumped["agent_id"] is None  # nothing to hide
    text = completed.model_dump_json()
    assert "alice" not in text and "t-secret" not in text and ids[0] not in text
    assert completed.model_dump(mask_sensitive_information=False)["user_id"] == "alice@example.com"
    assert "alice@example.com" in repr(completed)  # repr is raw, as the attributes


def test_a_failed_operation_completes_unsuccessfully_with_its_error_type_and_still_raises(
    memory: AgentMemory,
) -> None:
    recorder = Recorder()
    with register_event_listeners([recorder]), pytest.raises(ThreadNotFoundError):
        memory.get_thread("missing")
    started, completed = recorder.events
    assert isinstance(completed, AgentMemoryCompletedEvent)
    assert (completed.success, completed.error_type, completed.result) == (False, "ThreadNotFoundError", None)
    assert completed.started_event_id == started.event_id


@pytest.mark.parametrize(
    ("method", "kind"),
    [
        ("add_memory", OperationKind.CREATE),
        ("add_messages", OperationKind.CREATE),
        ("create_thread", OperationKind.CREATE),
        ("link_records", OperationKind.CREATE),
        ("get_thread", OperationKind.READ),
        ("get_context_card", OperationKind.READ),
        ("list_memories", OperationKind.READ),
        ("search", OperationKind.READ),
        ("wait_for_memory_extraction", OperationKind.READ),
        ("update_memory", OperationKind.UPDATE),
        ("update_record_link", OperationKind.UPDATE),
        ("delete_thread", OperationKind.DELETE),
        ("delete_record_link", OperationKind.DELETE),
        ("purge_expired", OperationKind.DELETE),
        ("embed_waiting", OperationKind.UPDATE),
        ("close", OperationKind.UNKNOWN),
        ("addendum", OperationKind.UNKNOWN),
    ],
)
def test_the_operation_kind_follows_the_method_name(method: str, kind: OperationKind) -> None:
    assert operation_kind(method) is kind


def test_an_operation_called_by_another_emits_no_pair_of_its_own(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u1")
    [message_id] = thread.add_messages([{"role": "user", "content": "hello"}])
    recorder = Recorder()
    with register_event_listeners([recorder]):
        assert thread.delete_message(message_id) == 1  # it reads the message through get_message
    assert recorder.names() == ["thread.delete_message.started", "thread.delete_message.completed"]


def test_the_async_twins_emit_to_the_awaiting_tasks_listeners_only(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I live in Rome."}])

    async def search_with(recorder: Recorder, query: str) -> None:
        with register_event_listeners([recorder]):
            await thread.search_async(query)

    async def both(first: Recorder, second: Recorder) -> None:
        await asyncio.gather(search_with(first, "Rome"), search_with(second, "live"))

    first, second = Recorder(ThreadStartedEvent), Recorder(ThreadStartedEvent)
    asyncio.run(both(first, second))
    assert first.names() == second.names() == ["thread.search.started"]
    assert first.threads[0] != threading.current_thread().name  # emitted in the twin's worker thread
    assert first.events[0].arguments == {"query": "Rome"}  # type: ignore[attr-defined]
    assert second.events[0].arguments == {"query": "live"}  # type: ignore[attr-defined]


# --- listeners and their registration --------------------------------------------------------------


def test_registration_is_context_local_nested_registrations_add_and_a_new_thread_starts_with_none() -> None:
    outer, inner = Recorder(), Recorder()
    seen_in_thread: list[list[EventListener]] = []
    with register_event_listeners([outer]) as active:
        assert active == [outer]
        with register_event_listeners([inner]) as nested:
            assert nested == [outer, inner]
            emit_event(Event(component="app", event_name="app.nested"))
            worker = threading.Thread(target=lambda: seen_in_thread.append(active_event_listeners()))
            worker.start()
            worker.join()
        emit_event(Event(component="app", event_name="app.outer"))
        assert active_event_listeners() == [outer]
    assert active_event_listeners() == []
    emit_event(Event(component="app", event_name="app.none"))
    assert outer.names() == ["app.nested", "app.outer"]
    assert inner.names() == ["app.nested"]
    assert seen_in_thread == [[]]


def test_listeners_hear_only_the_event_classes_they_subscribe_to_in_registration_order() -> None:
    heard: list[str] = []
    completed_only = GenericEventListener(ApiOperationCompletedEvent, lambda e: heard.append(f"c:{e.event_name}"))
    everything = GenericEventListener(Event, lambda e: heard.append(f"all:{e.event_name}"))
    with register_event_listeners([completed_only, everything]):
        emit_event(Event(component="app", event_name="app.plain"))
        emit_event(
            AgentMemoryCompletedEvent(
                event_name="agent_memory.x.completed", started_event_id="s", concrete_class="C", method="x", success=True
            )
        )
    assert heard == ["all:app.plain", "c:agent_memory.x.completed", "all:agent_memory.x.completed"]


def test_a_listener_that_raises_is_logged_and_neither_the_operation_nor_the_next_listener_stops(
    memory: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(event: Event) -> None:
        raise RuntimeError("listener bug")

    recorder = Recorder(*FACADES)
    with caplog.at_level(logging.WARNING, "palimpsest.observability"), register_event_listeners(
        [GenericEventListener(FACADES, fail), recorder]
    ):
        memory_id = memory.add_memory("kept", user_id="u1")
    assert [m.id for m in memory.list_memories(user_id="u1")] == [memory_id]
    assert recorder.names() == ["agent_memory.add_memory.started", "agent_memory.add_memory.completed"]
    failures = [r for r in caplog.records if r.name == "palimpsest.observability"]
    assert len(failures) == 2 and all("listener bug" in r.getMessage() for r in failures)
    assert all(r.exc_info is None for r in failures)  # one line each; the traceback is at DEBUG


def test_a_listener_that_calls_the_api_hears_nothing_of_its_own_calls(memory: AgentMemory) -> None:
    seen: list[str] = []

    def look(event: Event) -> None:
        seen.append(event.event_name)
        memory.list_memories(user_id="u1")  # would recurse without end if it emitted events here

    with register_event_listeners([GenericEventListener(Event, look)]):
        memory.add_memory("kept", user_id="u1")
    assert seen == [  # the memory's vector is embedded inside the operation; nothing from list_memories
        "agent_memory.add_memory.started",
        "embedder.started",
        "embedder.completed",
        "agent_memory.add_memory.completed",
    ]


def test_no_event_is_built_without_a_listener_that_wants_it(
    memory: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = observability._event_id

    def counting() -> str:
        built.append("event")
        return real()

    monkeypatch.setattr(observability, "_event_id", counting)
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "nobody listens"}])
    memory.search("listens", user_id="u1")
    assert built == [] and not is_listened(Event)
    embedder_only = Recorder(EmbedderStartedEvent)
    with register_event_listeners([embedder_only]):
        memory.add_memory("no facade event is built for this listener", user_id="u1")
        assert not is_listened(AgentMemoryStartedEvent, AgentMemoryCompletedEvent)
    assert len(built) == 1 and embedder_only.names() == ["embedder.started"]  # only the embedder's pair


def test_registration_and_listeners_check_their_arguments() -> None:
    with pytest.raises(ArgumentTypeError), register_event_listeners(Recorder()):  # type: ignore[arg-type]
        pass
    with pytest.raises(ArgumentTypeError), register_event_listeners([print]):  # type: ignore[list-item]
        pass
    with pytest.raises(ArgumentTypeError):
        GenericEventListener(dict, print)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError):
        GenericEventListener(Event, "not callable")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError):
        emit_event({"event_name": "x"})  # type: ignore[arg-type]
    assert active_event_listeners() == []


def test_events_are_frozen_and_refuse_unknown_fields() -> None:
    event = ApiOperationStartedEvent(
        component="app", event_name="app.x.started", api_class="App", concrete_class="App", method="x"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.method = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Event(component="app", event_name="x", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Event("app", "x")  # type: ignore[misc]  # keyword-only
    assert event.timestamp.endswith("+00:00") and event.operation_kind is OperationKind.UNKNOWN


# --- embedders and background work -----------------------------------------------------------------


def test_an_embedder_call_emits_its_model_counts_and_dimension_and_masks_texts_and_vectors() -> None:
    recorder = Recorder(EmbedderStartedEvent, EmbedderCompletedEvent)
    embedder = HashingEmbedder(16)
    with register_event_listeners([recorder]):
        vectors = embedder.embed([SECRET, "two"], is_query=True)
    started, completed = recorder.events
    assert isinstance(started, EmbedderStartedEvent) and isinstance(completed, EmbedderCompletedEvent)
    assert (started.event_name, completed.event_name) == ("embedder.started", "embedder.completed")
    assert (started.model, started.input_count, started.text_lengths, started.is_query) == (
        "hashing-v1-16", 2, [len(SECRET), 3], True
    )
    assert (completed.vector_count, completed.embedding_dimension, completed.success) == (2, 16, True)
    assert completed.started_event_id == started.event_id
    assert started.input == [SECRET, "two"] and completed.embedding_vector == vectors
    assert started.model_dump()["input"] == completed.model_dump()["embedding_vector"] == REDACTED
    assert "Saffron" not in started.model_dump_json()
    assert started.model_dump(mask_sensitive_information=False)["input"] == [SECRET, "two"]


def test_a_failed_embedder_call_completes_unsuccessfully() -> None:
    recorder = Recorder(EmbedderCompletedEvent)
    with register_event_listeners([recorder]), pytest.raises(ArgumentTypeError):
        HashingEmbedder().embed("one string")
    (completed,) = recorder.events
    assert isinstance(completed, EmbedderCompletedEvent)
    assert (completed.success, completed.error_type, completed.vector_count) == (False, "ArgumentTypeError", None)


def test_background_extraction_emits_to_the_listeners_registered_when_its_job_was_queued(
    root_client: Callable[..., AgentMemory],
) -> None:
    release = threading.Event()

    def extract(request: ExtractionRequest) -> list[ExtractedMemory]:
        release.wait(10)
        return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}") for m in request.target_messages]

    memory = root_client(
        extractor=ScriptedExtractor(extract),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.BACKGROUND, enable_context_summary=False
        ),
    )
    thread = memory.create_thread(user_id="u1")
    recorder = Recorder(EmbedderStartedEvent)
    with register_event_listeners([recorder]):
        thread.add_messages([{"role": "user", "content": "I live in Rome."}])
    appended = len(recorder.events)  # the message's own vector, in the caller's thread
    release.set()  # the job runs now, after the registration ended
    memory.wait_for_memory_extraction(timeout=10)
    assert [m.content for m in memory.list_memories(user_id="u1")] == ["Fact: I live in Rome."]
    assert appended >= 1 and len(recorder.events) > appended
    assert set(recorder.threads[appended:]) == {"palimpsest-extract"}
    heard = len(recorder.events)
    thread.add_messages([{"role": "user", "content": "Nobody listens to this one."}])  # same thread, same runner
    memory.wait_for_memory_extraction(timeout=10)
    assert len(memory.list_memories(user_id="u1")) == 2
    assert len(recorder.events) == heard  # a job queued with no listener registered reports to none


def test_the_decorator_wraps_inherited_methods_once_and_rewraps_them_for_another_component() -> None:
    class Base:
        def get_things(self) -> list[int]:
            return [1, 2]

        @property
        def size(self) -> int:
            return 2

    @observability.observed_operations("agent_memory")
    class Client(Base):
        def delete_thing(self, thing_id: str) -> int:
            return 1

    @observability.observed_operations("agent_memory")
    class Again(Client):
        pass

    @observability.observed_operations("thread")
    class Handle(Client):
        thread_id = "t"
        user_id = agent_id = None

    heard: list[str] = []
    with register_event_listeners([GenericEventListener(ApiOperationStartedEvent, lambda e: heard.append(e.event_name))]):
        assert Client().get_things() == [1, 2] and Client().delete_thing("x") == 1 and Client().size == 2
        Again().get_things()
        Handle().get_things()
    assert heard == [
        "agent_memory.get_things.started",
        "agent_memory.delete_thing.started",
        "agent_memory.get_things.started",  # once, though two classes of its line are decorated
        "thread.get_things.started",
    ]
    assert Base().get_things() == [1, 2] and "get_things" not in vars(Again)
