"""Oracle errors: python-oracledb errors, built the way the driver builds them, become the domain's."""

from __future__ import annotations

import oracledb
import pytest
from oracledb.errors import _Error
from palimpsest.adapters.oracle.errors import (
    constraint_base,
    error_info,
    is_connection_lost,
    translate,
    translated,
)
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.domain.errors import (
    ConflictError,
    DuplicateIdError,
    LinkExistsError,
    MessageNotFoundError,
    RecordNotFoundError,
    SelfLinkError,
    StorageError,
    StoreBusyError,
    ThreadNotFoundError,
    ValidationError,
)


def driver_error(message: str, code: int = 0) -> oracledb.Error:
    """An exception exactly as python-oracledb raises it: an ``_Error`` decides the class."""
    error = _Error(message, code=code)
    return error.exc_type(error)


def unique(constraint: str) -> oracledb.Error:
    return driver_error(
        f"ORA-00001: unique constraint (PALIMPSEST.{constraint}) violated on table PALIMPSEST.T columns (ID)",
        1,
    )


def parent_missing(constraint: str) -> oracledb.Error:
    return driver_error(
        f"ORA-02291: integrity constraint (PALIMPSEST.{constraint}) violated - parent key not found", 2291
    )


def check_failed(constraint: str) -> oracledb.Error:
    return driver_error(f"ORA-02290: check constraint (PALIMPSEST.{constraint}) violated", 2290)


ACME = StoreNames("acme")
DEFAULT = StoreNames()


def test_the_stand_in_errors_are_the_driver_classes_with_its_error_object() -> None:
    exc = unique("THREAD_PK")
    assert isinstance(exc, oracledb.IntegrityError)
    info = error_info(exc)
    assert (info.code, info.full_code) == (1, "ORA-00001")
    assert info.message.startswith("ORA-00001: unique constraint (PALIMPSEST.THREAD_PK)")
    lost = driver_error("ORA-03113: end-of-file on communication channel", 3113)
    assert error_info(lost).full_code == "DPY-4011"  # the driver's own code for a closed connection
    assert error_info(lost).code == 3113


@pytest.mark.parametrize(
    ("names", "constraint", "expected"),
    [
        (DEFAULT, "MEMORY_LINK_UQ", LinkExistsError),
        (ACME, "ACME_MEMORY_LINK_UQ", LinkExistsError),
        (DEFAULT, "THREAD_SUMMARY_REVISION_UQ", ConflictError),
        (ACME, "ACME_THREAD_SUMMARY_REVISION_UQ", ConflictError),
        (DEFAULT, "MESSAGE_THREAD_ORDER_UQ", DuplicateIdError),
        (DEFAULT, "THREAD_PK", DuplicateIdError),
        (ACME, "ACME_MEMORY_PK", DuplicateIdError),
        (DEFAULT, "SYS_C0012345", DuplicateIdError),
        (ACME, "MEMORY_LINK_UQ", DuplicateIdError),  # another store's constraint is not ours
    ],
)
def test_a_unique_violation_names_its_meaning_by_constraint(
    names: StoreNames, constraint: str, expected: type[Exception]
) -> None:
    error = translated(unique(constraint), names=names)
    assert type(error) is expected


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("ACME_MESSAGE_THREAD_FK", ThreadNotFoundError),
        ("ACME_MEMORY_THREAD_FK", ThreadNotFoundError),
        ("ACME_THREAD_SUMMARY_THREAD_FK", ThreadNotFoundError),
        ("ACME_EXTRACTION_JOB_THREAD_FK", ThreadNotFoundError),
        ("ACME_MEMORY_LINK_SOURCE_FK", RecordNotFoundError),
        ("ACME_MEMORY_LINK_TARGET_FK", RecordNotFoundError),
    ],
)
def test_a_missing_parent_is_the_not_found_error_of_its_foreign_key(
    constraint: str, expected: type[Exception]
) -> None:
    assert type(translated(parent_missing(constraint), names=ACME)) is expected


def test_an_unknown_foreign_key_falls_back_to_the_callers_not_found_error_or_a_storage_error() -> None:
    assert (
        type(translated(parent_missing("SYS_C001"), names=ACME, missing=MessageNotFoundError))
        is MessageNotFoundError
    )
    assert type(translated(parent_missing("SYS_C001"), names=ACME)) is StorageError


def test_check_constraints_are_validation_errors_and_the_self_link_check_a_self_link_error() -> None:
    assert type(translated(check_failed("ACME_MEMORY_LINK_NOT_SELF_CK"), names=ACME)) is SelfLinkError
    assert type(translated(check_failed("ACME_MEMORY_STATUS_CK"), names=ACME)) is ValidationError


def test_a_value_too_large_for_its_column_is_a_validation_error() -> None:
    message = 'ORA-12899: value too large for column "PAL"."ACME_STORE_SETTING"."SETTING_KEY" (actual: 300, maximum: 128)'
    assert type(translated(driver_error(message, 12899), names=ACME)) is ValidationError


def test_without_names_the_longest_base_name_decides() -> None:
    assert constraint_base("ORA-00001: unique constraint (X.ACME_THREAD_SUMMARY_REVISION_UQ) violated") == (
        "THREAD_SUMMARY_REVISION_UQ"
    )
    assert constraint_base('ORA-02291: integrity constraint ("X"."THREAD_SUMMARY_THREAD_FK") violated') == (
        "THREAD_SUMMARY_THREAD_FK"
    )
    assert constraint_base("ORA-00001: unique constraint (X.SYS_C00991) violated") is None
    assert constraint_base("no parentheses at all") is None
    assert type(translated(unique("ACME_MEMORY_LINK_UQ"))) is LinkExistsError


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("ORA-03113: end-of-file on communication channel", 3113),
        ("ORA-03135: connection lost contact", 3135),
        ("ORA-00028: your session has been killed", 28),
        ("DPY-4011: the database or network closed the connection", 0),
        ("DPY-1001: not connected to database", 0),
    ],
)
def test_a_lost_connection_is_a_storage_error_and_marks_the_session_dead(message: str, code: int) -> None:
    exc = driver_error(message, code)
    assert is_connection_lost(exc)
    error = translated(exc)
    assert type(error) is StorageError
    assert "connection to Oracle was lost" in str(error)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("ORA-00054: resource busy and acquire with NOWAIT specified or timeout expired", 54),
        ("ORA-30006: resource busy; acquire with WAIT timeout expired", 30006),
        ("ORA-00060: deadlock detected while waiting for resource", 60),
        ("DPY-4024: call timeout of 1000 ms exceeded", 0),
        ("DPY-4005: timed out waiting for the connection pool to return a connection", 0),
    ],
)
def test_contention_and_timeouts_are_store_busy_errors(message: str, code: int) -> None:
    error = translated(driver_error(message, code))
    assert isinstance(error, StoreBusyError) and isinstance(error, TimeoutError)
    assert not is_connection_lost(driver_error(message, code))


def test_anything_else_is_a_storage_error_naming_the_code() -> None:
    error = translated(driver_error("ORA-00942: table or view does not exist", 942))
    assert type(error) is StorageError
    assert "ORA-00942" in str(error)
    bare = translated(oracledb.DatabaseError())  # no error object at all
    assert type(bare) is StorageError


def test_translate_chains_the_driver_error_and_lets_other_errors_through() -> None:
    original = unique("ACME_MEMORY_LINK_UQ")
    with pytest.raises(LinkExistsError) as caught, translate(ACME):
        raise original
    assert caught.value.__cause__ is original
    with pytest.raises(KeyError), translate(ACME):
        raise KeyError("not a driver error")
