"""Adapters layer (PostgreSQL): one schema per store, versioned migrations, the vector column.

A store lives in its own PostgreSQL schema: ``palimpsest`` for the default store, and
``palimpsest_<id>`` (the ``memory_store_id`` lower-cased) for a named one, so stores of one
database never see each other's rows and a store is dropped with ``DROP SCHEMA ... CASCADE``.

Migrations are Python functions, version ``N`` taking a schema from ``N - 1`` to ``N``; the
versions applied are rows of the schema's ``schema_version`` table. Opening a store takes a
transaction-scoped advisory lock on the schema's name, applies what is missing, and commits:
PostgreSQL's DDL is transactional, so a migration is applied whole or not at all, and two
processes opening one store at once migrate it once. A schema written by a newer palimpsest is
refused with :class:`SchemaVersionError`.

Vectors are pgvector's ``vector``. The column is typed ``vector(n)`` and gets its HNSW cosine
index (``m = 16``, ``ef_construction = 64``: pgvector's defaults) once the store's dimension is
fixed, as the embedded and Oracle stores persist theirs: at creation when the caller names a
dimension, else with the first vector (:func:`fix_dimension`).

Keyword search keeps BM25 term statistics in tables (version 2): ``keyword_documents`` (a
document's length in terms), ``keyword_postings`` (term frequencies), ``keyword_terms``
(document frequencies) and ``keyword_totals`` (document count and total length). Statement
triggers keep the last two in step with the first two, and the deletion of a record or message
(a thread's cascade included) deletes its keyword document, so the statistics hold whoever
writes. Every statistics trigger first locks the one ``keyword_totals`` row, so writers of
keyword documents are serialised there and never deadlock on term rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError
from palimpsest.domain.ports import SchemaState
from psycopg import sql

from .errors import translate

__all__ = [
    "DEFAULT_SCHEMA",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "ensure_vector_extension",
    "fix_dimension",
    "migrate",
    "read_dimension",
    "schema_name",
    "schema_state",
    "use_schema",
]

DEFAULT_SCHEMA: Final = "palimpsest"
MAX_STORE_ID_LENGTH: Final = 40
_STORE_ID: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
HNSW_M: Final = 16
HNSW_EF_CONSTRUCTION: Final = 64
_VECTOR_TABLES: Final = ("records", "messages")


def schema_name(memory_store_id: str | None) -> str:
    """The schema of a store: ``palimpsest`` or ``palimpsest_<id>`` (lower case)."""
    if memory_store_id is None:
        return DEFAULT_SCHEMA
    if (
        not isinstance(memory_store_id, str)
        or not _STORE_ID.fullmatch(memory_store_id)
        or len(memory_store_id) > MAX_STORE_ID_LENGTH
    ):
        raise ConfigurationError(
            f"memory_store_id must be a letter followed by letters, digits or underscores, at most "
            f"{MAX_STORE_ID_LENGTH} characters; got {memory_store_id!r}."
        )
    return f"{DEFAULT_SCHEMA}_{memory_store_id.lower()}"


# --- the vector extension ------------------------------------------------------------------


def _vector_schema(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    return None if row is None else str(row[0])


def ensure_vector_extension(conn: psycopg.Connection[Any]) -> str:
    """The schema pgvector's ``vector`` extension lives in, created first if it is missing and
    this role may create it. Commits. A database without the extension that this role cannot
    create it in (not installed on the server, or no privilege) is a :class:`ConfigurationError`
    that says what to run."""
    with translate():
        found = _vector_schema(conn)
        conn.commit()
    if found is not None:
        return found
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.commit()
    except psycopg.errors.UniqueViolation:  # another session created it at the same moment
        conn.rollback()
    except (
        psycopg.errors.InsufficientPrivilege,
        psycopg.errors.FeatureNotSupported,
        psycopg.errors.UndefinedFile,
    ) as exc:
        conn.rollback()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigurationError(
            "The database lacks pgvector's 'vector' extension and this role cannot create it "
            f"({exc.sqlstate}: {first}). Install pgvector on the server and run "
            "'CREATE EXTENSION vector;' in this database as its owner or a superuser."
        ) from exc
    except psycopg.Error as exc:
        conn.rollback()
        with translate():
            raise exc
    with translate():
        found = _vector_schema(conn)
        conn.commit()
    if found is None:  # pragma: no cover - CREATE EXTENSION succeeded, so it is there
        raise ConfigurationError("The 'vector' extension could not be found after it was created.")
    return found


def use_schema(conn: psycopg.Connection[Any], schema: str, vector_schema: str) -> None:
    """Point the current transaction's ``search_path`` at the store's schema, then the
    extension's (``SET LOCAL``: a pooled connection keeps nothing of it)."""
    conn.execute(
        sql.SQL("SET LOCAL search_path TO {}, {}").format(sql.Identifier(schema), sql.Identifier(vector_schema))
    )


