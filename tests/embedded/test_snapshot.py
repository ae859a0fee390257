"""The index snapshot: a store reopened from it answers exactly as one rebuilt from the tables.

Every test lowers ``SNAPSHOT_MIN_ROWS`` so that small files get a snapshot. The reference for
"exactly" is the same file opened without its snapshot (a copy made with SQLite's backup API,
so the copy holds the same rows and the same token but has no ``.index`` beside it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded import snapshot as snapshot_module
from palimpsest.adapters.embedded import store as store_module
from palimpsest.adapters.embedded.snapshot import MAGIC, read_snapshot, snapshot_path
from palimpsest.domain.model import RecordStatus, RecordType
from palimpsest.domain.search import ScopeFilter, SearchQuery
from palimpsest.domain.sentinel import ANY

from .helpers import NOW, answers, at, link, message, record, thread

DIM = 8
USERS = ("alice", "bob", None)
TYPES = (RecordType.FACT, RecordType.PREFERENCE, RecordType.MEMORY, RecordType.GUIDELINE)
WORDS = "apple banana cherry delta echo falcon grape harbor island jungle kettle lemon".split()


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_ROWS", 1)
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_CHANGES", 1)


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIM)]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))


def fill(store: EmbeddedStore, rng: random.Random, start: int, count: int) -> list[str]:
    """Records of three users, every type, some invalid or expiring, plus named messages."""
    ids = []
    with store.unit_of_work() as uow:
        for i in range(start, start + count):
            user = USERS[i % 3]
            rid = f"r{i:05d}"
            uow.records.add(
                record(
                    rid,
                    text(rng),
                    user_id=user,
                    agent_id=rng.choice((None, "agent-1", "agent-2")),
                    record_type=rng.choice(TYPES),
                    status=RecordStatus.INVALID if i % 11 == 0 else RecordStatus.VALID,
                    expires_at=at(60 * 24 * 365) if i % 7 == 0 else None,
                ),
                embedding=vector(rng) if i % 13 else None,
            )
            ids.append(rid)
        thread_id = f"t{start}"
        uow.threads.add(thread(thread_id, user_id="alice"))
        for seq in range(1, 6):
            uow.messages.add(
                message(
                    f"m{start}-{seq}", thread_id, seq, text(rng), user_id="alice", metadata={"speaker": "Ann"}
                ),
                embedding=vector(rng),
            )
        uow.commit()
    return ids


def queries(rng: random.Random) -> list[SearchQuery]:
    found = []
    for user in ("alice", "bob", None):
        scope = ScopeFilter(user_id=user)
        for _ in range(3):
            found.append(SearchQuery(k=8, now=NOW, vector=tuple(vector(rng)), scope=scope, num_hops=2))
            found.append(SearchQuery(k=8, now=NOW, text=text(rng), scope=scope))
            found.append(
                SearchQuery(
                    k=8, now=NOW, text=text(rng), vector=tuple(vector(rng)), scope=scope, include_invalid=True
                )
            )
    found.append(SearchQuery(k=8, now=NOW, text="apple", scope=ScopeFilter(user_id=ANY, agent_id="agent-1")))
    found.append(SearchQuery(k=20, now=NOW, text=" ".join(WORDS), scope=ScopeFilter(user_id=ANY), num_hops=1))
    return found


def rebuilt_copy(path: Path, tmp_path: Path) -> Path:
    """The same rows (and token) in another file, with no snapshot beside it."""
    copy = tmp_path / f"copy-{random.random():.6f}.db"
    source = sqlite3.connect(path)
    target = sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return copy


def restored(store: EmbeddedStore) -> bool:
    return store._snapshot_seq is not None


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[Path, random.Random]]:
    path = tmp_path / "store.db"
    rng = random.Random(7)
    store = EmbeddedStore(path, dimension=DIM)
    ids = fill(store, rng, 0, 300)
    with store.unit_of_work() as uow:
        for j in range(40):  # links, and deleted rows (dead rows in the snapshot's partitions)
            uow.links.add(link(f"l{j}", ids[j], ids[j + 50]))
        for rid in ids[200:230]:
            uow.records.delete(rid)
        uow.commit()
    store.close()
    yield path, rng


def test_close_leaves_a_snapshot_and_reopening_uses_it(
    filled: tuple[Path, random.Random], tmp_path: Path
) -> None:
    path, rng = filled
    assert os.path.exists(snapshot_path(str(path)))
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert restored(reopened) and not restored(reference)
        assert answers(reopened, requests) == answers(reference, requests)
        assert any(linked for found in answers(reopened, requests) for _id, _score, linked in found)
        assert len(reopened._keywords) == len(reference._keywords)
        assert reopened._keywords.total_length == reference._keywords.total_length
        for word in WORDS:
            assert reopened._keywords.document_frequency(word) == reference._keywords.document_frequency(word)
        assert reopened._attrs == reference._attrs
        for index in ("_vectors", "_keywords"):  # the counters that let searches skip masks
            mine, theirs = getattr(reopened, index)._partitions, getattr(reference, index)._partitions
            assert set(mine) == set(theirs)
            for scope, partition in mine.items():
                other = theirs[scope]
                assert (partition.live, partition.invalid, partition.expiring) == (
                    other.live,
                    other.invalid,
                    other.expiring,
                )
        assert reopened.dimension == reference.dimension == DIM


def test_writes_after_restoring_match_a_rebuild(filled: tuple[Path, random.Random], tmp_path: Path) -> None:
    """Updates in place (in the arrays read from the file), appends into the slack and past it,
    deletions, and a status change."""
    path, rng = filled
    before = Path(snapshot_path(str(path))).read_bytes()
    with EmbeddedStore(path) as store:
        assert restored(store)
        fill(store, rng, 1000, 400)  # more than the slack of every partition
        with store.unit_of_work() as uow:
            for rid in ("r00001", "r00004", "r00010"):
                found = uow.records.get(rid)
                assert found is not None
                uow.records.update(replace(found, content="zebra " + found.content), embedding=vector(rng))
            invalidated = uow.records.get("r00002")
            assert invalidated is not None
            uow.records.update(replace(invalidated, status=RecordStatus.INVALID))
            uow.records.delete("r00005")
            uow.commit()
        assert Path(snapshot_path(str(path))).read_bytes() == before  # the process's own memory: the file is untouched
        requests = [*queries(rng), SearchQuery(k=5, now=NOW, text="zebra", scope=ScopeFilter(user_id=ANY))]
        with EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
            assert answers(store, requests) == answers(reference, requests)
    with EmbeddedStore(path) as again, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert restored(again)
        assert answers(again, requests) == answers(reference, requests)


def test_commits_of_another_process_after_the_snapshot_are_replayed(
    filled: tuple[Path, random.Random], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, rng = filled
    seq = read_snapshot(snapshot_path(str(path)))[0]["seq"]
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_ROWS", 10**9)  # the writer leaves no snapshot
    with EmbeddedStore(path) as writer:
        fill(writer, rng, 2000, 50)
        with writer.unit_of_work() as uow:
            uow.records.delete("r00003")
            uow.links.add(link("l-new", "r00006", "r00009"))
            uow.commit()
    assert read_snapshot(snapshot_path(str(path)))[0]["seq"] == seq  # the old snapshot is still there
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert reopened._snapshot_seq == seq and reopened._last_seen > seq
        assert answers(reopened, requests) == answers(reference, requests)
        assert "r00003" not in reopened._attrs


def test_a_snapshot_of_another_file_is_not_used(filled: tuple[Path, random.Random], tmp_path: Path) -> None:
    """The store file replaced by another one holding the same ids with other content: the old
    snapshot's token is not in it, so the caches are rebuilt."""
    path, rng = filled
    old = Path(snapshot_path(str(path))).read_bytes()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with EmbeddedStore(path, dimension=DIM) as fresh:
        with fresh.unit_of_work() as uow:
            uow.records.add(record("r00001", "walrus", user_id="bob"), embedding=vector(rng))
            uow.commit()
        fresh.SNAPSHOT_MIN_ROWS = 10**9  # keep the old snapshot file in place
    Path(snapshot_path(str(path))).write_bytes(old)
    with EmbeddedStore(path) as reopened:
        assert not restored(reopened)
        hits = reopened.search(
            SearchQuery(k=5, now=NOW, text="walrus apple banana", scope=ScopeFilter(user_id=ANY))
        )
        assert [hit.id for hit in hits] == ["r00001"]
        assert len(reopened._keywords) == 1


