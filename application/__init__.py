"""Application layer of palimpsest: the public client (``AgentMemory``), thread handles, result
objects, configuration, and the ports for model capabilities (embedding, extraction, summaries,
link resolution, reranking). Everything here depends on domain ports only; adapters are injected.
"""

from .admin import StoreAdmin
from .arguments import TimeToLiveAnchor
from .client import AgentMemory
from .config import (
    BackgroundExtractionQueueFullBehavior,
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    MemoryRetentionConfig,
    RetrievalConfig,
)
from .ports import (
    Embedder,
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    LinkProposal,
    LinkResolution,
    LinkResolver,
    RerankCandidate,
    Reranker,
    Summariser,
    SummaryText,
)
from .results import (
    ContextCard,
    OracleSearchResultFormatConfig,
    SearchResult,
    SearchResultFormatConfig,
    Summary,
)
from .searching import SearchScope
from .thread import ChatMessage, MemoryThread
from .usage import TokenCounts, TokenUsage

__all__ = [
    "AgentMemory",
    "BackgroundExtractionQueueFullBehavior",
    "ChatMessage",
    "ContextCard",
    "Embedder",
    "ExtractedMemory",
    "ExtractionRequest",
    "ExtractionRetryPolicy",
    "ExtractionRunsIn",
    "Extractor",
    "LinkProposal",
    "LinkResolution",
    "LinkResolver",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
    "MemoryRetentionConfig",
    "MemoryThread",
    "OracleSearchResultFormatConfig",
    "RerankCandidate",
    "Reranker",
    "RetrievalConfig",
    "SearchResult",
    "SearchResultFormatConfig",
    "SearchScope",
    "StoreAdmin",
    "Summariser",
    "Summary",
    "SummaryText",
    "TimeToLiveAnchor",
    "TokenCounts",
    "TokenUsage",
]
