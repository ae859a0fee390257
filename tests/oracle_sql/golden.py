"""Golden files for rendered SQL: any change to a statement shows up as a reviewed diff.

``assert_golden("records", text)`` compares ``text`` with ``golden/records.sql``. Run the tests
with ``PALIMPSEST_UPDATE_GOLDEN=1`` to (re)write the files after an intended change, then review
the diff before committing.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN_DIR / f"{name}.sql"
    if os.environ.get("PALIMPSEST_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path.name}; run with PALIMPSEST_UPDATE_GOLDEN=1 and review it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"rendered SQL differs from golden/{path.name}; review, then update with PALIMPSEST_UPDATE_GOLDEN=1"
