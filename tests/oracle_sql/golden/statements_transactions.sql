-- ===== store: default =====
-- uow.savepoint
SAVEPOINT PALIMPSEST_W1

-- uow.rollback_to_savepoint
ROLLBACK TO SAVEPOINT PALIMPSEST_W2

-- uow.read_only
SET TRANSACTION READ ONLY

-- ===== store: acme =====
-- uow.savepoint
SAVEPOINT PALIMPSEST_W1

-- uow.rollback_to_savepoint
ROLLBACK TO SAVEPOINT PALIMPSEST_W2

-- uow.read_only
SET TRANSACTION READ ONLY

