"""LangGraph's checkpointer conformance suite (``langgraph-checkpoint-conformance``) on ``PalimpsestSaver``.

Run on every backend of the registry whose store keeps checkpoints (``checkpoint_stores``; one
without ``CheckpointStorage`` skips naming it): every base capability (put, put_writes,
get_tuple, list, delete_thread) and every extended one (delete_for_runs, copy_thread, prune)
must be detected and pass, the suite's async methods included. Again with authentication
(``key=``), with a retention that trims on every put without reaching the suite's few
checkpoints, and with ``keep_latest=1``, where exactly the tests that read back a thread's
history fail, and only those.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip(
    "langgraph.checkpoint.conformance", reason="the conformance suite comes with the dev extra (langgraph-checkpoint-conformance)"
)

from clients import build_client
from contract.conftest import StoreFactory
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import CapabilityReport
from palimpsest.adapters.langgraph import CheckpointRetention, PalimpsestSaver


def _validate(stores: StoreFactory, **saver_options: Any) -> CapabilityReport:
    """The suite's report for savers on fresh stores of one backend (one per capability)."""

    @checkpointer_test(name=f"PalimpsestSaver on {stores.adapter}")
    async def saver() -> AsyncIterator[PalimpsestSaver]:
        memory = build_client(stores.new())
        try:
            yield PalimpsestSaver(memory, **saver_options)
        finally:
            memory.close()

    return asyncio.run(validate(saver))


def _failures(report: CapabilityReport) -> dict[str, list[str]]:
    return {name: result.failures for name, result in report.results.items() if result.failures}


def _assert_full(report: CapabilityReport) -> None:
    undetected = sorted(c.value for c in ALL_CAPABILITIES if not report.results[c.value].detected)
    if undetected or not report.passed_all():
        report.print_report()
        pytest.fail(f"conformance: not detected {undetected}, failures {_failures(report)}")


def test_the_saver_passes_every_base_and_extended_capability(checkpoint_stores: StoreFactory) -> None:
    _assert_full(_validate(checkpoint_stores))


def test_an_authenticating_saver_passes_the_suite(checkpoint_stores: StoreFactory) -> None:
    _assert_full(_validate(checkpoint_stores, key=b"0123456789abcdef0123456789abcdef"))


def test_a_saver_with_retention_passes_the_suite(checkpoint_stores: StoreFactory) -> None:
    """keep the newest 50, none older than a day: applied after every put of the suite."""
    _assert_full(_validate(checkpoint_stores, retention=CheckpointRetention(keep_latest=50, max_age=timedelta(days=1))))


HISTORY_TESTS = {
    # A thread of several checkpoints read back whole: keep_latest=1 keeps one of them by design.
    "put": {"test_put_multiple_checkpoints_same_thread", "test_put_incremental_channel_update"},
    "get_tuple": {"test_get_tuple_specific_checkpoint_id"},
    "list": {
        "test_list_all",
        "test_list_by_thread",
        "test_list_ordering",
        "test_list_metadata_filter_single_key",
        "test_list_metadata_filter_step",
        "test_list_metadata_custom_keys",
        "test_list_before",
        "test_list_limit",
        "test_list_limit_plus_before",
        "test_list_combined_thread_and_filter",
    },
    "delete_for_runs": {
        "test_delete_for_runs_single",
        "test_delete_for_runs_multiple",
        "test_delete_for_runs_preserves_other_runs",
    },
    "copy_thread": {"test_copy_thread_basic"},
}
"""The suite's tests that read an older checkpoint of a thread after a newer one was put."""


def test_keep_latest_one_fails_only_the_tests_that_read_a_threads_history(checkpoint_stores: StoreFactory) -> None:
    report = _validate(checkpoint_stores, retention=CheckpointRetention(keep_latest=1))
    failed = {name: {f.split(":", 1)[0] for f in failures} for name, failures in _failures(report).items()}
    if failed != HISTORY_TESTS:
        report.print_report()
    assert failed == HISTORY_TESTS
    for cap in ALL_CAPABILITIES:
        result = report.results[cap.value]
        assert result.detected
        assert result.tests_passed > 0 or cap.value in HISTORY_TESTS