# --- migrations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Migration:
    """Version ``version`` of the schema: ``apply`` runs its statements on a connection whose
    ``search_path`` is the store's schema, inside the migration's transaction."""

    version: int
    name: str
    apply: Callable[[psycopg.Connection[Any]], None]


def _vector_type(dimension: int | None) -> str:
    return "vector" if dimension is None else f"vector({int(dimension)})"


def _v1_tables(conn: psycopg.Connection[Any]) -> None:
    """The entities, as the embedded store's tables (same columns and meaning), in Postgres
    types. Ids compare as code points (``COLLATE "C"``), as Python and SQLite compare them.
    The vector columns are untyped until the dimension is fixed (:func:`fix_dimension`)."""
    vector = _vector_type(None)
    for statement in (
        'CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)',
        """CREATE TABLE threads (
            id          text COLLATE "C" PRIMARY KEY,
            user_id     text COLLATE "C",
            agent_id    text COLLATE "C",
            metadata    jsonb,
            config      jsonb NOT NULL DEFAULT '{}',
            state       jsonb NOT NULL DEFAULT '{}',
            created_at  timestamptz NOT NULL,
            updated_at  timestamptz NOT NULL
        )""",
        "CREATE INDEX threads_created ON threads (created_at, id)",
        "CREATE INDEX threads_user ON threads (user_id, created_at)",
        "CREATE INDEX threads_agent ON threads (agent_id)",
        f"""CREATE TABLE messages (
            id          text COLLATE "C" PRIMARY KEY,
            thread_id   text COLLATE "C" NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
            seq         bigint NOT NULL,
            role        text NOT NULL,
            content     text NOT NULL,
            timestamp   timestamptz,
            metadata    jsonb,
            user_id     text COLLATE "C",
            agent_id    text COLLATE "C",
            created_at  timestamptz NOT NULL,
            expires_at  timestamptz,
            embedding   {vector},
            CONSTRAINT messages_thread_id_seq_key UNIQUE (thread_id, seq)
        )""",
        "CREATE INDEX messages_user ON messages (user_id)",
        "CREATE INDEX messages_expiry ON messages (expires_at) WHERE expires_at IS NOT NULL",
        "CREATE INDEX messages_metadata ON messages USING gin (metadata jsonb_path_ops)",
        f"""CREATE TABLE records (
            id                   text COLLATE "C" PRIMARY KEY,
            record_type          text NOT NULL,
            content              text NOT NULL,
            user_id              text COLLATE "C",
            agent_id             text COLLATE "C",
            thread_id            text COLLATE "C" REFERENCES threads (id) ON DELETE CASCADE,
            metadata             jsonb,
            status               text NOT NULL DEFAULT 'valid',
            invalidation_reason  text,
            invalidated_at       timestamptz,
            timestamp            timestamptz,
            expires_at           timestamptz,
            created_at           timestamptz NOT NULL,
            updated_at           timestamptz NOT NULL,
            embedding            {vector}
        )""",
        "CREATE INDEX records_created ON records (created_at, id)",
        "CREATE INDEX records_user ON records (user_id, created_at)",
        "CREATE INDEX records_agent ON records (agent_id)",
        "CREATE INDEX records_thread ON records (thread_id)",
        "CREATE INDEX records_expiry ON records (expires_at, id) WHERE expires_at IS NOT NULL",
        "CREATE INDEX records_metadata ON records USING gin (metadata jsonb_path_ops)",
        """CREATE TABLE links (
            id                      text COLLATE "C" PRIMARY KEY,
            source_id               text COLLATE "C" NOT NULL REFERENCES records (id) ON DELETE CASCADE,
            source_type             text NOT NULL,
            target_id               text COLLATE "C" NOT NULL REFERENCES records (id) ON DELETE CASCADE,
            target_type             text NOT NULL,
            relation_type           text NOT NULL,
            opposite_relation_type  text NOT NULL,
            metadata                jsonb,
            timestamp               timestamptz,
            created_at              timestamptz NOT NULL,
            CONSTRAINT links_unique_edge UNIQUE (source_id, target_id, relation_type),
            CONSTRAINT links_no_self_link CHECK (source_id <> target_id)
        )""",
        "CREATE INDEX links_source ON links (source_id)",
        "CREATE INDEX links_target ON links (target_id)",
        "CREATE INDEX links_created ON links (created_at, id)",
        """CREATE TABLE summaries (
            id                   text COLLATE "C" PRIMARY KEY,
            thread_id            text COLLATE "C" NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
            revision             integer NOT NULL,
            text                 text NOT NULL,
            topics               jsonb NOT NULL DEFAULT '[]',
            covered_through_seq  bigint NOT NULL DEFAULT 0,
            status               text NOT NULL DEFAULT 'valid',
            user_id              text COLLATE "C",
            agent_id             text COLLATE "C",
            metadata             jsonb,
            created_at           timestamptz NOT NULL,
            CONSTRAINT summaries_unique_revision UNIQUE (thread_id, revision)
        )""",
        'CREATE TABLE settings (key text COLLATE "C" PRIMARY KEY, value jsonb NOT NULL)',
        """CREATE TABLE extraction_jobs (
            id             text COLLATE "C" PRIMARY KEY,
            thread_id      text COLLATE "C" NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
            first_seq      bigint NOT NULL,
            last_seq       bigint NOT NULL,
            created_at     timestamptz NOT NULL,
            attempts       integer NOT NULL DEFAULT 0,
            claimed_by     text,
            claimed_until  timestamptz,
            failed_at      timestamptz,
            failure_reason text
        )""",
        "CREATE INDEX extraction_jobs_thread ON extraction_jobs (thread_id)",
        "CREATE INDEX extraction_jobs_pending ON extraction_jobs (created_at, id) WHERE failed_at IS NULL",
        "CREATE INDEX extraction_jobs_failed ON extraction_jobs (failed_at, id) WHERE failed_at IS NOT NULL",
    ):
        conn.execute(statement)


