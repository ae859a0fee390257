"""serve http: the console script serves the HTTP API over a store file; a key made with
'keys create' reads that user's memories through it."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import Invoke, Seeded
from .test_console_script import _environment, _script

pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str, key: str | None = None) -> tuple[int, object]:
    request = urllib.request.Request(url)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def test_serve_http_answers_with_the_stores_memories(invoke: Invoke, seeded: Seeded) -> None:
    made = invoke("--store", seeded.store, "keys", "create", "--user", "u1", "--scope", "read")
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [_script(), "--store", seeded.store, "serve", "http", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if _get(base + "/health") == (200, {"status": "ok"}):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        status, body = _get(f"{base}/v1/memories/{seeded.thin}", key)
        assert status == 200 and isinstance(body, dict) and body["user_id"] == "u1"
        assert _get(f"{base}/v1/memories/{seeded.thin}")[0] == 401
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


def test_serve_http_refuses_a_missing_store_and_a_bad_worker_count(invoke: Invoke, seeded: Seeded, tmp_path: Path) -> None:
    missing = invoke("--store", str(tmp_path / "missing.db"), "serve", "http", "--workers", "2")
    assert missing.exit_code == 1 and "no store file at" in missing.stderr
    assert not (tmp_path / "missing.db").exists()  # a server creates no store
    result = invoke("--store", seeded.store, "serve", "http", "--workers", "0")
    assert result.exit_code == 2 and "--workers" in result.output
