"""Application layer: the default sink of domain events, a readable log of link and lifecycle changes.

``RecordService`` hands every committed event (a link created, retyped or deleted; a record
invalidated or revalidated by a lifecycle link) to its sink. Unless a caller passes its own,
the sink is :func:`log_event`, which writes one DEBUG line per event to the
``palimpsest.events`` logger: turn that logger on to watch why a memory became history.
"""

from __future__ import annotations

import logging

from palimpsest.domain.errors import AgentMemoryError
from palimpsest.domain.events import (
    DomainEvent,
    LinkCreated,
    LinkDeleted,
    LinkUpdated,
    RecordInvalidated,
    RecordRevalidated,
)
from palimpsest.domain.model import RecordLink

__all__ = ["EVENT_LOGGER", "describe_event", "log_event", "log_failure"]

EVENT_LOGGER = "palimpsest.events"
"""The name of the logger :func:`log_event` writes to."""

_log = logging.getLogger(EVENT_LOGGER)


def _link(link: RecordLink) -> str:
    return f"{link.id} ({link.source_id} {link.relation_type} {link.target_id})"


def describe_event(event: DomainEvent) -> str:
    """One plain sentence for an event, naming the ids involved."""
    if isinstance(event, LinkCreated):
        return f"link {_link(event.link)} created"
    if isinstance(event, LinkUpdated):
        return f"link {_link(event.before)} retyped to {event.after.relation_type}"
    if isinstance(event, LinkDeleted):
        return f"link {_link(event.link)} deleted"
    if isinstance(event, RecordInvalidated):
        return f"record {event.record_id} invalidated by link {event.by_link_id}: {event.reason}"
    if isinstance(event, RecordRevalidated):
        return f"record {event.record_id} valid again"
    return repr(event)


def log_event(event: DomainEvent) -> None:
    """The default event sink: a DEBUG line on the ``palimpsest.events`` logger."""
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug("%s", describe_event(event))


def log_failure(logger: logging.Logger, error: BaseException, message: str, *args: object) -> None:
    """Log a failure the library recovers from (a summary falls back to a transcript, say) as
    one WARNING line ending in the error's type and message, its traceback at DEBUG only: a
    model server that is down must not fill a script's stderr with tracebacks. An error from
    outside the library's own tree (``AgentMemoryError``), a bug most likely, keeps its
    traceback at WARNING."""
    if not isinstance(error, AgentMemoryError):
        logger.warning(message, *args, exc_info=error)
        return
    logger.warning("%s (%s)", message % args if args else message, " ".join(f"{type(error).__name__}: {error}".split()))
    logger.debug("the traceback of that failure:", exc_info=error)