TRAILER = struct.Struct("<QQI4x8s")  # the header's offset, length and checksum, the magic


def header_of(data: bytes | bytearray) -> tuple[dict[str, Any], int, int]:
    """The snapshot's header, and where it lies in the file (offset, length)."""
    start, length, _crc, magic = TRAILER.unpack(bytes(data[-TRAILER.size :]))
    assert bytes(data[:8]) == magic == MAGIC
    return json.loads(bytes(data[start : start + length])), start, length


def rewrite_header(data: bytearray, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the header in place, keeping its length and making its checksum fit again: damage
    that only the reader's own checks can find."""
    header, start, length = header_of(data)
    edit(header)
    encoded = json.dumps(header, separators=(",", ":")).encode().ljust(length)[:length]
    data[start : start + length] = encoded
    data[-TRAILER.size :] = TRAILER.pack(start, length, zlib.crc32(encoded), MAGIC)


def filled_span(data: bytes | bytearray, name: str) -> tuple[int, int]:
    """Where the rows of array ``name`` are in the file: (start, length in bytes)."""
    entry = header_of(data)[0]["arrays"][name]
    shape = list(entry["shape"])
    shape[entry["axis"]] = entry["rows"]
    return entry["offset"], int(np.prod(shape)) * np.dtype(entry["dtype"]).itemsize


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage", "header", "bad-dtype", "short-array", "longer", "no-checksums"],
)
def test_a_damaged_snapshot_means_a_rebuild(
    filled: tuple[Path, random.Random], tmp_path: Path, damage: str
) -> None:
    path, rng = filled
    index = Path(snapshot_path(str(path)))
    data = bytearray(index.read_bytes())
    name = next(n for n in header_of(data)[0]["arrays"] if n.endswith(".vectors"))
    if damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "garbage":
        data[:8] = b"NOTANIDX"
    elif damage == "header":
        rewrite_header(data, lambda header: header["arrays"].pop(name))
    elif damage == "bad-dtype":
        rewrite_header(data, lambda header: header["arrays"][name].update(dtype="|O"))
    elif damage == "short-array":
        rewrite_header(data, lambda header: header["arrays"][name]["shape"].__setitem__(0, 1))
    elif damage == "longer":
        data += bytes(64)
    else:
        rewrite_header(data, lambda header: header["arrays"][name].update(crc=[]))
    index.write_bytes(bytes(data))
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert not restored(reopened)
        assert answers(reopened, requests) == answers(reference, requests)


