"""The typed requests of images, profiles, message listing and threads (``application/requests.py``):
the same value from keywords and from JSON, and each refusal a typed error."""

from __future__ import annotations

import base64
import inspect
import warnings

import pytest
from images_samples import png
from palimpsest.application import AgentMemory
from palimpsest.application.config import ImageInputLimitConfig, MemoryExtractionConfig, MemorySearchConfig
from palimpsest.application.requests import (
    AddImage,
    AddMemory,
    AddProfile,
    CreateThread,
    DeleteProfile,
    DeleteRecordLink,
    GetThread,
    ImageInput,
    LinkRecords,
    ListImages,
    ListMessages,
    ListProfiles,
    ThreadOptions,
    UpdateImage,
    UpdateMemory,
    UpdateMessage,
    UpdateRecordLink,
    UpdateThread,
    _Request,
    parse_image_part,
)
from palimpsest.domain import NOTSET
from palimpsest.domain.errors import ConfigurationError, InvalidSettingsError, ValidationError
from palimpsest.domain.images import ImageMimeType
from palimpsest.domain.model import RecordType

IMAGE = png(seed=1)
B64 = base64.b64encode(IMAGE).decode()


# -- images ------------------------------------------------------------------------------------


def test_add_image_from_json_takes_base64_text_or_a_data_url_whose_type_stands_for_mime_type() -> None:
    given = AddImage(IMAGE, "a lighthouse", "image/png", user_id="u", metadata={"k": 1}, ttl_days=3)
    as_text = AddImage.from_json(
        {"image": B64, "description": "a lighthouse", "mime_type": "image/png", "user_id": "u", "metadata": {"k": 1}, "ttl_days": 3}
    )
    as_url = AddImage.from_json(
        {"image": f"data:image/png;base64,{B64}", "description": "a lighthouse", "user_id": "u", "metadata": {"k": 1}, "ttl_days": 3}
    )
    assert as_text == given == as_url
    assert as_url.image == IMAGE and as_url.mime_type is ImageMimeType.PNG


def test_add_image_keeps_omitted_none_and_a_value_apart() -> None:
    omitted, cleared = AddImage(IMAGE, user_id="u"), AddImage(IMAGE, None, None, user_id="u", metadata=None)
    assert (omitted.description, omitted.mime_type, omitted.metadata) == (NOTSET, NOTSET, NOTSET)
    assert (cleared.description, cleared.mime_type, cleared.metadata) == (None, None, None)


def test_add_image_from_json_takes_its_limits_as_an_object() -> None:
    request = AddImage.from_json({"image": B64, "user_id": "u", "image_input_limit_config": {"max_raw_image_bytes": 9}})
    assert request.limits == ImageInputLimitConfig(max_raw_image_bytes=9)
    with pytest.raises(ValidationError, match="image_input_limit_config does not take: colour"):
        AddImage.from_json({"image": B64, "user_id": "u", "image_input_limit_config": {"colour": 1}})


