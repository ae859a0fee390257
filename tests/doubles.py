"""Test doubles that several test modules share, so each is defined once.

Where the doubles live:

* ``palimpsest.application.testing`` — the shipped scripted doubles of the model ports
  (``ScriptedExtractor``, ``ScriptedSummariser``, ``ScriptedLinkResolver``);
* ``palimpsest.adapters.HashingEmbedder`` — the shipped model-free embedder;
* ``palimpsest.adapters.inmemory`` — ``InMemoryStore`` and ``ManualClock``;
* this module — small scripts for those doubles that more than one test module uses;
* next to their tests, the fakes of one technology: ``tests/oracle_sql/fakes.py`` (a DB-API
  connection), ``tests/openai/fake_openai_server.py`` (an HTTP server),
  ``tests/langgraph_integration/lg_doubles.py`` (a chat model and LangChain embeddings).
"""

from __future__ import annotations

from palimpsest.application import ExtractedMemory, ExtractionRequest
from palimpsest.domain import RecordType

__all__ = ["fact_per_message"]


def fact_per_message(request: ExtractionRequest) -> list[ExtractedMemory]:
    """An extraction script for ``ScriptedExtractor``: one FACT "Fact: <content>" per target message."""
    return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}") for m in request.target_messages]