@pytest.mark.parametrize(
    ("region", "damage"),
    [
        ("vectors", "zeroed-page"),
        ("vectors", "flips"),
        ("vectors", "flip-one-bit"),
        ("v.alive", "flips"),
        ("k.base_tfs", "flips"),
        ("k.base_rows", "flips"),
        ("a.expiry", "flips"),
        ("strings", "flip-one-bit"),
        ("header", "flip-one-bit"),
    ],
)
def test_damage_inside_an_array_or_the_header_is_detected_at_open(
    filled: tuple[Path, random.Random], tmp_path: Path, region: str, damage: str
) -> None:
    """Bytes changed inside the data, not its shape: a zeroed page of a vector matrix, random
    bytes or one bit changed in other arrays or in the header. Every one is found at open
    (the checksums), and the store answers as one rebuilt from the tables."""
    path, rng = filled
    index = Path(snapshot_path(str(path)))
    data = bytearray(index.read_bytes())
    header, header_start, header_length = header_of(data)
    if region == "header":
        start, length = header_start, header_length
    else:
        biggest = max(
            (n for n in header["arrays"] if n.endswith(region.split(".")[-1]) and n[0] == (region + "x")[0]),
            key=lambda n: filled_span(data, n)[1],
        )
        start, length = filled_span(data, biggest)
    assert length > 0
    picker = random.Random(f"{region}-{damage}")
    if damage == "zeroed-page":
        data[start : start + min(4096, length)] = bytes(min(4096, length))
    elif damage == "flips":
        for at in picker.sample(range(start, start + length), min(8, length)):
            data[at] ^= picker.randrange(1, 256)
    else:
        data[picker.randrange(start, start + length)] ^= 1 << picker.randrange(8)
    index.write_bytes(bytes(data))
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert not restored(reopened)
        assert answers(reopened, requests) == answers(reference, requests)


