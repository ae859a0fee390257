"""Tests of the heuristic adapters layer: ``RuleLinkResolver`` rules on the seed scenario and beyond."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from palimpsest.adapters.heuristic import RuleLinkResolver, classify_link
from palimpsest.application.ports import LinkProposal, LinkResolution, LinkResolver
from palimpsest.domain.model import MemoryRecord, RecordType

NOW = datetime(2026, 1, 1, tzinfo=UTC)
THIN_CRUST = "The user's preferred pizza style is thin crust."
SOURDOUGH = "The user now prefers sourdough pizza."
NEAPOLITAN = "The user's preferred pizza style is sourdough, especially Neapolitan sourdough."


def _record(record_id: str, content: str, record_type: RecordType = RecordType.PREFERENCE) -> MemoryRecord:
    return MemoryRecord(id=record_id, record_type=record_type, content=content, created_at=NOW, updated_at=NOW)


def test_the_rule_link_resolver_implements_the_link_resolver_port() -> None:
    assert isinstance(RuleLinkResolver(), LinkResolver)


def test_the_pizza_seed_links_sourdough_supersedes_thin_crust_and_neapolitan_refines_sourdough() -> None:
    thin, sour, neapolitan = _record("thin", THIN_CRUST), _record("sour", SOURDOUGH), _record("nea", NEAPOLITAN)
    resolutions = RuleLinkResolver().resolve([sour, neapolitan], {"sour": [thin], "nea": [sour]})
    assert resolutions == [
        LinkResolution("sour", (LinkProposal("thin", "supersedes"),)),
        LinkResolution("nea", (LinkProposal("sour", "refines"),)),
    ]


def test_every_source_gets_a_resolution_even_without_candidates_and_never_links_to_itself() -> None:
    sour = _record("sour", SOURDOUGH)
    assert RuleLinkResolver().resolve([sour], {"sour": [sour]}) == [LinkResolution("sour", ())]
    assert RuleLinkResolver().resolve([sour], {}) == [LinkResolution("sour", ())]


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ("The user lives in Lisbon.", "the user lives in lisbon", "duplicates"),
        ("The user lives in Berlin.", "The user lives in Lisbon.", "supersedes"),
        ("The user's name is Alexandra.", "The user's name is Alex.", "supersedes"),
        ("The user no longer likes sugary drinks.", "The user likes sugary drinks.", "supersedes"),
        ("The user works at Globex as a senior data engineer.", "The user works at Globex.", "refines"),
        ("The user likes tea.", "The user likes coffee.", None),
        ("The user loves Italian food.", "The user loves Japanese food.", None),
        ("The user is a nurse.", "The user is vegetarian.", None),
    ],
)
def test_link_rules_are_conservative(new: str, old: str, expected: str | None) -> None:
    record_type = RecordType.PREFERENCE if "like" in new or "love" in new else RecordType.FACT
    assert classify_link(new, record_type, old, record_type) == expected


def test_refines_and_supersedes_need_the_same_record_type() -> None:
    assert classify_link("The user loves cats named Miso.", "preference", "The user loves cats.", "fact") is None


def test_the_resolver_never_rewrites_text() -> None:
    [resolution] = RuleLinkResolver().resolve([_record("sour", SOURDOUGH)], {"sour": [_record("thin", THIN_CRUST)]})
    assert resolution.updated_text is None
