"""The server processes' factory (``palimpsest.adapters.http.serve``): the settings each process
reads from its environment, the client it opens, and that client closed when the server stops."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.http.serve import ServeSettings, app_from_environment, serving_app
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import ConfigurationError, StoreClosedError


def _store(tmp_path: Path) -> str:
    path = str(tmp_path / "memory.db")
    open_memory(path, embedder=HashingEmbedder()).close()
    return path


def test_the_settings_go_through_the_environment_unchanged() -> None:
    settings = ServeSettings(
        store="postgresql://u@h/db", memory_store_id="acme", embedder="hashing", extraction="inline",
        extractor="openai", max_body_bytes=2048,
    )
    assert ServeSettings.from_environment(settings.to_environment()) == settings
    assert ServeSettings.from_environment({"PALIMPSEST_SERVE_STORE": "m.db"}) == ServeSettings(store="m.db")


@pytest.mark.parametrize(
    "environment",
    [
        {},
        {"PALIMPSEST_SERVE_STORE": "m.db", "PALIMPSEST_SERVE_EXTRACTION": "elsewhere"},
        {"PALIMPSEST_SERVE_STORE": "m.db", "PALIMPSEST_SERVE_EXTRACTOR": "magic"},
        {"PALIMPSEST_SERVE_STORE": "m.db", "PALIMPSEST_SERVE_MAX_BODY_BYTES": "lots"},
        {"PALIMPSEST_SERVE_STORE": "m.db", "PALIMPSEST_SERVE_MAX_BODY_BYTES": "0"},
    ],
)
def test_missing_or_bad_settings_are_configuration_errors(environment: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        ServeSettings.from_environment(environment)


def test_a_server_opens_no_store_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        ServeSettings(store=str(tmp_path / "missing.db")).open_client()
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(ConfigurationError, match="in memory"):
        ServeSettings(store=":memory:").open_client()


def test_by_default_a_server_records_extraction_jobs_for_the_workers_and_runs_none(tmp_path: Path) -> None:
    path = _store(tmp_path)
    memory = ServeSettings(store=path).open_client()
    try:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "I live in Oslo and I love sourdough bread."}])
        assert len(memory.pending_extractions()) == 1  # recorded with the messages, left to the workers
        assert memory.list_memories(user_id="u1") == []
    finally:
        memory.close()


def test_inline_extraction_runs_in_the_server_process(tmp_path: Path) -> None:
    path = _store(tmp_path)
    memory = ServeSettings(store=path, extraction="inline").open_client()
    try:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "I live in Oslo and I love sourdough bread."}])
        memory.wait_for_memory_extraction(timeout=60)
        assert memory.pending_extractions() == [] and memory.list_memories(user_id="u1") != []
    finally:
        memory.close()


def test_the_process_s_client_is_closed_when_the_server_shuts_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path)
    with open_memory(path, embedder=HashingEmbedder()) as admin:
        key = admin.admin.api_keys.create("u1", scope="write").key
    for name, value in ServeSettings(store=path, max_body_bytes=4096).to_environment().items():
        monkeypatch.setenv(name, value)
    opened: list[AgentMemory] = []
    open_client = ServeSettings.open_client

    def recorded(settings: ServeSettings) -> AgentMemory:
        opened.append(open_client(settings))
        return opened[-1]

    monkeypatch.setattr(ServeSettings, "open_client", recorded)
    app = app_from_environment()
    with TestClient(app) as client:  # its lifespan: started, then shut down
        added = client.post("/v1/memories", json={"content": "Prefers tea."}, headers={"Authorization": f"Bearer {key}"})
        assert added.status_code == 201
        assert client.post("/v1/memories", content=b"x" * 5000).status_code == 413  # the limit it was given
    assert len(opened) == 1
    with pytest.raises(StoreClosedError):
        opened[0].list_memories(user_id="u1")


def test_serving_app_closes_the_client_it_was_given(tmp_path: Path) -> None:
    memory = open_memory(_store(tmp_path), embedder=HashingEmbedder())
    with TestClient(serving_app(memory)) as client:
        assert client.get("/health").status_code == 200
    with pytest.raises(StoreClosedError):
        memory.list_memories(user_id="u1")