def _v2_keyword_statistics(conn: psycopg.Connection[Any]) -> None:
    """BM25 term statistics in tables, kept in step by statement triggers (see the module)."""
    for statement in (
        """CREATE TABLE keyword_documents (
            is_message  boolean NOT NULL,
            id          text COLLATE "C" NOT NULL,
            length      integer NOT NULL CHECK (length >= 0),
            PRIMARY KEY (is_message, id)
        )""",
        """CREATE TABLE keyword_postings (
            term        text COLLATE "C" NOT NULL,
            is_message  boolean NOT NULL,
            id          text COLLATE "C" NOT NULL,
            frequency   integer NOT NULL CHECK (frequency > 0),
            length      integer NOT NULL,
            PRIMARY KEY (term, is_message, id),
            FOREIGN KEY (is_message, id) REFERENCES keyword_documents ON DELETE CASCADE
        )""",
        "CREATE INDEX keyword_postings_document ON keyword_postings (is_message, id)",
        'CREATE TABLE keyword_terms (term text COLLATE "C" PRIMARY KEY, documents bigint NOT NULL)',
        """CREATE TABLE keyword_totals (
            only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            documents     bigint NOT NULL DEFAULT 0,
            total_length  bigint NOT NULL DEFAULT 0
        )""",
        "INSERT INTO keyword_totals DEFAULT VALUES",
        # SET search_path FROM CURRENT: the functions find this schema's tables whatever the
        # search_path of the session whose write fires them.
        """CREATE FUNCTION keyword_documents_added() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               UPDATE keyword_totals
                  SET documents = documents + d.n, total_length = total_length + d.l
                 FROM (SELECT count(*) AS n, coalesce(sum(length), 0) AS l FROM added) d;
               RETURN NULL;
           END $$""",
        """CREATE FUNCTION keyword_documents_removed() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               UPDATE keyword_totals
                  SET documents = documents - d.n, total_length = total_length - d.l
                 FROM (SELECT count(*) AS n, coalesce(sum(length), 0) AS l FROM removed) d;
               RETURN NULL;
           END $$""",
        """CREATE FUNCTION keyword_postings_added() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               PERFORM 1 FROM keyword_totals FOR UPDATE;
               INSERT INTO keyword_terms AS t (term, documents)
               SELECT term, count(*) FROM added GROUP BY term ORDER BY term
               ON CONFLICT (term) DO UPDATE SET documents = t.documents + excluded.documents;
               RETURN NULL;
           END $$""",
        """CREATE FUNCTION keyword_postings_removed() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               PERFORM 1 FROM keyword_totals FOR UPDATE;
               UPDATE keyword_terms t SET documents = t.documents - r.n
                 FROM (SELECT term, count(*) AS n FROM removed GROUP BY term) r
                WHERE t.term = r.term;
               DELETE FROM keyword_terms
                WHERE documents <= 0 AND term IN (SELECT term FROM removed);
               RETURN NULL;
           END $$""",
        """CREATE FUNCTION keyword_records_removed() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               DELETE FROM keyword_documents
                WHERE NOT is_message AND id IN (SELECT id FROM removed);
               RETURN NULL;
           END $$""",
        """CREATE FUNCTION keyword_messages_removed() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           BEGIN
               DELETE FROM keyword_documents
                WHERE is_message AND id IN (SELECT id FROM removed);
               RETURN NULL;
           END $$""",
        """CREATE TRIGGER keyword_documents_ai AFTER INSERT ON keyword_documents
           REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION keyword_documents_added()""",
        """CREATE TRIGGER keyword_documents_ad AFTER DELETE ON keyword_documents
           REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION keyword_documents_removed()""",
        """CREATE TRIGGER keyword_postings_ai AFTER INSERT ON keyword_postings
           REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION keyword_postings_added()""",
        """CREATE TRIGGER keyword_postings_ad AFTER DELETE ON keyword_postings
           REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION keyword_postings_removed()""",
        """CREATE TRIGGER records_keyword_ad AFTER DELETE ON records
           REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION keyword_records_removed()""",
        """CREATE TRIGGER messages_keyword_ad AFTER DELETE ON messages
           REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION keyword_messages_removed()""",
    ):
        conn.execute(statement)


