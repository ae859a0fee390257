"""Smoke test of benchmarks/extraction on a tiny synthetic file in LoCoMo's format (never the real one).

The file holds two development conversations with gold observations (one with a list of
evidence ids, one with an id to repair, one with an id absent from the conversation) and a
held-out entry whose fields are not LoCoMo at all, so reading it would fail. The default
(heuristic) run and the LLM extractor's run against the local OpenAI-compatible fake server both
go through the command line with the hashing embedder on the in-process store: the figures'
structure and the matchers are checked, not quality.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters.openai.testing import LoopbackExtractionServer

from benchmarks.extraction import run
from benchmarks.locomo.loader import Observation, load

HELD_OUT = "conv-50"


def _conversation(
    sample_id: str, a: str, b: str, sessions: list[list[str]], observations: dict[str, Any]
) -> dict[str, Any]:
    body: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for number, texts in enumerate(sessions, start=1):
        body[f"session_{number}_date_time"] = f"{number}:05 pm on {number + 1} May, 2023"
        body[f"session_{number}"] = [
            {"speaker": (a, b)[i % 2], "dia_id": f"D{number}:{i + 1}", "text": text}
            for i, text in enumerate(texts)
        ]
    body["session_2"][0]["blip_caption"] = "a photo of a kiln"
    return {"sample_id": sample_id, "conversation": body, "observation": observations, "qa": []}


def write_file(folder: Path) -> Path:
    first = _conversation(
        "conv-26",
        "Ana",
        "Ben",
        [
            ["I adopted a greyhound named Pixel.", "Lovely! Where did you find him?", "At the shelter near the harbour."],
            ["My pottery kiln broke last week.", "I started sailing lessons on Tuesdays."],
        ],
        {
            "session_1_observation": {
                "Ana": [
                    ["Ana adopted a greyhound named Pixel.", "D1:1"],
                    ["Ana found Pixel at the shelter near the harbour.", ["D1:1", "D1:03"]],
                ],
                "Ben": [["Ben collects antique violins.", "D9:9"]],
            },
            "session_2_observation": {
                "Ana": [["Ana's pottery kiln broke last week.", "D2:1"]],
                "Ben": [["Ben started sailing lessons on Tuesdays.", "D2:2"]],
            },
        },
    )
    second = _conversation(
        "conv-30",
        "Cleo",
        "Dev",
        [["I moved to Porto in March.", "Do you like it?"], ["Dev runs a bakery downtown.", "Cleo paints murals."]],
        {"session_1_observation": {"Cleo": [["Cleo moved to Porto in March.", "D1:1"]]}},
    )
    dialogue = _conversation(  # two speakers, whose turns alternate
        "conv-41",
        "Eve",
        "Finn",
        [["I adopted a greyhound named Pixel.", "I found him at the shelter near the harbour."],
         ["My pottery kiln broke last week.", "I started sailing lessons on Tuesdays."]],
        {
            "session_1_observation": {
                "Eve": [["Eve adopted a greyhound named Pixel.", "D1:1"]],
                "Finn": [["Finn collects antique violins.", "D1:2"]],
            },
            "session_2_observation": {"Eve": [["Eve's pottery kiln broke last week.", "D2:1"]]},
        },
    )
    held_out = {"sample_id": HELD_OUT, "conversation": "not a conversation", "observation": "not a dict"}
    path = folder / "locomo10.json"
    path.write_text(json.dumps([first, held_out, second, dialogue]), encoding="utf-8")
    return path


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write_file(tmp_path)


def test_the_loader_reads_each_sessions_observations_with_repaired_evidence(data: Path) -> None:
    (conversation,) = load(data, ("conv-26",))
    assert conversation.observations == (
        Observation(1, "Ana", "Ana adopted a greyhound named Pixel.", ("D1:1",)),
        Observation(1, "Ana", "Ana found Pixel at the shelter near the harbour.", ("D1:1", "D1:3")),
        Observation(1, "Ben", "Ben collects antique violins.", ()),
        Observation(2, "Ana", "Ana's pottery kiln broke last week.", ("D2:1",)),
        Observation(2, "Ben", "Ben started sailing lessons on Tuesdays.", ("D2:2",)),
    )


class _Table:
    """A scorer whose vectors are looked up: the cosine thresholds are exercised exactly."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self._vectors = vectors

    def embed(self, texts: list[str], *, is_query: bool = False) -> list[list[float]]:
        return [self._vectors[t] for t in texts]


def test_a_fact_is_recalled_and_a_memory_precise_from_cosine_070() -> None:
    at_071 = [0.71, (1 - 0.71**2) ** 0.5]
    at_069 = [0.69, (1 - 0.69**2) ** 0.5]
    scorer = _Table({"g1": [1.0, 0.0], "g2": [0.0, 1.0], "m1": at_071, "m2": [-1.0, 0.0]})
    scored = run.score_session(["g1", "g2"], ["m1", "m2"], scorer)
    # m1 is at 0.71 from g1 and 0.70 from g2 (sqrt(1 - 0.71^2) = 0.704); m2 is near neither
    assert scored["gold_recalled"] == [True, True]
    assert scored["memory_precise"] == [True, False]
    scorer = _Table({"g1": [1.0, 0.0], "m1": at_069})
    assert run.score_session(["g1"], ["m1"], scorer)["gold_recalled"] == [False]
    assert run.score_session(["g1"], [], scorer)["gold_recalled"] == [False]


