"""Application layer of palimpsest: the public client (``AgentMemory``), thread handles, result
objects, configuration, and the ports for model capabilities (embedding, extraction, summaries,
link resolution, reranking). Everything here depends on domain ports only; adapters are injected.
"""

from .arguments import TimeToLiveAnchor
from .client import AgentMemory
from .config import (
    BackgroundExtractionQueueFullBehavior,
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    MemoryRetentionConfig,
    RetrievalConfig,
)
from .images import ImageRecord
from .ports import (
    Embedder,
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    ImageCaptioner,
    LinkProposal,
    LinkResolution,
    LinkResolver,
    RerankCandidate,
    Reranker,
    Summariser,
    SummaryText,
)
from .record_service import RecordService
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
    "ImageCaptioner",
    "ImageInputLimitConfig",
    "ImageRecord",
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
    "RecordService",
    "RerankCandidate",
    "Reranker",
    "RetrievalConfig",
    "SearchResult",
    "SearchResultFormatConfig",
    "SearchScope",
    "Summariser",
    "Summary",
    "SummaryText",
    "TimeToLiveAnchor",
    "TokenCounts",
    "TokenUsage",
]
