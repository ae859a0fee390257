"""The facades build the typed requests of images, profiles, message listing and threads: a value
of the wrong type is a typed error (an ``AgentMemoryError``) raised before anything is written,
through the client and through a thread handle alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from images_samples import png
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError, ValidationError
from palimpsest.domain.ports import MemoryStore

from .helpers import ARGUMENT_CHECK, snapshot

pytestmark = ARGUMENT_CHECK

IMAGE = png(seed=5)

CALLS: list[tuple[str, Callable[[AgentMemory], Any], type[AgentMemoryError]]] = [
    ("add_image base64 text", lambda m: m.add_image("iVBORw0KGgo=", "x", user_id="u"), ValidationError),  # type: ignore[arg-type]
    ("add_image limits None", lambda m: m.add_image(IMAGE, "x", user_id="u", image_input_limit_config=None), ConfigurationError),  # type: ignore[arg-type]
    ("add_image mime", lambda m: m.add_image(IMAGE, "x", "image/gif", user_id="u"), ValidationError),
    ("thread add_image scope", lambda m: m.get_thread("t1").add_image(IMAGE, "x", user_id=5), ValidationError),  # type: ignore[arg-type]
    ("update_image bytes alone", lambda m: m.update_image("i1", IMAGE), ValidationError),
    ("update_image metadata", lambda m: m.update_image("i1", metadata=[1]), ValidationError),  # type: ignore[arg-type]
    ("list_images include_bytes", lambda m: m.list_images(user_id="u", include_bytes=1), ValidationError),  # type: ignore[arg-type]
    ("add_user information", lambda m: m.add_user("u2", 3), ValidationError),  # type: ignore[arg-type]
    ("add_agent metadata", lambda m: m.add_agent("a2", "x", metadata="m"), ValidationError),  # type: ignore[arg-type]
    ("delete_user cascade", lambda m: m.delete_user("u1", cascade="yes"), ValidationError),  # type: ignore[arg-type]
    ("list_users limit", lambda m: m.list_users(limit="3"), ValidationError),  # type: ignore[arg-type]
    ("list_messages user", lambda m: m.list_messages(user_id=3), ValidationError),  # type: ignore[arg-type]
    ("list_messages bytes", lambda m: m.list_messages(include_image_bytes="yes"), ValidationError),  # type: ignore[arg-type]
    ("create_thread metadata", lambda m: m.create_thread(thread_id="t2", metadata=[1]), ValidationError),  # type: ignore[arg-type]
    ("create_thread llm", lambda m: m.create_thread(thread_id="t2", llm="gpt"), ConfigurationError),  # type: ignore[arg-type]
    ("create_thread token length", lambda m: m.create_thread(thread_id="t2", max_message_token_length="9"), ValidationError),  # type: ignore[arg-type]
    ("get_thread id", lambda m: m.get_thread(7), ValidationError),  # type: ignore[arg-type]
    ("update_thread metadata", lambda m: m.update_thread("t1", metadata="m"), ValidationError),  # type: ignore[arg-type]
    ("update_thread limits", lambda m: m.update_thread("t1", image_input_limit_config={"x": 1}), ConfigurationError),  # type: ignore[arg-type]
    ("update_message content", lambda m: m.get_thread("t1").update_message("m1", None), ValidationError),  # type: ignore[arg-type]
    ("update_message ttl", lambda m: m.get_thread("t1").update_message("m1", ttl_days="1"), ValidationError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("name", "call", "error"), CALLS, ids=[c[0] for c in CALLS])
def test_a_wrong_type_is_a_typed_error_and_writes_nothing(
    memory: AgentMemory, store: MemoryStore, name: str, call: Callable[[AgentMemory], Any], error: type[AgentMemoryError]
) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    thread.add_messages([{"role": "user", "content": "hello", "id": "m1"}])
    memory.add_user("u1", "likes tea")
    memory.add_image(IMAGE, "a lighthouse", image_id="i1", user_id="u1")
    before = snapshot(store)
    with pytest.raises(error):
        call(memory)
    assert snapshot(store) == before