def test_content_word_overlap_ignores_function_words_and_inflection() -> None:
    assert run.content_stems("She likes the greyhounds") == run.content_stems("like a greyhound") == {
        "like", "greyhound"
    }
    covered, contained = run.overlap_matrix(["Ana adopted a greyhound named Pixel."], ["Fact: I adopted a greyhound."])
    assert covered[0, 0] == pytest.approx(2 / 5)  # adopted, greyhound of ana, adopted, greyhound, named, pixel
    assert contained[0, 0] == pytest.approx(2 / 3)  # of fact, adopted, greyhound


def _figures(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def test_the_default_run_scores_every_session_per_conversation(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    argv = ["--data", str(data), "--conversation", "conv-26", "--conversation", "conv-30", "--embedder", "hashing",
            "--backend", "memory", "--json", str(out)]
    assert run.main(argv) == 0
    result = _figures(out)
    assert set(result["by_conversation"]) == {"conv-26", "conv-30"}
    assert result["overall"]["sessions"] == 4 and result["overall"]["messages"] == 9
    assert result["overall"]["gold_facts"] == 6
    assert [(s["conversation"], s["session"], len(s["facts"])) for s in result["sessions"]] == [
        ("conv-26", 1, 3), ("conv-26", 2, 2), ("conv-30", 1, 1), ("conv-30", 2, 0)
    ]
    kinds = result["overall"]["by_kind"]
    assert {name: k["facts"] for name, k in kinds["evidence"].items()} == {
        "own turn": 4, "several turns": 1, "no turn": 1
    }
    assert kinds["turn"]["image"]["facts"] == 1  # D2:1 shared an image
    assert result["extractor"] == "default (heuristic)"
    assert "overall" in capsys.readouterr().out


def test_the_llm_extractor_runs_against_an_openai_compatible_server(data: Path, tmp_path: Path) -> None:
    """Two speakers: the fake server cites no source messages, so each memory's sources are the
    whole session, whose turns carry two ``metadata["speaker"]`` values; the memories are stored
    without a speaker (before, the pass failed, counted as ``failed_extractions``)."""
    out = tmp_path / "out.json"
    with LoopbackExtractionServer() as server:
        argv = ["--data", str(data), "--conversation", "conv-41", "--embedder", "hashing", "--backend", "memory",
                "--model-url", server.base_url, "--model", "loopback", "--json", str(out)]
        assert run.main(argv) == 0
        targets = server.targets()
    turns = ["I adopted a greyhound named Pixel.", "I found him at the shelter near the harbour.",
             "My pottery kiln broke last week.", "I started sailing lessons on Tuesdays."]
    assert sorted(set(targets)) == sorted(turns)  # every turn went to the model
    result = _figures(out)
    sessions = result["sessions"]
    # the server answers "Fact: <text>" for each turn: those are the session's memories
    assert [sorted(m["text"] for m in s["memories"]) for s in sessions] == [
        sorted(f"Fact: {t}" for t in turns[:2]), sorted(f"Fact: {t}" for t in turns[2:])
    ]
    covered = {f["text"]: f["covered"] for s in sessions for f in s["facts"]}
    assert covered == {
        "Eve adopted a greyhound named Pixel.": True,
        "Finn collects antique violins.": False,
        "Eve's pottery kiln broke last week.": True,
    }
    contained = {m["text"]: m["contained"] for s in sessions for m in s["memories"]}
    assert contained == {
        "Fact: I adopted a greyhound named Pixel.": True,
        "Fact: I found him at the shelter near the harbour.": False,
        "Fact: My pottery kiln broke last week.": True,
        "Fact: I started sailing lessons on Tuesdays.": False,
    }
    overall = result["overall"]
    assert (overall["recall_overlap"], overall["precision_overlap"]) == (pytest.approx(2 / 3, abs=1e-4), 0.5)
    assert overall["failed_extractions"] == 0
    assert result["extractor"].startswith("llm loopback at http://127.0.0.1:")


def test_the_model_options_go_together_and_a_missing_file_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        run.parse_args(["--model-url", "http://127.0.0.1:1/v1"])
    assert run.main(["--data", str(tmp_path / "absent.json")]) == 2


def test_the_selector_runs_leave_one_conversation_out_and_prints_shippable_weights(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from palimpsest.adapters.heuristic.statements import FEATURES

    from benchmarks.extraction import selector

    out = tmp_path / "selector.json"
    argv = ["--data", str(data), "--embedder", "hashing", "--json", str(out)]
    assert selector.main([*argv, "--conversation", "conv-26", "--conversation", "conv-30", "--conversation", "conv-41"]) == 0
    printed = capsys.readouterr().out
    figures = _figures(out)
    assert list(figures["folds"]) == ["conv-26", "conv-30", "conv-41"]
    assert figures["pooled"]["gold"] == 5 + 1 + 3
    assert list(figures["weights"]) == list(FEATURES)
    assert "SELECTOR_WEIGHTS: Final = (" in printed and "SELECTOR_THRESHOLD: Final = " in printed
    with pytest.raises(SystemExit):
        selector.main([*argv, "--conversation", "conv-26"])
