"""The Oracle row of the backend table drops the stores a test made (the contract suite's clean-up
hook), on one pooled connection, against the fake data dictionary of ``test_schema``."""

from __future__ import annotations

from palimpsest.adapters.backends import BACKENDS
from palimpsest.adapters.oracle.names import REGISTRY_TABLE, StoreNames
from palimpsest.adapters.oracle.schema import SchemaManager

from .fakes import FakeConnection
from .test_schema import FakeOracle


class _Pool:
    """Hands out the fake database's connections and records what comes back."""

    def __init__(self, oracle: FakeOracle) -> None:
        self.oracle = oracle
        self.acquired: list[FakeConnection] = []
        self.released: list[FakeConnection] = []

    def acquire(self) -> FakeConnection:
        self.acquired.append(self.oracle.connection())
        return self.acquired[-1]

    def release(self, connection: FakeConnection) -> None:
        self.released.append(connection)


def test_the_oracle_row_drops_the_named_stores_only_and_gives_its_connection_back() -> None:
    oracle = FakeOracle()
    for store_id in (None, "T1", "T2", "KEEP"):
        manager = SchemaManager(StoreNames(store_id))
        oracle.install(manager, vector_index=True)
        oracle.register(manager.names, dimension=4)
    drop_stores = BACKENDS["oracle"].drop_stores
    assert drop_stores is not None
    pool = _Pool(oracle)
    drop_stores(pool, ["T1", "T2"])
    assert oracle.names_with_prefix("T1_") == oracle.names_with_prefix("T2_") == set()
    assert oracle.names_with_prefix("KEEP_") and "THREAD" in oracle.tables and REGISTRY_TABLE in oracle.tables
    assert set(oracle.registry) == {StoreNames(None).registry_name, StoreNames("KEEP").registry_name}
    assert len(pool.acquired) == 1 and pool.released == pool.acquired
