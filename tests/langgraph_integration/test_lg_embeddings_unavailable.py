"""A LangChain ``Embeddings`` whose server cannot be reached degrades like palimpsest's own
embedders (ARCHITECTURE.md D43): the write is stored and waits for its vector; any other error
still raises and writes nothing."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

import openai
from langchain_core.embeddings import Embeddings
from palimpsest.adapters import open_memory
from palimpsest.adapters.langgraph import LangChainEmbedder
from palimpsest.application import MemoryExtractionConfig
from palimpsest.domain.errors import ModelUnavailableError

DIMENSION = 8


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _OpenAIEmbeddings(Embeddings):
    """A LangChain embeddings over the OpenAI SDK (as langchain-openai's is), at a given URL;
    ``up`` switches to local vectors, as a server coming back would."""

    def __init__(self, base_url: str) -> None:
        self.client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=2.0)
        self.up = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.up:
            return [[float(len(t) % 7 + 1)] + [float(i) for i in range(1, DIMENSION)] for t in texts]
        data = self.client.embeddings.create(model="m", input=texts).data
        return [list(d.embedding) for d in data]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class _WrongCall(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise ValueError("the model rejects this input")

    def embed_query(self, text: str) -> list[float]:
        raise ValueError("the model rejects this input")


def test_an_unreachable_langchain_embeddings_is_unavailable_and_the_write_waits(tmp_path: Path) -> None:
    embeddings = _OpenAIEmbeddings(_closed_port())
    embedder = LangChainEmbedder(embeddings, dimension=DIMENSION, model_id="lc-test")
    with pytest.raises(ModelUnavailableError):
        embedder.embed(["hello"])
    config = MemoryExtractionConfig(extract_memories=False)
    with open_memory(tmp_path / "m.db", embedder=embedder, memory_extraction_config=config) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "I moved to Lisbon in May."}])
        assert [m.content for m in thread.get_messages()] == ["I moved to Lisbon in May."]
        assert memory.admin.waiting_vectors().messages == 1
        embeddings.up = True
        assert memory.embed_waiting() == 1
        assert memory.admin.waiting_vectors().messages == 0


def test_another_langchain_error_still_raises_and_writes_nothing(tmp_path: Path) -> None:
    embedder = LangChainEmbedder(_WrongCall(), dimension=DIMENSION, model_id="lc-wrong")
    config = MemoryExtractionConfig(extract_memories=False)
    with open_memory(tmp_path / "m.db", embedder=embedder, memory_extraction_config=config) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        with pytest.raises(ValueError, match="rejects"):
            thread.add_messages([{"role": "user", "content": "hello"}])
        assert thread.get_messages() == []
