"""schemathesis fuzzes the served OpenAPI schema against a live uvicorn on 127.0.0.1 with a valid
key: no answer is a 500, and every status, content type, header and body is one the schema
documents for its route. Each operation is its own test, bounded for the default run
(:data:`EXAMPLES` valid and as many invalid requests); ``-m slow`` runs many more."""

from __future__ import annotations

from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from palimpsest.adapters.http import create_app  # noqa: E402
from palimpsest.application import AgentMemory  # noqa: E402
from palimpsest.application.requests import AddMemory, AppendMessages, CreateThread  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 10
"""Valid (and as many invalid) requests per operation in the default run."""

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

OPERATIONS = sorted(
    (method.upper(), path)
    for path, operations in create_app(None).openapi()["paths"].items()  # type: ignore[arg-type]
    for method in operations
)


def _fuzz(memory: AgentMemory, base_url: str, method: str, path: str, examples: int) -> None:
    key = memory.admin.api_keys.create(user_id="alice", scope="write").key
    scoped = memory.acting_for(memory.admin.api_keys.verify(key))
    scoped.create_thread(CreateThread(thread_id="t-1"))
    scoped.add_messages("t-1", AppendMessages(messages=[{"role": "user", "content": "The hive swarmed."}]))
    scoped.add_memory(AddMemory(content="Alice keeps bees.", memory_id="m-1"))
    operation = schemathesis.openapi.from_url(f"{base_url}/openapi.json")[path][method]
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @given(case=cases)
    @settings(
        max_examples=2 * examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    def fuzz(case: Any) -> None:
        case.call_and_validate(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, checks=CHECKS)

    fuzz()


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_each_operation_answers_only_documented_statuses(
    memory: AgentMemory, base_url: str, method: str, path: str
) -> None:
    _fuzz(memory, base_url, method, path, EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_each_operation_answers_only_documented_statuses_at_length(
    memory: AgentMemory, base_url: str, method: str, path: str
) -> None:
    _fuzz(memory, base_url, method, path, 200)
