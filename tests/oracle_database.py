"""Where the Oracle-backed tests find a database: ``ORACLE_DSN``, else a Docker engine, else a skip.

* ``ORACLE_DSN`` (``host:port/service``, or ``user/password@host:port/service``) with
  ``ORACLE_USER`` / ``ORACLE_PASSWORD`` (both default to ``palimpsest``, as in docker-compose.yml);
* otherwise, when a Docker engine answers within half a second, an Oracle Free container started
  once per test session with testcontainers (``PALIMPSEST_ORACLE_IMAGE`` overrides the image);
* otherwise every Oracle-backed test is skipped with one reason, at once.

Nothing here runs at import or collection time: the container is only built when an Oracle
test actually asks for a database (the testcontainers constructor itself raises without an engine).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

DEFAULT_IMAGE = "gvenzl/oracle-free:23-slim"
SKIP_REASON = (
    "Oracle-backed tests need a database: set ORACLE_DSN (and ORACLE_USER/ORACLE_PASSWORD), or run a "
    "Docker engine; see adapters/oracle/README.md"
)


@dataclass(frozen=True)
class OracleTarget:
    user: str
    password: str
    dsn: str

    def create_pool(self) -> Any:
        import oracledb

        return oracledb.create_pool(user=self.user, password=self.password, dsn=self.dsn, min=1, max=8, increment=1)


def target_from_environment() -> OracleTarget | None:
    dsn = os.environ.get("ORACLE_DSN", "").strip()
    if not dsn:
        return None
    user = os.environ.get("ORACLE_USER", "palimpsest")
    password = os.environ.get("ORACLE_PASSWORD", "palimpsest")
    if "@" in dsn:  # user/password@host:port/service
        credentials, dsn = dsn.rsplit("@", 1)
        if "/" in credentials:
            user, password = credentials.split("/", 1)
        else:
            user = credentials
    return OracleTarget(user=user, password=password, dsn=dsn)


def docker_engine_answers(timeout: float = 0.5) -> bool:
    """Whether a Docker engine answers ``/_ping`` quickly (unix socket or tcp ``DOCKER_HOST``)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    parsed = urlparse(host)
    try:
        if parsed.scheme == "unix":
            if not os.path.exists(parsed.path):
                return False
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(parsed.path)
        elif parsed.scheme in ("tcp", "http"):
            sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 2375), timeout=timeout)
            sock.settimeout(timeout)
        else:
            return False
        with sock:
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b"OK" in sock.recv(1024)
    except OSError:
        return False


def container_target() -> Iterator[OracleTarget]:
    """Start an Oracle Free container for the session and yield its connection target."""
    from testcontainers.community.oracle import OracleDbContainer

    image = os.environ.get("PALIMPSEST_ORACLE_IMAGE", DEFAULT_IMAGE)
    container = OracleDbContainer(image, username="palimpsest", password="palimpsest")
    with container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(1521)
        yield OracleTarget(user="palimpsest", password="palimpsest", dsn=f"{host}:{port}/FREEPDB1")
