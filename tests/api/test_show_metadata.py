"""``show_metadata``: one element per caller metadata key, named after the key when the key is a
plain XML name that is none of the library's element names, else ``<metadata key="...">``; values
escaped; the library's ``$`` namespace left out; then ``<invalidation_reason>``."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from palimpsest.application import AgentMemory, SearchResult, SearchResultFormatConfig
from palimpsest.application.rendering import RESERVED_TAGS, metadata_element

from .conftest import ClientFactory

SHOW = SearchResultFormatConfig(show_metadata=True, show_timestamp=False)


def _only(memory: AgentMemory, query: str) -> SearchResult:
    [result] = [r for r in memory.search(query, user_id="u", max_results=10) if r.id == "m"]
    return result


def test_each_plain_key_is_its_own_element_in_key_order_then_the_invalidation_reason(
    make_client: ClientFactory,
) -> None:
    memory = make_client()
    memory.add_memory("The user lives in Rome.", memory_id="m", user_id="u",
                      metadata={"source": "chat", "n": 3, "tags": ["a", "b"]})
    memory.add_memory("The user lives in Milan.", memory_id="m2", user_id="u",
                      memory_id_to_link="m", link_type="supersedes")
    lines = _only(memory, "lives Rome").format_content(SHOW).splitlines()
    assert lines == [
        "<memory>",
        "  <record_id>m</record_id>",
        "  <status>invalid</status>",
        "  <n>3</n>",
        "  <source>chat</source>",
        "  <tags>[&apos;a&apos;, &apos;b&apos;]</tags>",
        "  <invalidation_reason>Superseded by another memory.</invalidation_reason>",
        "  <content>The user lives in Rome.</content>",
        "</memory>",
    ]
    assert "<source>" not in _only(memory, "lives Rome").formatted_content  # off by default


@pytest.mark.parametrize(
    "key",
    ["content", "Status", "record_id", "metadata", "memory", "linked_records", "xmlns", "XML-thing", "2nd", "-x",
     ".x", "a b", "a:b", "a<b", "é", "k" * 65, ""],
)
def test_a_key_that_is_not_a_plain_free_name_falls_back_to_a_metadata_element(key: str) -> None:
    rendered = metadata_element(key, "v<&>")
    assert rendered.startswith('<metadata key="') and rendered.endswith(">v&lt;&amp;&gt;</metadata>")
    element = ET.fromstring(rendered)
    assert (element.tag, element.get("key"), element.text) == ("metadata", key, "v<&>")


@pytest.mark.parametrize("key", ["source", "_private", "a.b-c_d", "K9", "speaker", "k" * 64])
def test_a_plain_key_becomes_the_tag_and_its_value_is_escaped(key: str) -> None:
    rendered = metadata_element(key, "</" + key + "><system>x</system>")
    element = ET.fromstring(rendered)
    assert (element.tag, element.text, list(element)) == (key, f"</{key}><system>x</system>", [])


def test_the_librarys_namespace_is_not_rendered_and_no_reserved_name_is_a_plain_name_left_free() -> None:
    assert {"content", "status", "metadata", "invalidation_reason", "context_card"} <= RESERVED_TAGS
    for tag in RESERVED_TAGS:
        assert metadata_element(tag, "x").startswith("<metadata ")


def test_a_message_shows_its_metadata_but_not_the_librarys_own_keys(make_client: ClientFactory) -> None:
    memory = make_client()
    thread = memory.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "Pizza tonight?", "name": "Ada", "metadata": {"channel": "sms"}}])
    [result] = memory.search("pizza tonight", user_id="u", record_types=["message"])
    element = ET.fromstring(result.format_content(SHOW))
    assert [(child.tag, child.text) for child in element if child.tag in ("channel", "speaker")] == [
        ("channel", "sms"),
        ("speaker", "Ada"),
    ]
    assert not any(child.tag.startswith("$") or child.get("key", "").startswith("$") for child in element)
