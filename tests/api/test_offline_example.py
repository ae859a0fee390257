"""The fully offline example: extraction and linking with open_memory's defaults reproduce the
pizza graph of seed 004 and Maya's facts of seed 001."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "offline_extraction.py"


def _load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("offline_extraction_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_offline_extraction_supersedes_thin_crust_and_refines_sourdough(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _load().main(tmp_path)
    statuses = {m.content: m.is_valid for m in out["preferences"]}
    assert statuses == {
        "The user's preferred pizza style is thin crust.": False,
        "The user now prefers sourdough pizza.": False,
        "The user's preferred pizza style is sourdough, especially Neapolitan sourdough.": True,
    }
    (top,) = out["results"]
    (refined,) = top.linked_records
    (superseded,) = refined.children
    assert (refined.relation_label, superseded.relation_label) == ("refines", "supersedes")
    assert "thin crust" in superseded.record.content
    facts = {m.content for m in out["facts"]}
    assert "The user's name is Maya." in facts
    assert "The failing step right now is ledger enrichment after reconciliation." in facts
    card = out["card"].content
    assert "<fact>" in card and "Maya" in card and "ledger enrichment" in card
    assert "which step is failing, and who am I" not in card  # the excluded raw tail
    assert "<relation_type>refines</relation_type>" in capsys.readouterr().out
