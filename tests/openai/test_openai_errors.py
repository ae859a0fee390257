"""The OpenAI adapter's model errors are the domain's, under the names it always exported."""

from __future__ import annotations

from palimpsest.adapters import openai as adapter
from palimpsest.adapters.openai import errors as adapter_errors
from palimpsest.domain import errors
from palimpsest.domain.errors import AgentMemoryError, ModelError, ModelOutputError, ModelUnavailableError


def test_the_openai_adapter_raises_the_domain_model_errors_under_its_old_names() -> None:
    for name in ("ModelError", "ModelOutputError", "ModelUnavailableError", "ModelRequestsDisabledError"):
        assert getattr(adapter, name) is getattr(errors, name) is getattr(adapter_errors, name)
    assert ModelOutputError("bad", raw="{").raw == "{"
    assert ModelUnavailableError("busy", retry_after=2.0).retry_after == 2.0
    assert issubclass(ModelError, AgentMemoryError)
