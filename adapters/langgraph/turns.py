"""Adapters layer (LangGraph): keeping a palimpsest thread in line with a LangGraph conversation.

:func:`sync_turns` makes the thread hold what the conversation holds, and is called by the
middleware at each of its hooks:

* **New turns** (``HumanMessage``/``AIMessage`` with text; tool results, system messages and the
  card are not turns) are appended, in order. A turn's palimpsest id derives from the thread and
  its LangChain ``id`` (one is given when missing), so a turn is stored once however often it is
  seen, by however many workers or restarted processes: an id already stored is not written again,
  and a racing second write is refused as a duplicate id.
* **Re-sent turns without their id.** A stateless server (the OpenAI-style API) receives the
  whole history with every request and LangGraph gives each message a fresh id, so ids cannot
  recognise them. The turns that come before any known one are matched by role, text and
  position: the longest run of them, from the first, that appears in order among the stored turns
  and ends with the thread's last one (or the one just before the first known turn) re-sends
  them; the rest are new. So a history re-sent whole, as its newest window, with turns left out,
  or a retried request, adds only what it adds; a user who says "ok" twice is stored twice, since
  the second "ok" comes after the thread's last turn.
* **Re-sent turns with a checkpointer.** A client that re-sends its whole history to an agent
  with a checkpointer adds copies, with fresh ids, after the turns the checkpointed state already
  holds. The unknown turns after the last known one are matched the same way against every stored
  turn (those the state holds included); the matched ones are copies: they are not stored again,
  and the middleware removes them from the state, which holds each turn once.
* **Removals and edits.** The state channel ``palimpsest_turns`` (private to the middleware,
  kept by a checkpointer) maps the ids of the turns in the state to their stored messages and the
  text stored. A turn that was in it and is gone from the state was removed (``RemoveMessage``,
  ``REMOVE_ALL_MESSAGES`` without putting it back): its stored message is deleted, unless the turn
  was a re-send recognised by content (it is still in the client's history, which the next
  request re-sends: a trim of a stateless request's prompt deletes nothing). A turn whose
  text changed under the same id was edited: the stored message is updated. The middleware's own
  compaction is not a removal: it keeps in the channel only the turns of the tail it keeps.
  Neither is another middleware's summary (LangChain's ``SummarizationMiddleware`` removes the
  messages it summarises and puts its summary in their place): when a summary message the channel
  has not seen appears, the turns gone with it were summarised, not deleted, and stay stored; the
  summary itself is not a turn.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import BaseMessage
from palimpsest.application import MemoryThread
from palimpsest.domain.errors import DuplicateIdError, MessageNotFoundError
from palimpsest.domain.model import MAX_SPEAKER_LENGTH, Message

from .messages import (
    MESSAGE_METADATA_KEY,
    is_summary_message,
    message_role,
    message_text,
    palimpsest_message_id,
)

__all__ = ["TURNS_KEY", "TurnEntry", "sync_turns", "turn_of", "write_turns"]

log = logging.getLogger("palimpsest")

TURNS_KEY: Final = "palimpsest_turns"
"""The middleware's private state channel: ``{langchain id: [palimpsest id, text digest, how]}``."""

TurnEntry = list[str]
"""``[palimpsest message id, digest of the text stored, "id" or "resent"]``: ``resent`` for a turn
recognised by its content, which belongs to the client's history rather than to this state."""

_BY_ID: Final = "id"
_RESENT: Final = "resent"
_COPY: Final = "copy"
"""A re-sent copy of a turn the state or the thread already holds (removed from the state)."""
_SUMMARY: Final = "summary"
"""The channel's mark of another middleware's summary message (no stored message)."""

_WRITE_ATTEMPTS: Final = 3


@dataclass(slots=True)
class _Turn:
    message: BaseMessage
    role: str
    text: str
    name: str | None
    stored_id: str | None = None
    stored_digest: str | None = None
    how: str = _BY_ID

    @property
    def sid(self) -> str:
        return str(self.message.id)

    @property
    def fingerprint(self) -> tuple[str, str]:
        return (self.role, self.text)


