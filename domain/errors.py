"""Domain layer: the one error tree of palimpsest.

Every error the library raises on purpose derives from :class:`AgentMemoryError`, and each
also derives from the builtin it resembles, so ``except ValueError`` keeps working for callers
who do not know our names::

    AgentMemoryError
    ├── ValidationError (ValueError)          bad input; nothing was written
    │   ├── InvalidRecordTypeError
    │   ├── InvalidScopeError
    │   ├── InvalidMetadataError
    │   ├── InvalidMetadataFilterError
    │   ├── InvalidSearchError
    │   ├── VectorDimensionError
    │   ├── ArgumentTypeError (TypeError too)  an argument of the wrong type
    │   ├── InvalidLinkError
    │   │   ├── SelfLinkError
    │   │   ├── LinkEndpointTypeError
    │   │   └── CrossScopeLinkError     the link would cross users or agents
    │   ├── InvalidImportError                a line of an import file; nothing was imported
    │   ├── InvalidImageError                 image bytes that are not a supported, valid image
    │   ├── ImageLimitError                   an image (or a request's images) over a configured limit
    │   └── InvalidSettingsError              a request's settings this client cannot take (a ConfigurationError too)
    ├── ConflictError (ValueError)            the write contradicts stored state
    │   ├── DuplicateIdError
    │   ├── LinkExistsError
    │   └── LinkOrientationError
    ├── NotFoundError (KeyError)              a referenced thread/message/record/link is absent
    │   ├── ThreadNotFoundError
    │   ├── MessageNotFoundError
    │   ├── RecordNotFoundError
    │   └── LinkNotFoundError
    ├── AccessError                           refused for who calls (ARCHITECTURE.md D44)
    │   ├── AuthenticationError               a malformed, unknown or revoked credential
    │   └── PermissionDeniedError             the caller's scope does not allow the call
    ├── ConfigurationError (ValueError)       a store or client was configured inconsistently
    │   └── EmbeddingMismatchError            the embedder does not fit the store's vectors
    ├── WaitTimeoutError (TimeoutError)       background work outlasted the caller's timeout
    ├── StorageError (RuntimeError)           the backend failed; driver errors are translated here
    │   ├── StoreBusyError (TimeoutError)     contention outlasted every retry
    │   ├── SchemaVersionError                the store file is newer than this library
    │   ├── StoreClosedError                  the store was used after close()
    │   ├── StoreUnavailableError             the database server is down or the connection was lost
    │   ├── ReadOnlyError                     a write through a read-only unit of work
    │   └── CheckpointIntegrityError          a stored checkpoint row this library would not have written
    └── ModelError (RuntimeError)             a model request failed or its answer was unusable
        ├── ModelOutputError                  the answer was not JSON, or broke the expected schema
        ├── ModelUnavailableError             429 / 5xx / timeouts outlasted every retry (or asked a too long wait)
        └── ModelRequestsDisabledError        model requests are switched off; nothing was sent

Adapters translate driver exceptions (``sqlite3.Error``, ``oracledb.DatabaseError``...) into
``StorageError`` and model SDK exceptions (``openai.APIError``...) into ``ModelError`` at their
boundary; none escapes the library. Authentication failures, unknown models and similar
misconfigurations of a model are not model errors: they are ``ConfigurationError``.
"""

from __future__ import annotations

__all__ = [
    "AccessError",
    "AgentMemoryError",
    "ArgumentTypeError",
    "AuthenticationError",
    "CheckpointIntegrityError",
    "ConfigurationError",
    "ConflictError",
    "CrossScopeLinkError",
    "DuplicateIdError",
    "EmbeddingMismatchError",
    "ImageLimitError",
    "InvalidImageError",
    "InvalidImportError",
    "InvalidLinkError",
    "InvalidMetadataError",
    "InvalidMetadataFilterError",
    "InvalidRecordTypeError",
    "InvalidScopeError",
    "InvalidSearchError",
    "InvalidSettingsError",
    "LinkEndpointTypeError",
    "LinkExistsError",
    "LinkNotFoundError",
    "LinkOrientationError",
    "MessageNotFoundError",
    "ModelError",
    "ModelOutputError",
    "ModelRequestsDisabledError",
    "ModelUnavailableError",
    "NotFoundError",
    "PermissionDeniedError",
    "ReadOnlyError",
    "RecordNotFoundError",
    "SchemaVersionError",
    "SelfLinkError",
    "StageEffectError",
    "StorageError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreUnavailableError",
    "ThreadNotFoundError",
    "ValidationError",
    "VectorDimensionError",
    "WaitTimeoutError",
]


class AgentMemoryError(Exception):
    """Base of every error palimpsest raises on purpose."""


class ValidationError(AgentMemoryError, ValueError):
    """The caller passed something malformed. Nothing was written."""


class InvalidRecordTypeError(ValidationError):
    """A record type outside the supported set (memory, fact, guideline, preference, message)."""


class InvalidScopeError(ValidationError):
    """A user/agent/thread scope value is malformed, or wider than the caller may read (a
    client search without a user, a thread handle's search outside its user)."""


class InvalidMetadataError(ValidationError):
    """Metadata is not a JSON object of JSON-compatible values."""


class InvalidMetadataFilterError(ValidationError):
    """A metadata filter does not follow the filter language."""


class InvalidSearchError(ValidationError):
    """A search request is out of range (k, num_hops, max_linked_results, empty query...)."""


class VectorDimensionError(ValidationError):
    """A vector's length differs from the store's embedding dimension, or it is not finite."""


