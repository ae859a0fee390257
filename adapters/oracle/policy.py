"""Adapters layer (Oracle): :class:`SchemaPolicy`, what an Oracle store does with its schema when opened.

An Oracle concept (the embedded store migrates its file itself and has no policy), so it lives
with the Oracle adapter; it imports nothing of the driver, so the command line can name a
policy before python-oracledb is known to be installed.
"""

from __future__ import annotations

import enum

__all__ = ["SchemaPolicy"]


class SchemaPolicy(str, enum.Enum):
    """What a store does with its schema when opened (see :class:`~.schema.SchemaManager`).

    ``NO_CHECK`` sends nothing when the store opens (no validation, no DDL) and builds no vector
    index later: for a session that may not read the dictionary or the registry (Deep Data
    Security runtime users), on a store installed and upgraded by someone else. What is missing
    or out of date then shows as errors of the statements that need it."""

    REQUIRE_EXISTING = "require_existing"
    CREATE_IF_EMPTY = "create_if_empty"
    CREATE_IF_NECESSARY = "create_if_necessary"
    RECREATE = "recreate"
    NO_CHECK = "no_check"