def test_a_log_pruned_past_the_snapshot_or_another_format_means_a_rebuild(
    filled: tuple[Path, random.Random], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, rng = filled
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_ROWS", 10**9)
    with EmbeddedStore(path) as writer:  # one more change, then the log pruned up to it
        fill(writer, rng, 4000, 1)
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_ROWS", 1)
    conn = sqlite3.connect(path)
    head = conn.execute("SELECT max(seq) FROM changes").fetchone()[0]
    assert head > read_snapshot(snapshot_path(str(path)))[0]["seq"]
    conn.execute("DELETE FROM changes WHERE seq < ?", (head,))
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('changes_floor', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(head - 1),),
    )
    conn.commit()
    conn.close()
    with EmbeddedStore(path) as reopened:
        assert not restored(reopened)
        assert len(reopened._keywords) > 0
    # close() above wrote a fresh snapshot; a change of format makes it unusable too
    with EmbeddedStore(path) as reopened:
        assert restored(reopened)
    monkeypatch.setattr(store_module, "SNAPSHOT_FORMAT", store_module.SNAPSHOT_FORMAT + 1)
    with EmbeddedStore(path) as reopened:
        assert not restored(reopened)


def test_a_snapshot_written_for_other_record_types_means_a_rebuild(
    filled: tuple[Path, random.Random], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arrays hold type codes, which follow the names' order: a snapshot written when the
    record types were others (before the profile types, say) would read a code as another type."""
    path, _rng = filled
    assert read_snapshot(snapshot_path(str(path)))[0]["types"] == [t.value for t in store_module.TYPES_BY_CODE]
    with EmbeddedStore(path) as reopened:
        assert restored(reopened)
    older = [t for t in store_module._TYPE_NAMES if t not in ("agent_profile", "user_profile")]
    monkeypatch.setattr(store_module, "_TYPE_NAMES", older)
    with EmbeddedStore(path) as reopened:
        assert not restored(reopened)
    with EmbeddedStore(path) as again:
        assert restored(again)  # the close above wrote a snapshot of these types


def test_a_snapshot_that_cannot_be_recorded_leaves_the_old_one(
    filled: tuple[Path, random.Random], tmp_path: Path
) -> None:
    """Another connection holds the write lock while close() wants to record the new token: the
    close still succeeds, the new file is dropped, the old snapshot still opens the store."""
    path, rng = filled
    old = read_snapshot(snapshot_path(str(path)))[0]
    store = EmbeddedStore(path)
    store.SNAPSHOT_BUSY_TIMEOUT = 0.05
    fill(store, rng, 3000, 20)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        store.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert read_snapshot(snapshot_path(str(path)))[0]["token"] == old["token"]
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert reopened._snapshot_seq == old["seq"]
        assert answers(reopened, requests) == answers(reference, requests)


SCRIPT = textwrap.dedent(
    """
    import os, random, sys
    sys.path.insert(0, {tests!r})
    from palimpsest.adapters.embedded import EmbeddedStore
    from palimpsest.adapters.embedded import snapshot
    from embedded.test_snapshot import fill
    EmbeddedStore.SNAPSHOT_MIN_ROWS = 1
    EmbeddedStore.SNAPSHOT_MIN_CHANGES = 1
    how = sys.argv[1]
    store = EmbeddedStore({path!r}, dimension=8)
    fill(store, random.Random(3), 0, 200)
    if how.startswith("kill-"):  # a first snapshot in place, then more rows
        store.close()
        store = EmbeddedStore({path!r})
        fill(store, random.Random(4), 200, 40)
    if how == "kill-w":  # half the spare written
        real_write, writes = snapshot.os.pwrite, []
        def write_or_die(descriptor, data, offset):
            writes.append(offset)
            if len(writes) == 3:
                os.kill(os.getpid(), 9)
            return real_write(descriptor, data, offset)
        snapshot.os.pwrite = write_or_die
        store.close()
    elif how.startswith("kill"):
        real, calls = snapshot.os.rename, []
        def rename_or_die(src, dst):
            calls.append(src)
            if len(calls) == int(how[5:] or 1):
                os.kill(os.getpid(), 9)
            real(src, dst)
        snapshot.os.rename = rename_or_die
        store.close()
    # "exit": the script ends without close()
    """
)


@pytest.mark.parametrize("how", ["exit", "kill", "kill-w", "kill-1", "kill-2", "kill-3"])
def test_a_script_that_never_closes_or_dies_while_writing(tmp_path: Path, how: str) -> None:
    """``kill``: the first snapshot, killed before it is renamed into place; ``kill-w``: a later
    one, killed while it is written; ``kill-N``: killed at the Nth rename of publishing it (the
    old file aside, the new one in place, the old one as the spare). Every time, the store
    opens with every row, from the snapshot in place if there is one (its token is kept beside
    the new one's), and the next writer sweeps what was left."""
    path = tmp_path / "script.db"
    script = SCRIPT.format(tests=str(Path(__file__).parent.parent), path=str(path))
    result = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=120)
    rows = 205 + (45 if how.startswith("kill-") else 0)
    if how == "exit":
        assert result.returncode == 0, result.stderr
        assert os.path.exists(snapshot_path(str(path)))
    else:
        assert result.returncode == -9, result.stderr
        in_place = how != "kill-2"  # killed after the old one was moved aside: no snapshot
        assert os.path.exists(snapshot_path(str(path))) == (how != "kill" and in_place)
    rng = random.Random(5)
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert restored(reopened) == (how not in ("kill", "kill-2"))
        assert answers(reopened, requests) == answers(reference, requests)
        assert len(reopened._keywords) == rows
        fill(reopened, rng, 1000, 1)  # a new snapshot is due at close
    with EmbeddedStore(path) as again:
        assert restored(again)
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]  # the next writer swept the rest


