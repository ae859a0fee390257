"""The PostgreSQL benchmarks run, small, against the session's server (they assert nothing about
speed: their figures are in BENCHMARKS.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from postgres_server import PostgresTarget

from benchmarks import bench_pg_dense, bench_pg_keywords
from benchmarks.locomo.loader import Conversation, Question, Turn


def _conversation() -> Conversation:
    when = datetime(2023, 5, 1, tzinfo=UTC)
    texts = [("Ana", "I adopted a greyhound named Pixel."), ("Ben", "Where did you find him?"),
             ("Ana", "At the shelter near the harbour."), ("Ben", "My cat sleeps all day.")]
    turns = tuple(Turn(f"D1:{i + 1}", speaker, text, 1, when) for i, (speaker, text) in enumerate(texts))
    questions = (
        Question("conv-x", 0, "What is the name of Ana's greyhound?", "Pixel", 4, ("D1:1",)),
        Question("conv-x", 1, "Where did Ana find her dog?", "shelter", 1, ("D1:3",)),
    )
    return Conversation("conv-x", "Ana", "Ben", turns, questions)


def test_the_keyword_scoring_benchmark_runs(postgres_target: PostgresTarget, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench_pg_keywords, "load", lambda _path: [_conversation()])
    assert bench_pg_keywords.main(["--data", "unused.json", "--url", postgres_target.url]) == 0
    out = capsys.readouterr().out
    assert "1 conversations, 4 turns, 2 questions" in out
    assert all(name in out for name in ("bm25", "ts_rank_cd/english", "ts_rank_cd/simple"))


def test_the_dense_benchmark_runs(postgres_target: PostgresTarget, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--records", "200", "--users", "4", "--dimension", "8", "--queries", "4", "--url", postgres_target.url]
    assert bench_pg_dense.main(argv) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("scoped, auto", "scoped, hnsw", "unscoped, hnsw ef 40", "unscoped, exact"))
