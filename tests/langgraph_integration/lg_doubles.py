"""Test doubles of the LangGraph integration tests (import only after LangChain is known present).

* ``ScriptedChatModel``: LangChain's ``GenericFakeChatModel`` whose ``bind_tools`` returns itself,
  so scripted ``AIMessage``s with ``tool_calls`` drive ``create_agent``'s tool loop; it records
  every prompt it was given (``model.prompts``).
* ``CharacterEmbeddings``: the character-frequency embeddings of LangGraph's own store tests,
  ported, so the ported store tests keep their assertions (through ``LangChainEmbedder``).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """Replies with the scripted messages in order; remembers each prompt."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(replies: list[Any]) -> ScriptedChatModel:
    """A fresh model replying ``replies`` in order (strings become ``AIMessage``s)."""
    messages = [AIMessage(content=r) if isinstance(r, str) else r for r in replies]
    return ScriptedChatModel(messages=iter(messages), prompts=[])


class CharacterEmbeddings(Embeddings):
    """Character-frequency embeddings through fixed random projections (LangGraph's test double)."""

    def __init__(self, dims: int = 50, seed: int = 42) -> None:
        self._rng = random.Random(seed)
        self.dims = dims
        self._projections: dict[str, list[float]] = defaultdict(
            lambda: [self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)]
        )

    def _embed_one(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        if total == 0:
            return [0.0] * self.dims
        embedding = [0.0] * self.dims
        for char, count in counts.items():
            weight = count / total
            for i, value in enumerate(self._projections[char]):
                embedding[i] += weight * value
        norm = math.sqrt(sum(x * x for x in embedding))
        return [x / norm for x in embedding] if norm > 0 else embedding

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed_one(text)