@pytest.mark.parametrize(
    ("mapping", "error", "match"),
    [
        ({"image": B64, "user_id": "u", "colour": "red"}, ValidationError, "AddImage does not take: colour"),
        ({"image": 5, "user_id": "u"}, ValidationError, "image must be base64 text or a data URL"),
        ({"image": "not base64!", "user_id": "u"}, ValidationError, "image must be base64 text or a data URL"),
        ({"image": f"data:image/png,{B64}", "user_id": "u"}, ValidationError, "image must be base64 text or a data URL"),
        (
            {"image": f"data:image/png;base64,{B64}", "mime_type": "image/jpeg", "user_id": "u"},
            ValidationError,
            "mime_type differs",
        ),
        ({"image": B64, "mime_type": "image/gif", "user_id": "u"}, ValidationError, "mime_type must be one of"),
        ({"image": B64, "user_id": 5}, ValidationError, "user_id"),
        ({"image": B64, "user_id": "u", "description": ""}, ValidationError, "description must be a non-empty string"),
        ({"image": B64, "user_id": "u", "ttl_days": 0}, ValidationError, "ttl"),
        ({"image": B64, "user_id": "u", "timestamp": "yesterday"}, ValidationError, "ISO-8601"),
        ({"image": B64, "user_id": "u", "image_input_limit_config": 7}, ConfigurationError, "ImageInputLimitConfig"),
        ({"user_id": "u"}, ValidationError, "AddImage"),
        ([B64], ValidationError, "JSON object"),
    ],
)
def test_add_image_refusals_are_typed(mapping: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        AddImage.from_json(mapping)


def test_image_bytes_in_python_are_raw_bytes_only() -> None:
    with pytest.raises(ValidationError, match="image must be raw bytes"):
        AddImage(B64, user_id="u")  # type: ignore[arg-type]
    assert AddImage(bytearray(IMAGE), user_id="u").image == IMAGE  # type: ignore[arg-type]


def test_update_image_from_json_and_its_refusals() -> None:
    request = UpdateImage.from_json({"image_id": "i1", "image": f"data:image/png;base64,{B64}", "description": None})
    assert request == UpdateImage("i1", IMAGE, None, ImageMimeType.PNG)
    assert UpdateImage.from_json({"image_id": "i1", "ttl_days": None}).changes_expiry
    with pytest.raises(ValidationError, match="image and mime_type must be updated together"):
        UpdateImage.from_json({"image_id": "i1", "image": B64})
    with pytest.raises(ValidationError, match="Provide at least one of image"):
        UpdateImage.from_json({"image_id": "i1"})
    with pytest.raises(ValidationError, match="UpdateImage does not take: user_id"):
        UpdateImage.from_json({"image_id": "i1", "description": "x", "user_id": "u"})
    with pytest.raises(ValidationError, match="image_id"):
        UpdateImage.from_json({"image_id": 3, "description": "x"})


def test_list_images_from_json_and_its_refusals() -> None:
    assert ListImages.from_json({"image_id": "i1", "user_id": "u", "include_bytes": True, "limit": 2}) == ListImages(
        "i1", "u", include_bytes=True, limit=2
    )
    assert ListImages.from_json({"user_id": "u"}).limit is None
    with pytest.raises(ValidationError, match="include_bytes=True needs an image_id"):
        ListImages.from_json({"user_id": "u", "include_bytes": True})
    with pytest.raises(ValidationError, match="include_bytes must be True or False"):
        ListImages.from_json({"image_id": "i1", "user_id": "u", "include_bytes": "yes"})
    with pytest.raises(ValidationError, match="metadata_filter"):
        ListImages.from_json({"user_id": "u", "metadata_filter": ["k"]})
    with pytest.raises(ValidationError, match="ListImages does not take: bytes"):
        ListImages.from_json({"user_id": "u", "bytes": True})


def test_an_image_content_part_is_parsed_once_into_a_typed_value() -> None:
    assert parse_image_part({"type": "image", "data": B64, "mime_type": "image/png"}, 2) == ImageInput(
        2, IMAGE, ImageMimeType.PNG, NOTSET
    )
    assert parse_image_part({"type": "image", "bytes": IMAGE, "description": None}).caption is None
    with pytest.raises(ValidationError, match="mime_type must be one of"):
        parse_image_part({"type": "image", "bytes": IMAGE, "mime_type": "image/gif"})
    with pytest.raises(ValidationError, match="description must be a non-empty string"):
        parse_image_part({"type": "image", "bytes": IMAGE, "description": 4})


# -- profiles ----------------------------------------------------------------------------------


def test_profile_requests_from_json_name_their_kind() -> None:
    assert AddProfile.from_json(
        {"kind": "user_profile", "profile_id": "u1", "information": "likes tea", "metadata": None}
    ) == AddProfile(RecordType.USER_PROFILE, "u1", "likes tea", None)
    assert AddProfile(RecordType.AGENT_PROFILE, "a1", "x").owner == "agent_id"
    assert DeleteProfile.from_json({"kind": "agent_profile", "profile_id": "a1", "cascade": False}) == DeleteProfile(
        RecordType.AGENT_PROFILE, "a1", False
    )
    assert ListProfiles.from_json({"kind": "user_profile", "limit": 3}) == ListProfiles(RecordType.USER_PROFILE, limit=3)
    assert ListProfiles(RecordType.USER_PROFILE).limit is None


@pytest.mark.parametrize(
    ("cls", "mapping", "match"),
    [
        (AddProfile, {"kind": "memory", "profile_id": "u1", "information": "x"}, "is not a profile type"),
        (AddProfile, {"kind": "user_profile", "profile_id": "u1", "information": ""}, "non-empty string"),
        (AddProfile, {"kind": "user_profile", "profile_id": "u1", "information": None}, "cannot be None"),
        (AddProfile, {"kind": "user_profile", "profile_id": 1, "information": "x"}, "user_id"),
        (AddProfile, {"kind": "user_profile", "profile_id": "u1", "information": "x", "metadata": 3}, "metadata"),
        (AddProfile, {"kind": "user_profile", "user_id": "u1", "information": "x"}, "does not take: user_id"),
        (DeleteProfile, {"kind": "user_profile", "profile_id": "u1", "cascade": "yes"}, "cascade must be True or False"),
        (DeleteProfile, {"kind": "agent_profile", "profile_id": ""}, "agent_id"),
        (ListProfiles, {"kind": "image"}, "is not a profile type"),
    ],
)
def test_profile_refusals_are_validation_errors(cls: type[AddProfile], mapping: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        cls.from_json(mapping)


# -- message listing and editing ---------------------------------------------------------------


def test_list_messages_from_json_and_its_refusals() -> None:
    request = ListMessages.from_json({"user_id": "u", "thread_id": None, "limit": 4, "include_image_bytes": True})
    assert request == ListMessages("u", NOTSET, None, NOTSET, 4, True)
    assert request.image_bytes and not ListMessages().image_bytes
    assert (ListMessages().user_id, ListMessages(None).user_id) == (NOTSET, None)
    with pytest.raises(ValidationError, match="include_image_bytes must be True or False"):
        ListMessages.from_json({"include_image_bytes": 1})
    with pytest.raises(ValidationError, match="agent_id"):
        ListMessages.from_json({"agent_id": 7})
    with pytest.raises(ValidationError, match="ListMessages does not take: role"):
        ListMessages.from_json({"role": "user"})


def test_update_message_takes_text_or_text_parts() -> None:
    assert UpdateMessage.from_json({"message_id": "m1", "content": [{"type": "text", "text": "hi"}]}).content == "hi"
    assert UpdateMessage("m1", metadata=None).content is NOTSET
    with pytest.raises(ValidationError, match="omit content to preserve it"):
        UpdateMessage.from_json({"message_id": "m1", "content": None})
    with pytest.raises(ValidationError, match="its images stay as they are"):
        UpdateMessage("m1", [{"type": "image", "bytes": IMAGE}])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="UpdateMessage does not take: role"):
        UpdateMessage.from_json({"message_id": "m1", "role": "user"})


# -- threads -----------------------------------------------------------------------------------


def test_thread_requests_from_json_take_their_configurations_as_objects() -> None:
    request = CreateThread.from_json(
        {
            "thread_id": "t1",
            "user_id": "u1",
            "metadata": {"topic": "tea"},
            "memory_extraction_config": {"memory_extraction_frequency": 3},
            "search_config": {"type": "base", "token_budget": 2000},
            "image_input_limit_config": {"max_images_per_llm_request": 2},
            "max_message_token_length": 500,
        }
    )
    assert request == CreateThread(
        thread_id="t1",
        user_id="u1",
        metadata={"topic": "tea"},
        memory_extraction_config=MemoryExtractionConfig(memory_extraction_frequency=3),
        search_config=MemorySearchConfig(token_budget=2000),
        image_input_limit_config=ImageInputLimitConfig(max_images_per_llm_request=2),
        max_message_token_length=500,
    )
    assert GetThread.from_json({"thread_id": "t1", "context_card_token_limit": 9}) == GetThread(
        thread_id="t1", context_card_token_limit=9
    )
    assert UpdateThread.from_json({"thread_id": "t1", "metadata": None}).metadata is None


@pytest.mark.parametrize(
    ("cls", "mapping", "error", "match"),
    [
        (CreateThread, {"thread_id": "t1", "colour": 1}, ValidationError, "CreateThread does not take: colour"),
        (CreateThread, {"thread_id": 4}, ValidationError, "thread_id"),
        (CreateThread, {"user_id": 4}, ValidationError, "user_id"),
        (CreateThread, {"metadata": "x"}, ValidationError, "metadata"),
        (CreateThread, {"llm": "gpt"}, ConfigurationError, "llm= on a thread"),
        # Settings in a JSON object are the caller's to fix: a ValidationError (still a ConfigurationError).
        (CreateThread, {"llm": "gpt"}, InvalidSettingsError, "llm= on a thread"),
        (CreateThread, {"search_config": {"type": "nope"}}, InvalidSettingsError, "search_config type"),
        (CreateThread, {"memory_extraction_frequency": 1.5}, ValidationError, "does not take: memory_extraction_frequency"),
        (UpdateThread, {"thread_id": "t1", "enable_context_summary": False}, ValidationError, "does not take"),
        (
            CreateThread,
            {"memory_extraction_config": {"memory_extraction_frequency": 3, "speed": 1}},
            ValidationError,
            "memory_extraction_config does not take: speed",
        ),
        (GetThread, {}, ValidationError, "GetThread"),
        (
            UpdateThread,
            {"thread_id": "t1", "context_card_type_search_concurrency": 2},
            ValidationError,
            "UpdateThread does not take: context_card_type_search_concurrency",
        ),
        (UpdateThread, {"thread_id": "t1", "user_id": "u2"}, ValidationError, "UpdateThread does not take: user_id"),
    ],
)
def test_thread_request_refusals_are_typed(
    cls: type[ThreadOptions], mapping: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        cls.from_json(mapping)


def test_the_deprecated_extraction_keywords_fold_into_the_config_once() -> None:
    with pytest.warns(DeprecationWarning, match="memory_extraction_frequency: pass memory_extraction_config"):
        request = CreateThread(thread_id="t1", memory_extraction_frequency=3)
    assert request.memory_extraction_config == MemoryExtractionConfig(memory_extraction_frequency=3)
    assert request.memory_extraction_frequency is NOTSET
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CreateThread.from_json({"thread_id": "t1", "memory_extraction_config": {"memory_extraction_frequency": 3}})
    with pytest.raises(ConfigurationError, match="not both"):
        GetThread(
            thread_id="t1",
            memory_extraction_config=MemoryExtractionConfig(),
            memory_extraction_frequency=3,
        )


@pytest.mark.parametrize(
    ("method", "request_class"),
    [
        ("create_thread", CreateThread),
        ("get_thread", GetThread),
        ("update_thread", UpdateThread),
        ("add_memory", AddMemory),
        ("update_memory", UpdateMemory),
        ("link_records", LinkRecords),
        ("update_record_link", UpdateRecordLink),
        ("delete_record_link", DeleteRecordLink),
        ("add_image", AddImage),
        ("update_image", UpdateImage),
    ],
)
def test_each_command_built_from_its_named_arguments_takes_its_requests_fields(
    method: str, request_class: type[_Request]
) -> None:
    """The facade builds these requests from its own named arguments, so the two lists are one."""
    parameters = inspect.signature(getattr(AgentMemory, method)).parameters
    named = {name for name, p in parameters.items() if name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD}
    assert named == set(request_class._json_fields()) | request_class.KEYWORD_ONLY_FIELDS
