"""Domain layer of palimpsest: entities, lifecycle rules, search semantics, errors and storage ports.

Pure Python: nothing here imports a third-party package (a test enforces it).
"""

from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .events import *  # noqa: F403
from .events import __all__ as _events_all
from .links import (
    BUILTIN_OPPOSITES,
    LIFECYCLE_REASONS,
    LIFECYCLE_TYPES,
    derive_status,
    is_lifecycle,
    new_link,
    opposite_label,
    retype_link,
)
from .metadata_filter import matches as metadata_matches
from .metadata_filter import validate_filter as validate_metadata_filter
from .model import (
    MEMORY_RECORD_TYPES,
    SEARCHABLE_RECORD_TYPES,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Scope,
    Thread,
    expiry_from_ttl,
    parse_record_type,
)
from .ports import (
    Clock,
    LinkRepository,
    MemoryStore,
    MessageRepository,
    RecordRepository,
    RecordSearch,
    ThreadRepository,
    UnitOfWork,
)
from .search import (
    Fusion,
    LinkedRecord,
    ScopeFilter,
    SearchHit,
    SearchQuery,
    TreeEdge,
    build_tree,
    reciprocal_rank_fusion,
    shortest_path_tree,
)
from .sentinel import ANY, NOTSET, AnyType, NotSetType

__all__ = [
    *_errors_all,
    *_events_all,
    "ANY",
    "BUILTIN_OPPOSITES",
    "LIFECYCLE_REASONS",
    "LIFECYCLE_TYPES",
    "MEMORY_RECORD_TYPES",
    "NOTSET",
    "SEARCHABLE_RECORD_TYPES",
    "AnyType",
    "Clock",
    "Fusion",
    "LinkRepository",
    "LinkedRecord",
    "MemoryRecord",
    "MemoryStore",
    "Message",
    "MessageRepository",
    "NotSetType",
    "RecordLink",
    "RecordRepository",
    "RecordSearch",
    "RecordStatus",
    "RecordType",
    "Scope",
    "ScopeFilter",
    "SearchHit",
    "SearchQuery",
    "Thread",
    "ThreadRepository",
    "TreeEdge",
    "UnitOfWork",
    "build_tree",
    "derive_status",
    "expiry_from_ttl",
    "is_lifecycle",
    "metadata_matches",
    "new_link",
    "opposite_label",
    "parse_record_type",
    "reciprocal_rank_fusion",
    "retype_link",
    "shortest_path_tree",
    "validate_metadata_filter",
]
