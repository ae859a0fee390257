"""Application layer: ``MemoryFacade``, the public methods ``AgentMemory`` and ``MemoryThread`` share.

The record, link, search and image methods are declared once, here, with the reference's names,
keywords and defaults. Each builds its typed request (:mod:`~palimpsest.application.requests`)
or checks its arguments, lets the facade bind its scope (:meth:`MemoryFacade._scope_thread`: a
thread handle binds its own thread, the client none), and makes one call to a service. Where
the reference gives the two facades different signatures (``list_images``: a thread's has no
scope keywords), each declares its own thin method over one helper here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from palimpsest.domain.images import ImageMimeType
from palimpsest.domain.model import RecordStatus, Thread, check_id
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, named_arguments, reject_unknown_kwargs
from .asyncio_twins import with_async_twins
from .config import ImageInputLimitConfig, MemorySearchConfig, search_defaults
from .images import ImageRecord
from .requests import (
    AddImage,
    AddMemory,
    DeleteRecordLink,
    LinkRecords,
    ListImages,
    SearchRequest,
    SearchScope,
    SearchStrategy,
    UpdateImage,
    UpdateMemory,
    UpdateRecordLink,
)
from .results import SearchResult
from .wiring import ApplicationServices

__all__ = ["SHARED_METHODS", "MemoryFacade"]

_Bound = TypeVar("_Bound", AddMemory, UpdateMemory, LinkRecords, UpdateRecordLink, DeleteRecordLink)

SHARED_METHODS = (
    "add_memory",
    "update_memory",
    "delete_memory",
    "link_records",
    "update_record_link",
    "delete_record_link",
    "search",
    "add_image",
    "update_image",
    "delete_image",
)


@with_async_twins(*SHARED_METHODS)
class MemoryFacade:
    """The methods the client and a thread handle share; see :class:`AgentMemory` and
    :class:`MemoryThread`."""

    _services: ApplicationServices

    def _scope_thread(self) -> Thread | None:
        """The thread whose handle this is (its scope binds every request), or ``None``."""
        return None

    def _search_defaults(self) -> MemorySearchConfig | None:
        """The search config whose values are the defaults of this facade's searches."""
        return None

    def _image_limits(self, requested: ImageInputLimitConfig | None) -> ImageInputLimitConfig | None:
        """The image limits of one call: ``requested`` (the call's own) over this facade's;
        ``None`` leaves the client's (a thread handle layers its stored limits under the call's)."""
        return requested

    def _bound(self, request: _Bound) -> _Bound:
        """``request`` as this facade makes it: through a thread handle, bound to its thread."""
        thread = self._scope_thread()
        return request if thread is None else request.within_thread(thread)

    # -- memories --------------------------------------------------------------------------

    def add_memory(
        self,
        content: str,
        *,
        memory_type: str | NotSetType = NOTSET,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        memory_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        status: RecordStatus | str | NotSetType = NOTSET,
        autonomous_linking: bool | NotSetType = NOTSET,
        memory_id_to_link: str | NotSetType = NOTSET,
        link_type: str | NotSetType = NOTSET,
        link_id: str | NotSetType = NOTSET,
        link_timestamp: str | datetime | None | NotSetType = NOTSET,
        link_metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> str:
        """Store a memory-like record (default type ``memory``) and return its id.

        ``status`` sets its initial status (``RecordStatus`` or ``"valid"``/``"invalid"``;
        valid when omitted; an invalid one records "Set invalid by the caller."), until a link
        change touching it derives the status from its links again (ARCHITECTURE.md D2).

        With ``memory_id_to_link`` + ``link_type`` the new memory is linked to an existing one
        in the same transaction; an omitted agent or thread is inherited from a target of the
        same user, but an omitted user means unscoped, as without a link (so the link may not
        reach into a user's records: ``CrossScopeLinkError``). Otherwise, with
        ``autonomous_linking`` the link resolver links it to its closest existing memories
        after it is stored; it defaults to on only when the resolver is model-backed
        (``uses_model``), so the offline rules link extracted memories but not these.

        Through a thread handle the memory is the thread's (its user, agent and thread; other
        ids are an ``InvalidScopeError``) and a link target must be the thread's too."""
        request = AddMemory(**named_arguments(locals()))
        return self._services.records.add_memory(self._bound(request))

    def update_memory(
        self,
        memory_id: str,
        content: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        status: RecordStatus | str | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Partial update (metadata replaced whole); scope and type are immutable. ``status``
        as in :meth:`add_memory`. Through a thread handle, only the thread's own memories."""
        reject_unknown_kwargs("update_memory", kwargs)
        request = UpdateMemory(**named_arguments(locals()))
        return self._services.records.update_memory(self._bound(request))

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory: 1, or 0 when there is none (through a thread handle: 0 for any
        record that is not the thread's)."""
        check_id(memory_id, "memory_id")
        thread = self._scope_thread()
        return int(self._services.memory.delete_record(memory_id, owner_thread=None if thread is None else thread.id))

    # -- links -----------------------------------------------------------------------------

    def link_records(
        self,
        source_record_id: str,
        source_record_type: str,
        target_record_id: str,
        target_record_type: str,
        relation_type: str,
        opposite_relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> str:
        """Link two memory-like records (source → target); returns the relation id. Through a
        thread handle both records must be the thread's."""
        request = LinkRecords(**named_arguments(locals()))
        return self._services.records.link_records(self._bound(request))

    def update_record_link(
        self,
        relation_id: str,
        relation_type: str | NotSetType = NOTSET,
        opposite_relation_type: str | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
    ) -> int:
        """Change a link (omitted fields unchanged; ``None`` clears timestamp/metadata); 0 if absent."""
        request = UpdateRecordLink(**named_arguments(locals()))
        return self._services.records.update_record_link(self._bound(request))

    def delete_record_link(
        self,
        source_record_id: str | NotSetType = NOTSET,
        source_record_type: str | NotSetType = NOTSET,
        target_record_id: str | NotSetType = NOTSET,
        target_record_type: str | NotSetType = NOTSET,
        relation_type: str | NotSetType = NOTSET,
        relation_id: str | NotSetType = NOTSET,
    ) -> int:
        """Delete by ``relation_id`` alone, or by the complete directed tuple."""
        request = DeleteRecordLink(**named_arguments(locals()))
        return self._services.records.delete_record_link(self._bound(request))

    # -- search ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | None | NotSetType = NOTSET,
        exact_user_match: bool | NotSetType = NOTSET,
        exact_agent_match: bool | NotSetType = NOTSET,
        exact_thread_match: bool | NotSetType = NOTSET,
        max_results: int | NotSetType = NOTSET,
        token_budget: int | None | NotSetType = NOTSET,
        soft_token_budget: int | None | NotSetType = NOTSET,
        record_types: Iterable[str] | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        num_hops: int | NotSetType = NOTSET,
        max_linked_results: int | NotSetType = NOTSET,
        include_invalid_results: bool | NotSetType = NOTSET,
        scope: SearchScope | NotSetType = NOTSET,
        search_strategy: SearchStrategy | str | NotSetType = NOTSET,
    ) -> list[SearchResult]:
        """Scoped retrieval over messages and memories, with optional graph hops.

        A client search must name its user (``user_id=None``: unscoped records only). A thread
        handle searches with the thread's defaults: its user and agent exactly, any of their
        threads (``exact_thread_match=True`` keeps to this thread); it never reads outside its
        user (a ``scope`` without a user means the thread's; another user, or none for a
        thread with one, or ``exact_user_match=False`` is an ``InvalidScopeError``).

        ``search_strategy`` overrides the client's for this call (``SearchStrategy`` or
        "vector", "keyword", "hybrid"; the first and last need an embedder). A positive
        ``token_budget`` below 1000 warns (``UserWarning``): it may return no results."""
        keywords: dict[str, Any] = {
            "user_id": user_id,
            "agent_id": agent_id,
            "thread_id": thread_id,
            "exact_user_match": exact_user_match,
            "exact_agent_match": exact_agent_match,
            "exact_thread_match": exact_thread_match,
            "max_results": max_results,
            "token_budget": token_budget,
            "soft_token_budget": soft_token_budget,
            "record_types": record_types,
            "metadata_filter": metadata_filter,
            "num_hops": num_hops,
            "max_linked_results": max_linked_results,
            "include_invalid_results": include_invalid_results,
            "scope": scope,
            "search_strategy": search_strategy,
        }
        for name, value in search_defaults(self._search_defaults()).items():
            if keywords[name] is NOTSET:
                keywords[name] = value
        thread = self._scope_thread()
        request = SearchRequest(query, **keywords) if thread is None else SearchRequest.for_thread(thread, query, **keywords)
        return self._services.searcher.search(request, now=self._services.clock.now())

    # -- images ----------------------------------------------------------------------------

    def add_image(
        self,
        image: bytes,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        image_id: str | NotSetType = NOTSET,
        *,
        user_id: str | None | NotSetType = NOTSET,
        agent_id: str | None | NotSetType = NOTSET,
        thread_id: str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Store a standalone image (PNG, JPEG or WebP; the type is detected when omitted) and
        return its id. Without a ``description`` (or with ``None``) the client's image
        captioner writes one. At least one of ``user_id``, ``agent_id``, ``thread_id``.
        ``image_input_limit_config`` sets this call's limits (over a thread's, then the
        client's).

        Through a thread handle the image is the thread's (its user and agent); a scope given
        here must be the thread's ("Image scope must match this thread.")."""
        reject_unknown_kwargs("add_image", kwargs)
        request = AddImage(**named_arguments(locals()))
        return self._services.images.add_image(
            request, limits=self._image_limits(request.limits), owner=self._scope_thread()
        )

    def update_image(
        self,
        image_id: str,
        image: bytes | NotSetType = NOTSET,
        description: str | None | NotSetType = NOTSET,
        mime_type: ImageMimeType | str | NotSetType = NOTSET,
        metadata: Mapping[str, Any] | None | NotSetType = NOTSET,
        timestamp: str | datetime | None | NotSetType = NOTSET,
        ttl_days: float | None | NotSetType = NOTSET,
        ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET,
        **kwargs: Any,
    ) -> str:
        """Change an image: its bytes (``image`` and ``mime_type`` together), description
        (``None`` writes a new caption), metadata, timestamp or time to live. Through a thread
        handle, only the thread's own images."""
        reject_unknown_kwargs("update_image", kwargs)
        request = UpdateImage(**named_arguments(locals()))
        return self._services.images.update_image(request, limits=self._image_limits(None), owner=self._scope_thread())

    def delete_image(self, image_id: str) -> int:
        """Delete a standalone image: 1, or 0 when there is none (through a thread handle: 0
        for any image that is not the thread's); an attached image is refused."""
        return self._services.images.delete_image(image_id, owner=self._scope_thread())

    def _list_images(self, request: ListImages) -> list[ImageRecord]:
        """What both facades' ``list_images`` return (a thread handle's scope is its thread's)."""
        return self._services.images.list_images(request, owner=self._scope_thread())
