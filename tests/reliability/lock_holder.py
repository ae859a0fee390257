"""Reliability helper, run as a child process: holds an embedded store's write lock until told to stop.

    python lock_holder.py STORE_PATH

Opens a write transaction (``BEGIN IMMEDIATE``) with an uncommitted change in it, as a long import
in another process would, prints ``HELD`` once the lock is taken, waits for a line on standard
input, then rolls back and prints ``RELEASED``.
"""

from __future__ import annotations

import sqlite3
import sys


def main(path: str) -> None:
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
