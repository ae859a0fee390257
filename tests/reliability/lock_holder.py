"""Reliability helper, run as a child process: holds a store's write locks until told to stop.

    python lock_holder.py STORE

``STORE`` is a store spec (``reliability_stores``). An embedded file: a write transaction
(``BEGIN IMMEDIATE``) with an uncommitted change in it, as a long import in another process
would. PostgreSQL, which has no store-wide write lock: a transaction holding the locks writers
take, as a long writer would: its rows changed (threads, messages, records), an appender's lock
on the thread and the keyword totals every keyword write updates. It prints ``HELD`` once the
locks are taken, waits for a line on standard input, then rolls back and prints ``RELEASED``.
"""

from __future__ import annotations

import sqlite3
import sys

from reliability_stores import is_postgres, split


def hold_postgres(spec: str) -> None:
    import psycopg
    from palimpsest.adapters.postgres.schema import schema_name
    from psycopg import sql

    url, store_id = split(spec)
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema_name(store_id))))
        conn.execute("SELECT 1 FROM threads FOR NO KEY UPDATE")
        for table in ("threads", "messages", "records"):  # pending, never committed
            conn.execute(sql.SQL("UPDATE {} SET metadata = NULL").format(sql.Identifier(table)))
        conn.execute("UPDATE keyword_totals SET documents = documents")
        print("HELD", flush=True)
        sys.stdin.readline()
        conn.rollback()
        print("RELEASED", flush=True)


def main(path: str) -> None:
    if is_postgres(path):
        hold_postgres(path)
        return
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE threads SET metadata = NULL")  # pending, never committed
        print("HELD", flush=True)
        sys.stdin.readline()
        conn.execute("ROLLBACK")
        print("RELEASED", flush=True)
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