def _v3_images(conn: psycopg.Connection[Any]) -> None:
    """Images: an image is a record row of type ``image`` (its content is the description);
    this table keeps its MIME type and bytes under the record's id, and for a message-attached
    image its message and place among the message's content parts. A row goes with its record."""
    for statement in (
        """CREATE TABLE images (
            record_id   text COLLATE "C" PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
            mime_type   text NOT NULL,
            data        bytea NOT NULL,
            message_id  text COLLATE "C",
            position    integer
        )""",
        "CREATE INDEX images_message ON images (message_id, position) WHERE message_id IS NOT NULL",
    ):
        conn.execute(statement)


def _v4_checkpoints(conn: psycopg.Connection[Any]) -> None:
    """Graph checkpoints (D41), as the embedded store's migration 9: opaque values with their
    type tag; ids compare as code points. The primary keys serve the newest checkpoint of a
    thread and namespace and the deletes by thread; ``checkpoints_run`` the deletes by run;
    ``checkpoints_metadata`` the listing's metadata containment."""
    for statement in (
        """CREATE TABLE checkpoints (
            thread_id             text COLLATE "C" NOT NULL,
            checkpoint_ns         text COLLATE "C" NOT NULL,
            checkpoint_id         text COLLATE "C" NOT NULL,
            parent_checkpoint_id  text COLLATE "C",
            run_id                text COLLATE "C",
            type_tag              text NOT NULL,
            data                  bytea NOT NULL,
            metadata              jsonb NOT NULL,
            channel_versions      jsonb NOT NULL,
            created_at            timestamptz NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        )""",
        "CREATE INDEX checkpoints_run ON checkpoints (run_id) WHERE run_id IS NOT NULL",
        "CREATE INDEX checkpoints_metadata ON checkpoints USING gin (metadata jsonb_path_ops)",
        """CREATE TABLE checkpoint_blobs (
            thread_id      text COLLATE "C" NOT NULL,
            checkpoint_ns  text COLLATE "C" NOT NULL,
            channel        text COLLATE "C" NOT NULL,
            version        text COLLATE "C" NOT NULL,
            type_tag       text NOT NULL,
            data           bytea NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
        )""",
        """CREATE TABLE checkpoint_writes (
            thread_id      text COLLATE "C" NOT NULL,
            checkpoint_ns  text COLLATE "C" NOT NULL,
            checkpoint_id  text COLLATE "C" NOT NULL,
            task_id        text COLLATE "C" NOT NULL,
            idx            integer NOT NULL,
            task_path      text COLLATE "C" NOT NULL,
            channel        text COLLATE "C" NOT NULL,
            type_tag       text NOT NULL,
            data           bytea NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        )""",
    ):
        conn.execute(statement)


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, "entities", _v1_tables),
    Migration(2, "keyword_statistics", _v2_keyword_statistics),
    Migration(3, "images", _v3_images),
    Migration(4, "checkpoints", _v4_checkpoints),
)
LATEST_VERSION: Final = MIGRATIONS[-1].version


