"""Adapters layer: the SQL-store kit (decision D31), what every SQL store shares.

- :mod:`.dialect`: :class:`Dialect`, what one database does its own way (placeholders, upserts,
  times, JSON, vectors, savepoints, the driver-error map, logical :class:`Key` names);
- :mod:`.codec`: :class:`RowCodec`, one row codec per entity;
- :mod:`.statements`: :class:`Statements`, the builders of the SQL text a store runs;
- :mod:`.standard`: ``StandardStatements``, those builders in standard SQL (a store subclasses
  it and overrides what its database writes otherwise);
- :mod:`.repositories`: the seven repositories, written once over a DB-API connection;
- :mod:`.checkpoints`: the checkpoint repository of a unit of work (D41), written once too;
- :mod:`.unit_of_work`: :class:`SqlUnitOfWork`, one transaction's lifecycle;
- :mod:`.store`: ``SqlStore``, what a store object shares (dimension, ``with``, ``repr``, closing);
- :mod:`.dialects`: the SQLite and PostgreSQL dialects.

Store adapters import the kit; the kit imports no store adapter.
"""

from .codec import RowCodec
from .dialect import Dialect, Key, Statement
from .statements import Keyset, Sql, Statements
from .unit_of_work import SqlUnitOfWork

__all__ = ["Dialect", "Key", "Keyset", "RowCodec", "Sql", "SqlUnitOfWork", "Statement", "Statements"]
