"""Unit: the error tree of palimpsest.domain.errors matches its documented shape."""

from __future__ import annotations

import pytest
from palimpsest.domain import errors
from palimpsest.domain.errors import (
    AccessError,
    AgentMemoryError,
    ArgumentTypeError,
    AuthenticationError,
    CheckpointIntegrityError,
    ConfigurationError,
    ConflictError,
    CrossScopeLinkError,
    DuplicateIdError,
    EmbeddingMismatchError,
    ImageLimitError,
    InvalidImageError,
    InvalidImportError,
    InvalidLinkError,
    InvalidMetadataError,
    InvalidMetadataFilterError,
    InvalidRecordTypeError,
    InvalidScopeError,
    InvalidSearchError,
    InvalidSettingsError,
    LinkEndpointTypeError,
    LinkExistsError,
    LinkNotFoundError,
    LinkOrientationError,
    MessageNotFoundError,
    ModelError,
    ModelOutputError,
    ModelRequestsDisabledError,
    ModelUnavailableError,
    NotFoundError,
    PermissionDeniedError,
    ReadOnlyError,
    RecordNotFoundError,
    SchemaVersionError,
    SelfLinkError,
    StageEffectError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
    StoreUnavailableError,
    ThreadNotFoundError,
    ValidationError,
    VectorDimensionError,
    WaitTimeoutError,
)

# (error, its documented parent in the tree, the builtin it also derives from)
TREE = [
    (ValidationError, AgentMemoryError, ValueError),
    (InvalidRecordTypeError, ValidationError, ValueError),
    (InvalidScopeError, ValidationError, ValueError),
    (InvalidMetadataError, ValidationError, ValueError),
    (InvalidMetadataFilterError, ValidationError, ValueError),
    (InvalidSearchError, ValidationError, ValueError),
    (VectorDimensionError, ValidationError, ValueError),
    (ArgumentTypeError, ValidationError, TypeError),
    (WaitTimeoutError, AgentMemoryError, TimeoutError),
    (InvalidLinkError, ValidationError, ValueError),
    (SelfLinkError, InvalidLinkError, ValueError),
    (LinkEndpointTypeError, InvalidLinkError, ValueError),
    (InvalidImportError, ValidationError, ValueError),
    (InvalidImageError, ValidationError, ValueError),
    (ImageLimitError, ValidationError, ValueError),
    (CrossScopeLinkError, InvalidLinkError, ValueError),
    (ConflictError, AgentMemoryError, ValueError),
    (DuplicateIdError, ConflictError, ValueError),
    (LinkExistsError, ConflictError, ValueError),
    (LinkOrientationError, ConflictError, ValueError),
    (NotFoundError, AgentMemoryError, KeyError),
    (ThreadNotFoundError, NotFoundError, KeyError),
    (MessageNotFoundError, NotFoundError, KeyError),
    (RecordNotFoundError, NotFoundError, KeyError),
    (LinkNotFoundError, NotFoundError, KeyError),
    (ConfigurationError, AgentMemoryError, ValueError),
    (EmbeddingMismatchError, ConfigurationError, ValueError),
    (StorageError, AgentMemoryError, RuntimeError),
    (StoreBusyError, StorageError, TimeoutError),
    (SchemaVersionError, StorageError, RuntimeError),
    (StoreClosedError, StorageError, RuntimeError),
    (StoreUnavailableError, StorageError, RuntimeError),
    (ReadOnlyError, StorageError, RuntimeError),
    (CheckpointIntegrityError, StorageError, RuntimeError),
    (ModelError, AgentMemoryError, RuntimeError),
    (ModelOutputError, ModelError, RuntimeError),
    (ModelUnavailableError, ModelError, RuntimeError),
    (ModelRequestsDisabledError, ModelError, RuntimeError),
    (StageEffectError, AgentMemoryError, RuntimeError),
    (AccessError, AgentMemoryError, Exception),
    (AuthenticationError, AccessError, Exception),
    (PermissionDeniedError, AccessError, Exception),
    (InvalidSettingsError, ValidationError, ValueError),
    (InvalidSettingsError, ConfigurationError, ValueError),
]


@pytest.mark.parametrize(("error", "parent", "builtin"), TREE, ids=[e.__name__ for e, _, _ in TREE])
def test_every_error_sits_in_the_documented_place_of_the_tree(
    error: type[Exception], parent: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, AgentMemoryError)
    assert issubclass(error, parent)
    assert issubclass(error, builtin)
    with pytest.raises(builtin):
        raise error("boom")


def test_the_tree_lists_every_exported_error() -> None:
    exported = {getattr(errors, name) for name in errors.__all__}
    assert exported == {AgentMemoryError} | {e for e, _, _ in TREE}


def test_a_store_busy_error_is_also_a_storage_error_for_callers_catching_runtime_errors() -> None:
    assert issubclass(StoreBusyError, RuntimeError)


@pytest.mark.parametrize(
    "error", [NotFoundError, ThreadNotFoundError, RecordNotFoundError, LinkNotFoundError]
)
def test_a_not_found_error_reads_as_its_plain_sentence(error: type[NotFoundError]) -> None:
    assert str(error("x")) == "x"
    assert str(error("No memory record 'r1'.")) == "No memory record 'r1'."
    assert str(KeyError("x")) == "'x'"  # what the override avoids


def test_a_not_found_error_without_a_message_reads_as_its_class_name() -> None:
    assert str(RecordNotFoundError()) == "RecordNotFoundError"


def test_a_not_found_error_is_caught_by_except_key_error() -> None:
    with pytest.raises(KeyError):
        raise RecordNotFoundError("No memory record 'r1'.")