class ArgumentTypeError(ValidationError, TypeError):
    """An argument has the wrong type (also a ``TypeError``, as Python callers expect)."""


class InvalidLinkError(ValidationError):
    """A link request is malformed."""


class SelfLinkError(InvalidLinkError):
    """A record cannot be linked to itself."""


class LinkEndpointTypeError(InvalidLinkError):
    """Links join memory-like records only (memory, fact, guideline, preference)."""


class InvalidImportError(ValidationError):
    """A line of an import file breaks a rule of the API, or clashes with what is stored.

    The message starts with where (``SOURCE, line N:``); ``line`` is that line number and the
    error it stands for, if any, is chained as ``__cause__``. Nothing was imported."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class InvalidImageError(ValidationError):
    """Image bytes that are not a well-formed PNG, JPEG or WebP image of the given MIME type
    (or an animated one, or one of too many pixels). Nothing was written."""


class ImageLimitError(ValidationError):
    """An image, or the images of one model request, exceed an ``ImageInputLimitConfig`` limit.
    Nothing was written."""


class CrossScopeLinkError(InvalidLinkError):
    """A link would join two users' (or two agents') records, or reach from an unscoped record
    into a user's: links stay inside one tenant, so no write of one scope changes another's."""


class ConflictError(AgentMemoryError, ValueError):
    """The request is well formed but contradicts what is stored. Nothing was written."""


class DuplicateIdError(ConflictError):
    """An entity with this id already exists."""


class LinkExistsError(ConflictError):
    """A link with the same source, target and relation type already exists."""


class LinkOrientationError(ConflictError):
    """The two endpoints are already linked in the opposite orientation."""


class NotFoundError(AgentMemoryError, KeyError):
    """A referenced entity does not exist (or has expired)."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence.
        return str(self.args[0]) if self.args else self.__class__.__name__


class ThreadNotFoundError(NotFoundError):
    """No thread with this id."""


class MessageNotFoundError(NotFoundError):
    """No message with this id."""


class RecordNotFoundError(NotFoundError):
    """No memory record with this id."""


class LinkNotFoundError(NotFoundError):
    """No link with this id or endpoint tuple."""


class AccessError(AgentMemoryError):
    """A call refused for who makes it (ARCHITECTURE.md D44)."""


class AuthenticationError(AccessError):
    """A credential that is malformed, unknown or revoked: the caller is nobody."""


class PermissionDeniedError(AccessError):
    """The caller is known but its scope does not allow this call (a read-only key writing)."""


class ConfigurationError(AgentMemoryError, ValueError):
    """Inconsistent configuration, e.g. opening a 384-d store with a 768-d embedder."""


class InvalidSettingsError(ValidationError, ConfigurationError):
    """Settings a request carries (a thread's, in a JSON object or a server's call) that are
    invalid or that this client cannot honour: the caller's to fix, so a ``ValidationError``;
    still a ``ConfigurationError`` for code that caught the settings' errors as such."""


class EmbeddingMismatchError(ConfigurationError):
    """The embedder does not fit the store's vectors (another dimension, model or index text).

    ``problem`` says what does not fit, without the remedy the message adds, so that a driver
    (the command line) can name its own."""

    def __init__(self, problem: str, remedy: str | None = None) -> None:
        super().__init__(problem if remedy is None else f"{problem}; {remedy}")
        self.problem = problem


class WaitTimeoutError(AgentMemoryError, TimeoutError):
    """Waiting for background work (extraction) took longer than the given timeout."""


class StorageError(AgentMemoryError, RuntimeError):
    """The storage backend failed. The original driver error is chained as ``__cause__``."""


class StoreBusyError(StorageError, TimeoutError):
    """Write contention lasted longer than the store's retry budget."""


class SchemaVersionError(StorageError):
    """The store was written by a newer schema than this library understands."""


class StoreClosedError(StorageError):
    """The store was used after ``close()``."""


class StoreUnavailableError(StorageError):
    """A database server could not be reached (down, wrong host or port) or the connection to
    it was lost during a call; what the call would have written was not acknowledged. Trying
    again later may succeed (unlike a wrong password or a missing extension, which are
    :class:`ConfigurationError`)."""


class ReadOnlyError(StorageError):
    """A write was attempted through a read-only unit of work (``MemoryStore.reading()``), or
    on a server that takes no writes (a PostgreSQL hot standby); nothing was written. Writes
    need ``MemoryStore.unit_of_work()`` on a server that takes them (the primary)."""


class CheckpointIntegrityError(StorageError):
    """A stored graph checkpoint row was refused on reading: a type tag or a serialized type its
    serializer does not read, or (with a key) an authentication tag that does not match the row
    and its place; nothing was reconstructed from it (ARCHITECTURE.md D41)."""


class ModelError(AgentMemoryError, RuntimeError):
    """A model request failed or returned something unusable."""


class ModelOutputError(ModelError):
    """The model answered, but not with JSON matching the expected schema. ``raw`` keeps the text."""

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class ModelUnavailableError(ModelError):
    """Rate limits, server errors or timeouts lasted longer than the retry budget, or the
    server asked for a longer wait than the client's ``max_retry_wait``. ``retry_after`` is the
    wait in seconds the last response asked for (``None`` when it named none)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelRequestsDisabledError(ModelError):
    """Model requests are switched off (``palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS`` is
    False), so no request was sent."""


class StageEffectError(AgentMemoryError, RuntimeError):
    """A search refinement stage returned hits its declared effect does not allow (a fault in
    the stage, never in the caller's arguments)."""