def test_small_stores_leave_no_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedStore, "SNAPSHOT_MIN_ROWS", 1000)
    path = tmp_path / "small.db"
    with EmbeddedStore(path, dimension=DIM) as store:
        fill(store, random.Random(1), 0, 30)
    assert not os.path.exists(snapshot_path(str(path)))


READER = textwrap.dedent(
    """
    import json, random, sys
    sys.path.insert(0, {tests!r})
    from palimpsest.adapters.embedded import EmbeddedStore
    from embedded.test_snapshot import answers, queries
    store = EmbeddedStore({path!r})
    requests = queries(random.Random(9))
    print(json.dumps([store._snapshot_seq is not None, answers(store, requests)]), flush=True)
    sys.stdin.readline()  # the file is changed meanwhile
    print(json.dumps([store._snapshot_seq is not None, answers(store, requests)]), flush=True)
    store.SNAPSHOT_MIN_ROWS = 10**9
    store.close()
    """
)


@pytest.mark.parametrize("change", ["truncate", "overwrite"])
def test_a_snapshot_changed_in_place_under_a_reader(
    filled: tuple[Path, random.Random], tmp_path: Path, change: str
) -> None:
    """A reader opened from the snapshot; then the file is truncated, or overwritten in place with
    another store's snapshot (a backup tool restoring files): the reader neither dies nor answers
    differently, and the next open does not use the changed file."""
    path, _rng = filled
    index = snapshot_path(str(path))
    other = tmp_path / "other" / "store.db"
    other.parent.mkdir()
    with EmbeddedStore(other, dimension=DIM) as store:
        fill(store, random.Random(99), 0, 300)
    script = READER.format(tests=str(Path(__file__).parent.parent), path=str(path))
    reader = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        first = json.loads(reader.stdout.readline() or "null")
        assert first is not None and first[0], reader.stderr.read() if first is None else "not restored"
        if change == "truncate":
            os.truncate(index, os.path.getsize(index) // 2)
        else:
            shutil.copyfile(snapshot_path(str(other)), index)  # same inode, other bytes
        reader.stdin.write("go\n")
        reader.stdin.flush()
        second = json.loads(reader.stdout.readline() or "null")
        _out, errors = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, errors
    assert second == first
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert not restored(reopened)
        requests = queries(random.Random(9))
        assert answers(reopened, requests) == answers(reference, requests)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (the kind of file system containers and many temp folders use)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True, text=True
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


FULL = textwrap.dedent(
    """
    import errno, json, os, random, sqlite3, sys
    sys.path.insert(0, {tests!r})
    from palimpsest.adapters.embedded import EmbeddedStore
    from palimpsest.domain.errors import StorageError
    from embedded.helpers import record
    path, filler = {path!r}, {filler!r}
    rng = random.Random(4)
    EmbeddedStore.SNAPSHOT_MIN_ROWS = 1
    store = EmbeddedStore(path)
    acknowledged, outcomes = [], []

    def add(ids):
        with store.unit_of_work() as uow:
            for rid in ids:
                vector = [rng.uniform(-1, 1) for _ in range(384)]
                uow.records.add(record(rid, "full disk " + rid, user_id="u"), embedding=vector)
            uow.commit()
        acknowledged.extend(ids)

    add([f"a{{i}}" for i in range(40)])  # the log grows to hold them...
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(RESTART)")  # ...and is reused from its start: commits need no space
    conn.close()
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    for block in (1 << 16, 1 << 12):
        try:
            while True:
                os.write(descriptor, bytes(block))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    os.close(descriptor)
    for batch in range(3):
        try:
            add([f"b{{batch}}-{{i}}" for i in range(10)])
            outcomes.append("ok")
        except StorageError:
            outcomes.append("StorageError")
    os.unlink(filler)
    add(["after"])
    print(json.dumps({{"restored": store._snapshot_seq is not None, "outcomes": outcomes, "acknowledged": acknowledged}}))
    store.close()
    """
)


def test_a_full_file_system_under_a_restored_store_is_a_typed_error_or_success(small_tmpfs: Path) -> None:
    """A store on a small tmpfs opened from its snapshot, written while the file system is full:
    each write succeeds or raises ``StorageError`` (the process never dies), nothing acknowledged
    is lost, and the store takes writes again once space is freed."""
    path = small_tmpfs / "store.db"
    rng = random.Random(8)
    with EmbeddedStore(path, dimension=384) as store, store.unit_of_work() as uow:
        for i in range(800):
            vector = [rng.uniform(-1, 1) for _ in range(384)]
            uow.records.add(record(f"r{i:04d}", f"seed {i}", user_id="u"), embedding=vector)
        uow.commit()
    assert os.path.exists(snapshot_path(str(path)))
    script = FULL.format(
        tests=str(Path(__file__).parent.parent), path=str(path), filler=str(small_tmpfs / "filler")
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["restored"]
    assert set(report["outcomes"]) <= {"ok", "StorageError"}
    acknowledged = report["acknowledged"]
    assert "after" in acknowledged
    with EmbeddedStore(path) as reopened:
        with reopened.reading() as uow:
            assert [rid for rid in acknowledged if uow.records.get(rid) is None] == []
        query = SearchQuery(k=1000, now=NOW, text="full disk", scope=ScopeFilter(user_id="u"))
        assert set(acknowledged) <= {hit.id for hit in reopened.search(query)}


def test_arrays_of_many_checksummed_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 256 bytes, every one handed to the writer's and the checker's threads: the
    store reopens from its snapshot as from a rebuild, and one changed byte in a late chunk of
    a vector matrix is found."""
    monkeypatch.setattr(snapshot_module, "_CHUNK", 256)
    monkeypatch.setattr(snapshot_module, "_INLINE", 0)
    path = tmp_path / "chunks.db"
    rng = random.Random(12)
    with EmbeddedStore(path, dimension=DIM) as store:
        fill(store, rng, 0, 200)
    requests = queries(rng)
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert restored(reopened)
        assert answers(reopened, requests) == answers(reference, requests)
    index = Path(snapshot_path(str(path)))
    data = bytearray(index.read_bytes())
    entry = header_of(data)[0]["arrays"]
    name = max((n for n in entry if n.endswith(".vectors")), key=lambda n: filled_span(data, n)[1])
    assert len(entry[name]["crc"]) > 3
    start, length = filled_span(data, name)
    data[start + length - 5] ^= 0x10
    index.write_bytes(bytes(data))
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert not restored(reopened)
        assert answers(reopened, requests) == answers(reference, requests)


@pytest.mark.parametrize(
    "values",
    [
        [],
        [""],
        ["a", None, "b", None, "ü", ""],
        ["x\x00y", None, "z"],  # a NUL inside a string: written as JSON
        [None],
    ],
)
def test_string_tables_round_trip(values: list[str | None]) -> None:
    written = snapshot_module.strings_region(values).data
    assert snapshot_module.strings_of(written) == values


def test_string_codes_are_dense_in_first_seen_order_whatever_repeats() -> None:
    """All-new values with repeats, then a mix of old and new: every value one code, the codes
    0..n-1 in the order values were first seen, and the table decodes them back."""
    table = snapshot_module.StringTable()
    first = ["b", "a", "b", "c", "a"]
    second = ["c", "d", None, "d", "b"]
    codes = [table.codes(first).tolist(), table.codes(second).tolist()]
    values = table.values
    assert sorted(table.codes(values).tolist()) == list(range(len(values))) == list(range(5))
    assert values[:3] == ["b", "a", "c"]
    objects = snapshot_module.string_objects(snapshot_module.strings_region(values).data)
    assert snapshot_module.lookup(objects, np.array(codes[0])) == first
    assert snapshot_module.lookup(objects, np.array(codes[1])) == second


@pytest.mark.parametrize("same_rows", [True, False])
def test_vector_placement_shared_from_the_keyword_index_only_when_it_holds_the_same_rows(
    tmp_path: Path, same_rows: bool
) -> None:
    """Every record with a vector and none deleted: the vector index's key map is a copy of the
    keyword index's (not the same dict: each then changes on its own); else (a record without a
    vector) it is built. Either way it equals a rebuild's, and so do answers after more writes."""
    path = tmp_path / "same.db"
    rng = random.Random(11)
    with EmbeddedStore(path, dimension=DIM) as store, store.unit_of_work() as uow:
        for i in range(120):
            vec = None if (not same_rows and i == 7) else vector(rng)
            uow.records.add(record(f"r{i:04d}", text(rng), user_id=USERS[i % 3]), embedding=vec)
        uow.commit()
    with EmbeddedStore(path) as reopened, EmbeddedStore(rebuilt_copy(path, tmp_path)) as reference:
        assert restored(reopened)
        vectors, keywords = reopened._vectors._where, reopened._keywords._where
        assert vectors == reference._vectors._where and vectors is not keywords
        assert (vectors == keywords) == same_rows
        shared = [mine is theirs for mine, theirs in zip(vectors, keywords)]  # the same key objects
        assert all(shared) if same_rows else not any(shared)
        for store in (reopened, reference):
            with store.unit_of_work() as uow:
                uow.records.delete("r0003")
                uow.records.add(record("r9999", "apple banana", user_id="bob"), embedding=vector(random.Random(1)))
                uow.commit()
        assert reopened._vectors._where == reference._vectors._where
        assert reopened._keywords._where == reference._keywords._where
        requests = queries(random.Random(2))
        assert answers(reopened, requests) == answers(reference, requests)