def turn_of(message: BaseMessage) -> tuple[str, str] | None:
    """(role, text) of a turn palimpsest keeps, else ``None``."""
    role = message_role(message)
    if role is None:
        return None
    text = message_text(message).strip()
    return (role, text) if text else None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sync_turns(
    thread: MemoryThread, messages: Sequence[BaseMessage], previous: Mapping[str, Any] | None
) -> tuple[dict[str, TurnEntry], list[str]]:
    """Make ``thread`` hold the turns of ``messages`` (see the module docs); returns the new
    ``palimpsest_turns`` channel and the ids of the re-sent copies the state should drop.
    ``previous`` is the channel as the state holds it."""
    known: dict[str, TurnEntry] = {
        str(k): [str(v[0]), str(v[1]), str(v[2])]
        for k, v in (previous or {}).items()
        if isinstance(v, (list, tuple)) and len(v) == 3
    }
    turns = _turns(messages)
    for turn in turns:
        entry = known.get(turn.sid)
        if entry is not None:
            turn.stored_id, turn.stored_digest, turn.how = entry
            continue
        stored = _stored(thread, palimpsest_message_id(thread.thread_id, turn.sid))
        if stored is not None:
            turn.stored_id, turn.stored_digest = stored.id, digest(stored.content)
    _align_resent(thread, turns)
    _align_copies(thread, turns)
    copies = [t.sid for t in turns if t.how == _COPY]
    turns = [t for t in turns if t.how != _COPY]

    summaries = [str(m.id) for m in messages if is_summary_message(m) and m.id]
    summarised = any(sid not in known for sid in summaries)  # a new summary replaced turns
    present = {t.sid for t in turns} | {t.stored_id for t in turns if t.stored_id is not None}
    for sid, (stored_id, _digest, how) in known.items():
        # A re-sent turn dropped from this state is still in the client's history: kept; so is
        # a turn another middleware summarised (gone with a new summary in its place).
        if sid not in present and stored_id not in present and how not in (_RESENT, _SUMMARY) and not summarised:
            thread.delete_message(stored_id)  # removed from the conversation

    fresh = [t for t in turns if t.stored_id is None]
    if fresh:
        write_turns(thread, [(t.sid, t.role, t.text, t.message.type, t.name) for t in fresh])
        for turn in fresh:
            turn.stored_id = palimpsest_message_id(thread.thread_id, turn.sid)
            turn.stored_digest = digest(turn.text)
    for turn in turns:
        if turn.stored_digest != digest(turn.text) and turn.stored_id is not None:
            try:
                thread.update_message(turn.stored_id, content=turn.text)  # edited under the same id
            except MessageNotFoundError:
                write_turns(thread, [(turn.sid, turn.role, turn.text, turn.message.type, turn.name)])
                turn.stored_id = palimpsest_message_id(thread.thread_id, turn.sid)
            turn.stored_digest = digest(turn.text)
    channel = {t.sid: [str(t.stored_id), str(t.stored_digest), t.how] for t in turns}
    channel.update({sid: ["", "", _SUMMARY] for sid in summaries})
    return channel, copies


def _turns(messages: Sequence[BaseMessage]) -> list[_Turn]:
    turns: list[_Turn] = []
    seen: set[str] = set()
    for message in messages:
        turn = turn_of(message)
        if turn is None:
            continue
        if not message.id:
            message.id = str(uuid.uuid4())
        if message.id in seen:  # the same message twice in one list is one turn
            continue
        seen.add(message.id)
        name = message.name if isinstance(message.name, str) and message.name.strip(" ") else None
        turns.append(_Turn(message, turn[0], turn[1], name))
    return turns


