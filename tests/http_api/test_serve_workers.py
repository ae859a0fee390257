"""``palimpsest serve http --workers 2``: two server processes, each with its own client, on one
embedded file and on one PostgreSQL store. Every request is answered, each user sees only its
own records whichever process answers, SIGTERM stops the server with exit code 0, and every
write it acknowledged is in the store when it is opened again."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from .serving import BOUND, Server, environment, fresh_connections, make_store, open_store, script

pytest.importorskip("uvicorn")

USERS = ("u1", "u2")
WRITES = 12  # per user and client thread
THREADS = 4  # client threads per user


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from make_store(request, tmp_path)


def _keys(location: str) -> dict[str, str]:
    with open_store(location) as memory:
        return {user: memory.admin.api_keys.create(user, scope="write").key for user in USERS}


def _add(client: httpx.Client, key: str, content: str) -> str:
    answer = client.post("/v1/memories", json={"content": content}, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 201, answer.text
    memory_id: str = answer.json()["id"]
    return memory_id


def _opened_by(pid: int, path: str) -> bool:
    """Whether process ``pid`` has the file at ``path`` open."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.path.realpath(fd) == os.path.realpath(path) for fd in fds.iterdir())
    except OSError:
        return False


def test_two_server_processes_answer_every_request_and_lose_no_acknowledged_write(store: str) -> None:
    keys = _keys(store)
    server = Server(store, "--workers", "2")
    try:
        if "://" not in store:  # each worker process opens the store file itself (one may still be starting)
            deadline = time.monotonic() + BOUND
            while sum(_opened_by(pid, store) for pid in server.children()) != 2:
                assert time.monotonic() < deadline, "two server processes did not open the store"
                time.sleep(0.1)
        jobs = [
            (user, f"{user} note {t}-{i} {uuid.uuid4().hex[:6]}")
            for user in USERS
            for t in range(THREADS)
            for i in range(WRITES)
        ]
        with ThreadPoolExecutor(max_workers=2 * THREADS) as pool, fresh_connections(server.base) as client:
            ids = list(pool.map(lambda job: _add(client, keys[job[0]], job[1]), jobs))
        written = dict(zip(ids, jobs, strict=True))
        assert len(written) == len(jobs)

        with fresh_connections(server.base) as client:
            for memory_id, (user, content) in written.items():  # each read may be answered by either process
                other = keys["u2" if user == "u1" else "u1"]
                mine = client.get(f"/v1/memories/{memory_id}", headers={"Authorization": f"Bearer {keys[user]}"})
                assert mine.status_code == 200 and mine.json()["content"] == content
                theirs = client.get(f"/v1/memories/{memory_id}", headers={"Authorization": f"Bearer {other}"})
                assert theirs.status_code == 404
            for user in USERS:
                found = client.post(
                    "/v1/search", json={"query": "note", "max_results": 100}, headers={"Authorization": f"Bearer {keys[user]}"}
                )
                assert found.status_code == 200, found.text
                results = found.json()["results"]
                assert results and {r["record"]["user_id"] for r in results} == {user}
    finally:
        code, err = server.stop()
    assert code == 0, err

    with open_store(store) as memory:
        for memory_id, (user, content) in written.items():
            record = memory.admin.get_record(memory_id)
            assert (record.content, record.user_id) == (content, user)


def test_messages_appended_over_http_are_extracted_by_a_worker_beside_the_server(tmp_path: Path) -> None:
    location = str(tmp_path / "memory.db")
    open_store(location).close()
    keys = _keys(location)
    server = Server(location, "--workers", "2")  # extraction left to workers: the default
    try:
        with fresh_connections(server.base) as client:
            def call(user: str, method: str, path: str, body: object = None) -> httpx.Response:
                return client.request(method, path, json=body, headers={"Authorization": f"Bearer {keys[user]}"})

            assert call("u1", "POST", "/v1/threads", {"thread_id": "t-u1"}).status_code == 201
            assert call("u2", "POST", "/v1/threads", {"thread_id": "t-u2"}).status_code == 201
            appended = call(
                "u1", "POST", "/v1/threads/t-u1/messages",
                {"messages": [{"role": "user", "content": "I live in Oslo and I love sourdough bread."}]},
            )
            assert appended.status_code == 201, appended.text
            assert call("u1", "GET", "/v1/memories").json()["items"] == []  # the server extracts nothing itself

            worker = subprocess.run(
                [script(), "--store", location, "worker", "--drain", "--poll", "0.05"],
                capture_output=True, text=True, timeout=BOUND, env=environment(),
            )
            assert worker.returncode == 0, worker.stderr
            assert "1 job(s) done, 0 failed" in worker.stderr

            extracted = call("u1", "GET", "/v1/memories").json()["items"]
            assert extracted and {m["user_id"] for m in extracted} == {"u1"}
            assert any("Oslo" in m["content"] for m in extracted)
            assert call("u2", "GET", "/v1/memories").json()["items"] == []
    finally:
        code, err = server.stop()
    assert code == 0, err


@pytest.mark.slow  # the embedded store waits out its 30 s busy budget before it gives up
def test_a_write_that_finds_the_file_locked_by_another_process_is_a_503_and_writes_nothing(tmp_path: Path) -> None:
    import sqlite3

    location = str(tmp_path / "memory.db")
    open_store(location).close()
    keys = _keys(location)
    server = Server(location, "--workers", "2")
    holder = sqlite3.connect(location, isolation_level=None, timeout=30)  # as a long import elsewhere would
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE threads SET metadata = NULL")  # pending, never committed
        with httpx.Client(base_url=server.base, timeout=BOUND) as client:
            headers = {"Authorization": f"Bearer {keys['u1']}"}
            busy = client.post("/v1/memories", json={"content": "Prefers tea."}, headers=headers)
            assert busy.status_code == 503, busy.text
            assert busy.json()["error"]["type"] == "StoreBusyError" and int(busy.headers["Retry-After"]) >= 1
            holder.execute("ROLLBACK")
            again = client.post("/v1/memories", json={"content": "Prefers tea."}, headers=headers)
            assert again.status_code == 201, again.text
            listed = client.get("/v1/memories", headers=headers).json()["items"]
            assert [m["id"] for m in listed] == [again.json()["id"]]  # the refused write left nothing
    finally:
        holder.close()
        code, err = server.stop()
    assert code == 0, err
