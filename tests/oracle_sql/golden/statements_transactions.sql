-- ===== store: default =====
-- uow.savepoint
SAVEPOINT PALIMPSEST_W1

-- uow.rollback_to_savepoint
ROLLBACK TO SAVEPOINT PALIMPSEST_W2

-- ===== store: acme =====
-- uow.savepoint
SAVEPOINT PALIMPSEST_W1

-- uow.rollback_to_savepoint
ROLLBACK TO SAVEPOINT PALIMPSEST_W2

