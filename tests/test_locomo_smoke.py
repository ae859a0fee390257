"""Smoke test of benchmarks/locomo on a tiny synthetic file in LoCoMo's format (never the real one).

The file holds two conversations with development ids and one with a held-out id whose fields
are not even valid LoCoMo (so reading them would fail): the loader must select by ``sample_id``
and skip it untouched. Each evidence-repair rule is exercised, and a run with the shipped
hashing embedder on the in-process store checks the report's structure and the mapping of hits
back to turn ids (not quality figures).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder

from benchmarks.locomo import run, successors
from benchmarks.locomo.loader import DEV_CONVERSATIONS, load, parse_session_date, repair_evidence
from benchmarks.quality.common import CachingEmbedder

HELD_OUT = "conv-50"


def _conversation(sample_id: str, a: str, b: str, sessions: list[list[str]]) -> dict[str, Any]:
    body: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for number, texts in enumerate(sessions, start=1):
        body[f"session_{number}_date_time"] = f"{number}:05 pm on {number + 1} May, 2023"
        body[f"session_{number}"] = [
            {"speaker": (a, b)[i % 2], "dia_id": f"D{number}:{i + 1}", "text": text}
            for i, text in enumerate(texts)
        ]
    body["session_2"][0]["img_url"] = ["https://example.org/cat.jpg"]
    body["session_2"][0]["blip_caption"] = "a photo of a cat on a sofa"
    return {
        "sample_id": sample_id,
        "conversation": body,
        "observation": {},
        "session_summary": {},
        "event_summary": {},
    }


def _qa(question: str, evidence: list[str], category: int = 4) -> dict[str, Any]:
    return {"question": question, "answer": "x", "evidence": evidence, "category": category}


def write_file(folder: Path) -> Path:
    first = _conversation(
        "conv-26",
        "Ana",
        "Ben",
        [
            [
                "I adopted a greyhound named Pixel.",
                "Lovely! Where did you find him?",
                "At the shelter near the harbour.",
            ],
            [
                "My cat Mochi sleeps all day.",
                "Ben started pottery classes on Tuesdays.",
                "The kiln broke last week.",
            ],
        ],
    )
    first["qa"] = [
        _qa("What is the name of Ana's greyhound?", ["D1:1; D1:3"]),  # ";" inside one string
        _qa("Where did Ana find her dog?", ["D1:3,D1:2"], 1),  # ","
        _qa("Which pet sleeps all day?", ["D2:1 D2:3"], 2),  # white space
        _qa("When are the pottery classes?", ["D:2:2"], 3),  # stray colon
        _qa("What broke?", ["D2:03", "D9:9"]),  # zero-padded turn; an id absent from the conversation
        _qa("Only unknown evidence?", ["D7:1", "D:8:2"]),  # nothing left: dropped
        _qa("Adversarial question?", [], 5),  # category 5: dropped
    ]
    second = _conversation(
        "conv-30",
        "Cleo",
        "Dev",
        [["I moved to Porto in March.", "Do you like it?"], ["Dev runs a bakery.", "Cleo paints murals."]],
    )
    second["qa"] = [_qa("Which city did Cleo move to?", ["D1:1"]), _qa("Who runs a bakery?", ["D2:1"], 2)]
    held_out = {"sample_id": HELD_OUT, "conversation": "not a conversation", "qa": "not a list"}
    path = folder / "locomo10.json"
    path.write_text(json.dumps([first, held_out, second]), encoding="utf-8")
    return path


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write_file(tmp_path)


def test_the_dev_half_is_the_default_and_the_held_out_entry_is_skipped_untouched(data: Path) -> None:
    assert DEV_CONVERSATIONS == ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
    conversations = load(data, ("conv-30", "conv-26"))
    assert [c.sample_id for c in conversations] == ["conv-30", "conv-26"]
    with pytest.raises(KeyError) as missing:
        load(data)  # the default list: three dev conversations are not in this file
    assert "conv-41" in str(missing.value) and HELD_OUT not in str(missing.value)
    assert HELD_OUT not in DEV_CONVERSATIONS


def test_turns_are_typed_with_speaker_session_and_date(data: Path) -> None:
    (conversation,) = load(data, ("conv-26",))
    assert (conversation.speaker_a, conversation.speaker_b, conversation.sessions) == ("Ana", "Ben", 2)
    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    turn = conversation.turns[3]
    assert (turn.speaker, turn.session, turn.text) == ("Ana", 2, "My cat Mochi sleeps all day.")
    assert turn.session_date == parse_session_date("2:05 pm on 3 May, 2023")
    assert (
        turn.session_date.year,
        turn.session_date.month,
        turn.session_date.day,
        turn.session_date.hour,
    ) == (2023, 5, 3, 14)
    assert turn.caption == "a photo of a cat on a sofa"


def test_evidence_repair_applies_each_rule(data: Path) -> None:
    (conversation,) = load(data, ("conv-26",))
    evidence = {q.question: q.evidence for q in conversation.questions}
    assert evidence == {
        "What is the name of Ana's greyhound?": ("D1:1", "D1:3"),
        "Where did Ana find her dog?": ("D1:3", "D1:2"),
        "Which pet sleeps all day?": ("D2:1", "D2:3"),
        "When are the pottery classes?": ("D2:2",),
        "What broke?": ("D2:3",),
    }
    assert {q.category for q in conversation.questions} == {1, 2, 3, 4}
    assert conversation.dropped_questions == 1  # only unknown ids; category 5 is not counted
    assert conversation.dropped_evidence == 3  # D9:9, D7:1, D8:2
    known = frozenset({"D30:5", "D11:26"})
    assert repair_evidence(["D30:05", "D:11:26", "D30:5"], known) == (("D30:5", "D11:26"), 0)


def test_a_missing_file_says_where_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(FileNotFoundError, match=r"github\.com/BAI-LAB/MemoryOS"):
        load(tmp_path / "absent.json")
    assert run.main(["--data", str(tmp_path / "absent.json")]) == 2
    assert "download eval/locomo10.json from https://github.com/BAI-LAB/MemoryOS" in capsys.readouterr().err


def test_a_run_maps_hits_back_to_turns_and_reports_every_figure(data: Path) -> None:
    conversations = load(data, ("conv-26", "conv-30"))
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    result = run.evaluate(conversations, embedder, backend="memory", log=lambda _: None)
    assert set(result["variants"]) == set(run.LOCOMO_VARIANTS)
    keyword = result["variants"]["keyword"]
    assert keyword["overall"]["questions"] == 7
    assert set(keyword["by_conversation"]) == {"conv-26", "conv-30"}
    assert {f"recall@{k}" for k in run.KS} | {"all@10", "tokens@10"} <= set(keyword["overall"])
    rows = {(r["sample_id"], r["evidence"][0]): r for r in keyword["rows"]}
    bakery = rows[("conv-30", "D2:1")]  # "Who runs a bakery?" shares "bakery" with one turn only
    # ... and with the turn after it, whose keyword text follows it (a shorter text may rank first)
    assert bakery["ranks"]["D2:1"] <= 2 and bakery["recall@5"] == 1.0 and bakery["all@10"] == 1.0
    for figures in result["variants"].values():
        assert figures["latency"]["search"]["n"] == 7
        for row in figures["rows"]:
            assert 0.0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= row["recall@20"] <= 1.0
            assert row["tokens@10"] > 0
    assert set(result["cards"]) == set(run.CARD_KINDS)
    for card in result["cards"].values():
        assert card["overall"]["questions"] == 7
        assert card["latency"]["card"]["n"] == 7
    slots = result["cards"]["question, message slots"]["rows"]
    # conv-26 has six turns: every slot a message; conv-30 has four: one memory fills the fifth.
    assert {(r["sample_id"], r["card_memories"]) for r in slots} == {("conv-26", 0), ("conv-30", 1)}


def test_cards_leave_the_conversation_thread_as_it_was(data: Path) -> None:
    (conversation,) = load(data, ("conv-30",))
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    with run.store_client(embedder, "memory") as memory:
        stored = run.ingest(memory, conversation)
        assert sorted(stored.dia_of_message.values()) == sorted(t.dia_id for t in conversation.turns)
        rows = run.run_cards(memory, [stored], run.Latency(embedder), None, {})
        assert len(rows) == 2
        thread = memory.get_thread(stored.thread_id)
        assert [m.content for m in thread.get_messages()] == [t.text for t in conversation.turns]
        assert [m.metadata["dia_id"] for m in thread.get_messages()] == [t.dia_id for t in conversation.turns]
        assert {m.metadata["speaker"] for m in thread.get_messages()} == {"Cleo", "Dev"}


def test_the_speaker_diagnostic_prefixes_the_content_and_keeps_the_metadata(data: Path) -> None:
    (conversation,) = load(data, ("conv-30",))
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    with run.store_client(embedder, "memory", extraction=False) as memory:
        stored = run.ingest(memory, conversation, content="speaker")
        messages = memory.get_thread(stored.thread_id).get_messages()
        assert [m.content for m in messages] == [f"{t.speaker}: {t.text}" for t in conversation.turns]
        assert [m.metadata["dia_id"] for m in messages] == [t.dia_id for t in conversation.turns]
        hits = memory.search("Who runs a bakery?", user_id=stored.user_id, record_types=["memory", "fact"])
        assert hits == []  # extraction off: no memories


def test_the_successor_share_is_set_for_the_searches_and_restored() -> None:
    from palimpsest.application import retrieval

    shipped = retrieval.SUCCESSOR_SHARE
    with successors.successor_share(1.0):
        assert retrieval.SUCCESSOR_SHARE == 1.0
    assert retrieval.SUCCESSOR_SHARE == shipped
    with pytest.raises(RuntimeError), successors.successor_share(0.0):
        raise RuntimeError
    assert retrieval.SUCCESSOR_SHARE == shipped


def test_leave_one_out_scores_each_conversation_with_the_share_the_others_pick() -> None:
    def figures(recalls: dict[str, float]) -> dict[str, Any]:
        return {"by_conversation": {c: {"questions": 10, "recall@10": r} for c, r in recalls.items()}}

    by_share = {
        0.0: figures({"a": 0.9, "b": 0.5, "c": 0.5}),
        successors.SHIPPED: figures({"a": 0.5, "b": 0.6, "c": 0.6}),
        1.0: figures({"a": 0.5, "b": 0.6, "c": 0.6}),  # ties the shipped share: the shipped one is kept
    }
    result = successors.leave_one_out(by_share)
    assert {c: f["picked"] for c, f in result["folds"].items()} == {"a": successors.SHIPPED, "b": 0.0, "c": 0.0}
    assert result["recall@10"] == round((0.5 + 0.5 + 0.5) / 3, 4)


def test_the_successor_share_run_reports_links_and_every_share(data: Path) -> None:
    conversations = load(data, ("conv-26", "conv-30"))
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    result = successors.evaluate(conversations, embedder, shares=(0.0, 1.0), backend="memory", log=lambda _: None)
    assert set(result["links"]) == {"conv-26", "conv-30"}
    assert set(result["links"]["conv-30"]) == {"memories", "retired", *successors.LIFECYCLE}
    assert set(result["scopes"]) == set(successors.SCOPES)
    for scope in result["scopes"].values():
        assert scope["questions"] == 7
        assert set(scope["by_share"]) == {"0.0", "1.0"}
        assert scope["ranking_changed"] <= scope["with_retired_hit"] <= 7
        assert set(scope["leave_one_out"]["folds"]) == {"conv-26", "conv-30"}
