"""The seed examples in ``examples/`` run offline and show what the seeds show."""

from __future__ import annotations

import runpy
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from palimpsest.application import SearchResult
from palimpsest.domain import RecordStatus, RecordType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


@pytest.fixture
def run_example(tmp_path: Path) -> Iterator[Any]:
    """``run_example(name, client_name)`` runs ``main`` on a store in tmp_path; closes it after."""
    opened: list[Any] = []

    def run(name: str, client_name: str) -> dict[str, Any]:
        folder = tmp_path / name
        folder.mkdir()
        names = _load(name)["main"](folder)
        opened.append(names[client_name])
        return names

    yield run
    for client in opened:
        client.close()
        client.store.close()  # idempotent; the hand-built clients do not own their store


@pytest.mark.parametrize("name", ["linked_memory_graph", "customize_context_card", "short_term_context_card"])
def test_each_example_runs_as_a_script(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    assert "<" in capsys.readouterr().out


def test_the_langgraph_example_runs_as_a_script_and_prints_the_injected_card(capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 001's listing with its canned chat model: the third turn crosses the seed's 6,000-token
    trigger, so it prints the injected card (topics, summary, relevant information), then the answer."""
    pytest.importorskip("langchain.agents", reason="the LangGraph example needs the optional extra 'langgraph'")
    names = runpy.run_path(str(EXAMPLES / "langgraph_short_term_memory.py"), run_name="__main__")
    printed = capsys.readouterr().out
    card_text, answer = printed.rsplit("</context_card>\n", 1)
    card = ET.fromstring(card_text + "</context_card>")
    assert [child.tag for child in card] == ["topics", "summary", "relevant_information"]
    topics = card.find("topics")
    assert topics is not None and len(topics) > 0 and "Maya" in (card.findtext("summary") or "")
    assert answer.strip() == names["FINAL_REPLY"]


# -- seed 004: linked memory graphs ----------------------------------------------------------
# The example builds the seed's own client, ``open_memory(path, memory_extraction_config=
# MemoryExtractionConfig(extract_memories=False))``: the offline link rules are wired, but they
# are not a model, so the three add_memory calls link nothing and the listing's links succeed.


def _tree(result: SearchResult) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []

    def walk(node: SearchResult, depth: int) -> None:
        for link, child in node.linked_results:
            out.append((depth, link.relation_type if link.source_id == node.id else link.opposite_relation_type, child.id))
            walk(child, depth + 1)

    walk(result, 1)
    return out


def test_the_graph_example_finds_the_current_preference_with_its_history_nested(
    run_example: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    names = run_example("linked_memory_graph", "memory")
    [result] = names["results"]
    assert result.id == "pizza-neapolitan-sourdough"
    assert _tree(result) == [(1, "refines", "pizza-sourdough"), (2, "supersedes", "pizza-thin-crust")]
    printed = ET.fromstring(capsys.readouterr().out)
    assert printed.tag == "preference" and printed.findtext("record_id") == "pizza-neapolitan-sourdough"
    assert not {e.tag for e in printed.iter()} & {"timestamp", "role", "status"}
    [refines] = printed.find("linked_records")  # type: ignore[misc]
    assert refines.findtext("relation_type") == "refines"
    sourdough = refines.find("preference")
    assert sourdough is not None and sourdough.findtext("content") == "The user now prefers sourdough pizza."
    [supersedes] = sourdough.find("linked_records")  # type: ignore[misc]
    assert supersedes.findtext("relation_type") == "supersedes"
    assert supersedes.findtext("preference/content") == "The user's preferred pizza style is thin crust."


def test_the_graph_example_hides_the_invalid_only_history_by_default(run_example: Any) -> None:
    [result] = run_example("linked_memory_graph", "memory")["results"]
    default = ET.fromstring(result.formatted_content)
    assert default.find("linked_records") is None, "sourdough and thin crust are both invalid: branch dropped"
    assert default.findtext("status") == "valid"


def test_the_graph_example_leaves_superseded_and_refined_preferences_invalid(run_example: Any) -> None:
    names = run_example("linked_memory_graph", "memory")
    memory = names["memory"]
    records = {r.id: r for r in memory.list_memories(user_id="graph-demo-user")}
    assert records["pizza-thin-crust"].status is RecordStatus.INVALID
    assert records["pizza-thin-crust"].invalidation_reason == "Superseded by another memory."
    assert records["pizza-sourdough"].status is RecordStatus.INVALID
    assert records["pizza-sourdough"].invalidation_reason == "Refined by another memory."
    assert records["pizza-neapolitan-sourdough"].status is RecordStatus.VALID
    assert all(r.record_type is RecordType.PREFERENCE for r in records.values())


def test_the_graph_example_edits_and_deletes_links_with_statuses_recomputed(run_example: Any) -> None:
    names = run_example("linked_memory_graph", "memory")
    memory, store = names["memory"], names["memory"].store
    with store.unit_of_work() as uow:
        assert uow.links.get(names["supersedes_link_id"]) is None, "the first supersedes link was deleted by id"
        supersedes = uow.links.find("pizza-sourdough", "pizza-thin-crust", "supersedes")
        assert uow.links.find("pizza-neapolitan-sourdough", "pizza-sourdough", "refines") is not None
    assert supersedes is not None

    def status(record_id: str) -> RecordStatus:
        return {r.id: r.status for r in memory.list_memories()}[record_id]

    # The listing's edit steps, replayed on the recreated links.
    memory.update_record_link(supersedes.id, relation_type="supports", metadata={"reviewed_by": "preference-service"})
    assert status("pizza-thin-crust") is RecordStatus.VALID
    assert status("pizza-sourdough") is RecordStatus.INVALID
    assert memory.delete_record_link(relation_id=supersedes.id) == 1
    assert memory.delete_record_link(
        source_record_id="pizza-neapolitan-sourdough",
        source_record_type="preference",
        target_record_id="pizza-sourdough",
        target_record_type="preference",
        relation_type="refines",
    ) == 1
    assert {status(r) for r in ("pizza-thin-crust", "pizza-sourdough", "pizza-neapolitan-sourdough")} == {RecordStatus.VALID}
    [again] = memory.search("What pizza should I recommend?", user_id="graph-demo-user", max_results=1, num_hops=2)
    assert again.linked_results == []


# -- seed 002: customised context cards ------------------------------------------------------


def test_the_card_example_reserves_slots_for_preferences_guidelines_and_messages(
    run_example: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    names = run_example("customize_context_card", "memory")
    card = ET.fromstring(capsys.readouterr().out)
    assert card.tag == "context_card"
    assert [child.tag for child in card] == ["topics", "summary", "relevant_information"]
    assert "vegetarian dinner recommendations" in (card.findtext("summary") or "")
    relevant = card.find("relevant_information")
    assert relevant is not None
    tags = [child.tag for child in relevant]
    assert tags[:3] == ["preference", "guideline", "message"]
    assert "memory" in tags and len(tags) <= 6
    contents = {child.tag: child.findtext("content") for child in relevant if child.tag != "message"}
    assert contents == {
        "preference": "User prefers vegetarian restaurants.",
        "guideline": "Offer concise recommendations with clear tradeoffs.",
        "memory": "User is comparing pizza places for Friday.",
    }
    assert {m.record.thread_id for m in names["card"].relevant_results if m.record_type is RecordType.MESSAGE} == {
        "context_card_customization_demo"
    }


def test_the_card_example_extracts_with_the_custom_instructions_in_the_thread_scope(run_example: Any) -> None:
    names = run_example("customize_context_card", "memory")
    [request] = names["extractor"].requests
    assert request.custom_instructions.startswith("Extract restaurant preferences as preference records")
    assert [m.role for m in request.target_messages] == ["user", "assistant"]
    stored = names["memory"].list_memories(thread_id="context_card_customization_demo")
    assert {(r.record_type, r.user_id, r.agent_id) for r in stored} == {
        (RecordType.PREFERENCE, "user_123", "assistant_456"),
        (RecordType.GUIDELINE, "user_123", "assistant_456"),
        (RecordType.MEMORY, "user_123", "assistant_456"),
    }


def test_the_tuned_concurrency_gives_the_same_card_and_is_not_persisted(run_example: Any) -> None:
    names = run_example("customize_context_card", "memory")
    assert names["thread"].settings.context_card_type_search_concurrency == 2
    assert names["card"].content == names["prompt_context"]
    reopened = names["memory"].get_thread("context_card_customization_demo")
    assert reopened.settings.context_card_type_search_concurrency == 5


# -- seed 001: short-term context cards ------------------------------------------------------


def test_the_external_tail_prompt_is_the_card_then_the_raw_tail(
    run_example: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    names = run_example("short_term_context_card", "agent_memory")
    prompt = names["external_tail_prompt"]
    messages = names["thread"].get_messages()
    tail = messages[-3:]
    assert len(prompt) == 4
    assert prompt[1:] == [{"role": m.role, "content": m.content} for m in tail]
    card = ET.fromstring(prompt[0]["content"])
    assert [child.tag for child in card] == ["topics", "summary", "relevant_information"]
    summary = card.findtext("summary") or ""
    assert "Maya" in summary and "ledger enrichment" in summary
    assert "What workflow am I migrating" not in summary
    shown_ids = {e.text for e in card.iter("record_id")}
    assert shown_ids and not shown_ids & {m.id for m in tail}
    assert "== External-tail prompt ==" in capsys.readouterr().out


def test_the_self_contained_prompt_carries_the_tail_inside_the_card(run_example: Any) -> None:
    names = run_example("short_term_context_card", "agent_memory")
    [only] = names["self_contained_prompt"]
    card = ET.fromstring(only["content"])
    assert [child.tag for child in card] == ["topics", "summary", "relevant_information", "recent_messages"]
    tail = names["thread"].get_messages()[-3:]
    recent = card.find("recent_messages")
    assert recent is not None
    assert [(m.findtext("role"), m.findtext("content")) for m in recent] == [(m.role, m.content) for m in tail]
    shown_ids = {e.text for e in card.iter("record_id")}
    assert not shown_ids & {m.id for m in tail}
    external = ET.fromstring(names["external_tail_prompt"][0]["content"])
    assert card.findtext("summary") == external.findtext("summary")
