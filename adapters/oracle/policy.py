"""Adapters layer (Oracle): :class:`SchemaPolicy`, what an Oracle store does with its schema when opened.

An Oracle concept (the embedded store migrates its file itself and has no policy), so it lives
with the Oracle adapter; it imports nothing of the driver, so the command line can name a
policy before python-oracledb is known to be installed.
"""

from __future__ import annotations

import enum

__all__ = ["SchemaPolicy"]


class SchemaPolicy(str, enum.Enum):
    """What a store does with its schema when opened (see :class:`~.schema.SchemaManager`)."""

    REQUIRE_EXISTING = "require_existing"
    CREATE_IF_EMPTY = "create_if_empty"
    CREATE_IF_NECESSARY = "create_if_necessary"
    RECREATE = "recreate"