def _create_vector_indexes(conn: psycopg.Connection[Any]) -> None:
    for table in _VECTOR_TABLES:
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = {}, ef_construction = {})"
            ).format(
                sql.Identifier(f"{table}_embedding_hnsw"),
                sql.Identifier(table),
                sql.Literal(HNSW_M),
                sql.Literal(HNSW_EF_CONSTRUCTION),
            )
        )


def _schema_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


def _table_exists(conn: psycopg.Connection[Any], schema: str, table: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (schema, table)
        ).fetchone()
        is not None
    )


def _recorded_version(conn: psycopg.Connection[Any], schema: str) -> int | None:
    if not _schema_exists(conn, schema) or not _table_exists(conn, schema, "schema_version"):
        return None
    row = conn.execute(
        sql.SQL("SELECT max(version) FROM {}.schema_version").format(sql.Identifier(schema))
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def schema_state(conn: psycopg.Connection[Any], schema: str) -> SchemaState:
    """The schema's recorded version (``None`` for a store never created) and the newest this
    library knows, read without writing (the transaction is rolled back)."""
    try:
        with translate():
            return SchemaState(version=_recorded_version(conn, schema), latest=LATEST_VERSION)
    finally:
        conn.rollback()


def read_dimension(conn: psycopg.Connection[Any]) -> int | None:
    """The store's fixed vector dimension (``None`` until the first vector); the transaction's
    ``search_path`` must be the store's (:func:`use_schema`)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()
    return None if row is None else int(row[0])


def _write_dimension(conn: psycopg.Connection[Any], dimension: int) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('dimension', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(dimension),),
    )


def fix_dimension(conn: psycopg.Connection[Any], dimension: int) -> None:
    """Type the vector columns ``vector(dimension)``, build their HNSW indexes and persist the
    dimension, in the caller's transaction (``search_path`` at the store's schema). A store
    whose dimension is already fixed to another is a :class:`ConfigurationError`."""
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise ConfigurationError(f"a vector dimension must be a positive integer, got {dimension!r}.")
    stored = read_dimension(conn)
    if stored is not None:
        if stored != dimension:
            raise ConfigurationError(
                f"This store holds {stored}-dimensional vectors; it cannot be opened with dimension={dimension}."
            )
        return
    for table in _VECTOR_TABLES:
        conn.execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE {}").format(
                sql.Identifier(table), sql.SQL(_vector_type(dimension))
            )
        )
    _create_vector_indexes(conn)
    _write_dimension(conn, dimension)


def _in_recovery(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    return bool(row and row[0])


def _standby_dimension(
    conn: psycopg.Connection[Any], schema: str, vector_schema: str, *, dimension: int | None, target: int
) -> int | None:
    """On a hot standby (read-only, replaying the primary), nothing is created or migrated: the
    store must be there at ``target``, made on the primary; returns its dimension."""
    current = _recorded_version(conn, schema)
    if current is None:
        raise ConfigurationError(
            f"This PostgreSQL server is a read-only standby and has no store in schema {schema}: "
            "create it on the primary (its writes reach the standby by replication)."
        )
    if current != target:
        raise SchemaVersionError(
            f"This store (schema {schema}) has schema version {current}, not {target}, and this server is "
            "a read-only standby: open it on the primary with a palimpsest of the same version."
        )
    use_schema(conn, schema, vector_schema)
    stored = read_dimension(conn)
    if dimension is not None and stored is not None and dimension != stored:
        raise ConfigurationError(
            f"This store holds {stored}-dimensional vectors; it cannot be opened with dimension={dimension}."
        )
    conn.rollback()
    return stored


def migrate(
    conn: psycopg.Connection[Any],
    schema: str,
    vector_schema: str,
    *,
    dimension: int | None = None,
    target: int = LATEST_VERSION,
) -> int | None:
    """Create or upgrade the store's schema to ``target`` (the newest by default) and reconcile
    the vector dimension, in one transaction under an advisory lock on the schema's name;
    returns the store's dimension. :class:`SchemaVersionError` for a schema newer than this
    library; :class:`ConfigurationError` for a dimension that contradicts the stored one."""
    if not 1 <= target <= LATEST_VERSION:
        raise ConfigurationError(f"schema version {target} is not one this library knows (1..{LATEST_VERSION}).")
    try:
        with translate():
            if _in_recovery(conn):
                return _standby_dimension(conn, schema, vector_schema, dimension=dimension, target=target)
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"palimpsest:{schema}",))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            use_schema(conn, schema, vector_schema)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                "version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            current = _recorded_version(conn, schema) or 0
            if current > LATEST_VERSION:
                raise SchemaVersionError(
                    f"This store (schema {schema}) has schema version {current}, but this palimpsest "
                    f"only knows versions up to {LATEST_VERSION}; upgrade palimpsest to open it."
                )
            for migration in MIGRATIONS:
                if current < migration.version <= target:
                    migration.apply(conn)
                    conn.execute(
                        "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                        (migration.version, migration.name),
                    )
            stored = read_dimension(conn)
            if dimension is not None:
                fix_dimension(conn, dimension)
            result = dimension if dimension is not None else stored
            conn.commit()
            return result
    except BaseException:
        conn.rollback()
        raise