def _align_resent(thread: MemoryThread, turns: list[_Turn]) -> None:
    """Match the unknown turns before the first known one with the stored turns they re-send.

    The re-sent turns are the longest run ``turns[:k]`` that appears, in order, among the stored
    turns (gaps allowed: a client may leave some out, or a trim may have) with its last turn the
    thread's last (or the one just before the first known turn); the turns after it are new."""
    lead = 0
    while lead < len(turns) and turns[lead].stored_id is None:
        lead += 1
    if lead == 0:
        return
    stored = thread.get_messages(start=0, end=None)
    claimed = {t.stored_id for t in turns if t.stored_id is not None}
    end = len(stored)
    if lead < len(turns):  # the re-sent turns end just before the first known one
        anchor = turns[lead].stored_id
        end = next((i for i, m in enumerate(stored) if m.id == anchor), len(stored))
    candidates = [(m.role, m.content) if m.id not in claimed else None for m in stored[:end]]
    if not candidates:
        return
    for size in range(lead, 0, -1):
        if turns[size - 1].fingerprint != candidates[-1]:
            continue  # the run must end with the thread's last turn
        matched = _match_in_order([t.fingerprint for t in turns[:size]], candidates)
        if matched is not None:
            for turn, index in zip(turns[:size], matched):
                message = stored[index]
                turn.stored_id, turn.stored_digest, turn.how = message.id, digest(message.content), _RESENT
            return


def _align_copies(thread: MemoryThread, turns: list[_Turn]) -> None:
    """Mark the unknown turns after the last known one that re-send stored turns as copies.

    With a checkpointer, a client re-sending its history appends copies of turns the state holds
    (or held before a compaction). The copies are the longest run from the first unknown turn
    that appears in order among all stored turns and ends with the thread's last; the turns after
    it are new (a repeated "ok" follows the thread's last turn, so it is new)."""
    last_known = max((i for i, t in enumerate(turns) if t.stored_id is not None), default=None)
    if last_known is None or last_known == len(turns) - 1:
        return
    trailing = turns[last_known + 1 :]
    stored = thread.get_messages(start=0, end=None)
    candidates: list[tuple[str, str] | None] = [(m.role, m.content) for m in stored]
    if not candidates:
        return
    for size in range(len(trailing), 0, -1):
        if trailing[size - 1].fingerprint != candidates[-1]:
            continue
        if _match_in_order([t.fingerprint for t in trailing[:size]], candidates) is not None:
            for turn in trailing[:size]:
                turn.how = _COPY
            return


def _match_in_order(wanted: list[tuple[str, str]], candidates: list[tuple[str, str] | None]) -> list[int] | None:
    """Indexes of ``candidates`` matching ``wanted`` in order, the last at the last candidate
    (matched from the end, each as late as possible), or ``None``."""
    indexes: list[int] = []
    position = len(candidates) - 1
    for fingerprint in reversed(wanted):
        while position >= 0 and candidates[position] != fingerprint:
            if not indexes:
                return None  # the last wanted turn must be the last candidate
            position -= 1
        if position < 0:
            return None
        indexes.append(position)
        position -= 1
    return indexes[::-1]


def write_turns(thread: MemoryThread, turns: Sequence[tuple[str, str, str, str, str | None]]) -> None:
    """Append ``(langchain id, role, text, message type, name)`` turns, each under its stable
    palimpsest id; a turn another writer stored meanwhile is not written twice."""
    payload = [
        {
            "id": palimpsest_message_id(thread.thread_id, lc_id),
            "role": role,
            "content": text,
            "name": name[:MAX_SPEAKER_LENGTH] if name else None,  # a participant's name: the speaker
            "metadata": {MESSAGE_METADATA_KEY: {"message_id": lc_id, "message_type": kind}},
        }
        for lc_id, role, text, kind, name in turns
    ]
    try:
        thread.add_messages(payload)
        return
    except DuplicateIdError:
        pass  # another writer got there first with some of them, or took our sequence slot
    for one, (lc_id, *_rest) in zip(payload, turns):
        for _attempt in range(_WRITE_ATTEMPTS):
            if _stored(thread, str(one["id"])) is not None:
                break
            try:
                thread.add_messages([one])
                break
            except DuplicateIdError:
                continue
        else:
            log.warning("turn %s of thread %s could not be persisted (duplicate id)", lc_id, thread.thread_id)


def _stored(thread: MemoryThread, message_id: str) -> Message | None:
    try:
        return thread.get_message(message_id)
    except MessageNotFoundError:
        return None
