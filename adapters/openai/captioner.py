"""Adapters layer (OpenAI-compatible): ``OpenAIImageCaptioner``, image descriptions from a vision chat model."""

from __future__ import annotations

from .chat import OpenAIChatModel
from .errors import ModelOutputError
from .prompts import CAPTION_PROMPT, CAPTION_SYSTEM_PROMPT

__all__ = ["OpenAIImageCaptioner"]

MAX_CAPTION_CHARS = 2000
"""A longer answer is cut: a description is a search text, not a report."""


class OpenAIImageCaptioner:
    """The application's ``ImageCaptioner`` on an OpenAI-compatible chat model that takes images
    (a vision model): one request per image, the image sent as a base64 ``data:`` URL, the answer
    used as the image's description. Retries and token accounting are the chat model's (its
    ``usage`` records these calls as ``"image_caption"``)."""

    def __init__(self, chat: OpenAIChatModel) -> None:
        self._chat = chat

    @property
    def model(self) -> OpenAIChatModel:
        return self._chat

    def describe(self, image: bytes, mime_type: str) -> str:
        text = self._chat.complete_with_image(
            CAPTION_SYSTEM_PROMPT, CAPTION_PROMPT, image, mime_type, name="image_caption"
        )
        if not text:
            raise ModelOutputError("image_caption: the model returned an empty description.")
        return text[:MAX_CAPTION_CHARS]

    def __repr__(self) -> str:
        return f"OpenAIImageCaptioner({self._chat!r})"
