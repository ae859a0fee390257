"""link and unlink: lifecycle links retire their target, unlinking re-derives it; errors are one line."""

from __future__ import annotations

import json

from .conftest import Invoke, Seeded
from .helpers import one_line_error, snapshot


def _status(invoke: Invoke, seeded: Seeded, record_id: str) -> str:
    out = invoke("--store", seeded.store, "memories", "--json", "--limit", "0").stdout
    return next(str(r["status"]) for r in map(json.loads, out.splitlines()) if r["id"] == record_id)


def test_link_creates_a_link_and_a_lifecycle_type_retires_the_target(invoke: Invoke, seeded: Seeded) -> None:
    assert _status(invoke, seeded, seeded.hostile) == "valid"
    result = invoke("--store", seeded.store, "link", seeded.guideline, seeded.hostile, "--type", "refines")
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith(f"linked {seeded.guideline} -[refines]-> {seeded.hostile}: link ")
    assert line.endswith("; the target is now invalid")
    assert _status(invoke, seeded, seeded.hostile) == "invalid"


def test_custom_links_keep_statuses_and_accept_an_opposite_label_and_metadata(
    invoke: Invoke, seeded: Seeded
) -> None:
    result = invoke(
        "--store",
        seeded.store,
        "link",
        seeded.guideline,
        seeded.hostile,
        "--type",
        "explains",
        "--opposite",
        "is_explained_by",
        "--metadata",
        '{"by": "cli"}',
    )
    assert result.exit_code == 0, result.output
    assert "now" not in result.stdout
    link_id = result.stdout.strip().rsplit(" ", 1)[1]
    links = {link.id: link for link in snapshot(seeded.path)["links"]}
    created = links[link_id]
    assert (created.source_id, created.target_id) == (seeded.guideline, seeded.hostile)
    assert (created.relation_type, created.opposite_relation_type) == ("explains", "is_explained_by")
    assert created.metadata == {"by": "cli"}
    assert _status(invoke, seeded, seeded.hostile) == "valid"


def test_unlink_by_id_re_derives_the_target(invoke: Invoke, seeded: Seeded) -> None:
    assert _status(invoke, seeded, seeded.thin) == "invalid"
    result = invoke("--store", seeded.store, "unlink", seeded.supersedes_link)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"deleted link {seeded.supersedes_link}"
    assert _status(invoke, seeded, seeded.thin) == "valid"


def test_unlink_by_endpoints(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "unlink", seeded.sourdough, seeded.thin, "--type", "supersedes")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"deleted the supersedes link from {seeded.sourdough} to {seeded.thin}"
    assert seeded.supersedes_link not in {link.id for link in snapshot(seeded.path)["links"]}
    assert _status(invoke, seeded, seeded.thin) == "valid"


def test_link_and_unlink_errors_are_one_line_and_change_nothing(invoke: Invoke, seeded: Seeded) -> None:
    before = snapshot(seeded.path)
    cases = [
        (["link", seeded.sourdough, seeded.lyon, "--type", ""], "relation_type must not be empty."),
        (["link", seeded.sourdough, seeded.lyon, "--type", "x" * 200], "relation_type must be at most 128"),
        (["link", "nope", seeded.lyon, "--type", "supports"], "No memory record with id 'nope'."),
        (["link", seeded.sourdough, "nope", "--type", "supports"], "No memory record with id 'nope'."),
        (["link", seeded.thin, seeded.thin, "--type", "supports"], "itself"),
        (["link", seeded.thin, seeded.sourdough, "--type", "supports"], "one orientation only"),
        (["link", seeded.sourdough, seeded.hostile, "--type", "supersedes"], "links stay inside one user"),
        (["link", seeded.guideline, seeded.thin, "--type", "supports"], "links stay inside one user"),
        (
            ["link", seeded.sourdough, seeded.lyon, "--type", "supports", "--metadata", "nope"],
            "not valid JSON",
        ),
        (["unlink", "no-such-link"], "there is no link no-such-link."),
        (["unlink", seeded.sourdough, seeded.thin, "--type", "refines"], "refines"),
        (["unlink", seeded.sourdough, seeded.thin], "unlinking by endpoints needs --type TYPE."),
        (["unlink", seeded.supersedes_link, "--type", "supersedes"], "--type goes with SOURCE_ID TARGET_ID"),
    ]
    for args, expected in cases:
        result = invoke("--store", seeded.store, *args)
        assert result.exit_code == 1, (args, result.output)
        assert expected in one_line_error(result.stderr), args
    assert snapshot(seeded.path) == before
