"""Embedded adapter: the index snapshot file, so that a large store opens without a rebuild.

Private to ``EmbeddedStore``. A snapshot is a cache of the caches: the vector index, the
keyword index and the record attributes exactly as they stood at one change-log position,
written beside the store file (``<store>.index``). SQLite stays the source of truth: a store
opening a snapshot replays the change log after the snapshot's position, exactly as a running
store catches up with another process's commits, and any doubt (another format, another schema
version, a token the store file does not hold, a log pruned past the position, a checksum that
does not match, a file of another size or one changed while it was read) means a rebuild from
the tables, never a wrong answer. A new snapshot is written over the previous one's file, kept
as ``<store>.index.spare``, then renamed into place (see :func:`write_snapshot`).

Layout: an 8-byte magic, the arrays' bytes at 64-byte aligned offsets, the header (JSON:
``meta`` for the caller, each array's dtype, declared shape, rows written, offset and one
CRC-32 per 256 MiB of its bytes), then a trailer: the header's offset and length (8 bytes
each, little-endian), its CRC-32 (4 bytes, then 4 of padding) and the magic again. The header
comes last so that the writer streams each array out as soon as it is computed. An array may
be declared longer on its growing axis than the rows written (``capacity``): only the rows are
in the file, the reader adds zeros, so that a partition restored from the file takes appends
without first copying itself.

Reading copies every array into the process's own memory (the largest on a thread of their
own, see :func:`open_snapshot`) and checks every checksum, the file's size and that it did
not change while it was read, before the caller uses anything; then the file is closed. Nothing
is mapped, so a reader never faults on the file, whatever happens to it later (truncated,
overwritten in place, on a file system that fills up), and never answers from a file other
than the one it checked. Nothing is unpickled: the header is JSON and every dtype is checked
against a short list.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import struct
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import numpy as np

__all__ = [
    "MAGIC",
    "Region",
    "RegionSource",
    "SnapshotError",
    "SnapshotReading",
    "StringTable",
    "lookup",
    "open_snapshot",
    "read_snapshot",
    "snapshot_path",
    "string_objects",
    "strings_of",
    "strings_region",
    "write_snapshot",
]

MAGIC = b"PLMPIDX2"
_TRAILER = struct.Struct("<QQI4x8s")  # the header's offset, length and CRC-32, the magic again
_ALIGN = 64
_CHUNK = 1 << 28
"""Bytes per checksum: checking one chunk overlaps writing (or reading) the next."""
_DTYPES = frozenset({"|b1", "|i1", "|u1", "<i4", "<i8", "<u8", "<f4", "<f8"})
_HEADER_MAX = 1 << 30
T = TypeVar("T")
_INLINE = 1 << 20  # smaller chunks are checksummed on the calling thread


class SnapshotError(Exception):
    """The snapshot cannot be used (absent, damaged, or of another format): rebuild instead."""


def snapshot_path(store_path: str) -> str:
    return store_path + ".index"


@dataclass(frozen=True)
class Region:
    """One array to write: ``data`` is its filled part; ``capacity`` (≥ the filled length on
    ``axis``, 0 or 1) is the length the reader gets, the rest zeros."""

    data: np.ndarray
    capacity: int | None = None
    axis: int = 0


RegionSource = Region | Callable[[], Region]
"""A region, or a function that computes it when the writer reaches it (see :func:`write_snapshot`)."""


def _align(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def _chunks(length: int) -> range:
    return range(0, length, _CHUNK)


def _bytes(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (empty ones too), writable if the array is."""
    return memoryview(array.reshape(-1).view(np.uint8).data)


def _crc(view: memoryview) -> str:
    return f"{zlib.crc32(view):08x}"


def write_snapshot(
    path: str,
    meta: Mapping[str, Any],
    regions: Mapping[str, RegionSource],
    before_writing: Callable[[], None] = lambda: None,
) -> bool:
    """Write a snapshot to ``path``; False (nothing written) if another writer holds the lock.

    The snapshot is written into the spare file beside ``path`` (``<path>.spare``: the file
    this one replaced last time), in place, then renamed into ``path``'s place, and the file
    it replaces becomes the spare. Writing over pages the page cache already holds is about
    ten times faster than filling new ones (which the kernel must allocate, and some file
    systems allocate disk blocks for at a rename over another file, ext4's ``auto_da_alloc``);
    the price is a second file of the snapshot's size on disk. One writer at a time, under an
    advisory lock on ``<path>.lock``. A reader sees the old file or the new one, never half of
    one, and never the spare; a crash while writing leaves ``path`` as it was, and after a
    crash that loses pages not yet on disk the new file fails its checksums, which a reader
    treats as no snapshot, so the file is not flushed to disk here (``close()`` does not wait
    for gigabytes of writeback).

    Regions are written in their order; large ones on another thread (and checksummed on a
    third), so that a region given as a function is computed here while the arrays before it
    are being written. ``meta`` is encoded last (a region's function may still fill it in).
    ``before_writing`` runs once the lock is held (the store records the new snapshot's token
    there, before this process dirties gigabytes of pages that a sync would then wait for); if
    it raises, nothing is written.
    """
    _sweep(path)
    with _writing(path) as locked:
        if not locked:
            return False
        before_writing()
        spare = path + ".spare"
        descriptor = os.open(spare, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            os.ftruncate(descriptor, _write_regions(descriptor, meta, regions))
        finally:
            os.close(descriptor)
        _publish(spare, path)
        return True


@contextlib.contextmanager
def _writing(path: str) -> Iterator[bool]:
    """Hold the writers' lock of ``path`` (True), or False if another writer holds it."""
    descriptor = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)  # releases the lock


def _publish(spare: str, path: str) -> None:
    """Rename ``spare`` into ``path``'s place and the old file into the spare's. The old file
    goes aside under a temporary name of this process first (:func:`_sweep` removes it if the
    process dies before it is the spare), so that no rename is over an existing file: that is
    what makes ext4 allocate and start writing back the whole new file at once, which the
    closing thread, and then SQLite's next sync, would wait for. Between the first two renames
    there is no snapshot: a store opened in that instant rebuilds its caches."""
    aside: str | None = _temporary_name(path)
    try:
        os.rename(path, aside)  # type: ignore[arg-type]
    except FileNotFoundError:
        aside = None
    try:
        os.rename(spare, path)
    except BaseException:
        if aside is not None:
            with contextlib.suppress(OSError):
                os.rename(aside, path)
        raise
    if aside is not None:
        try:
            os.rename(aside, spare)
        except OSError:
            _remove(aside)


def _temporary_name(path: str) -> str:
    return f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _write_regions(
    descriptor: int, meta: Mapping[str, Any], regions: Mapping[str, RegionSource]
) -> int:
    """Write the snapshot from offset 0; its length."""
    layout: dict[str, dict[str, Any]] = {}
    sums: list[tuple[str, list[Future[str]]]] = []
    writes: list[Future[None]] = []
    _write_all(descriptor, memoryview(MAGIC), 0)
    offset = _align(len(MAGIC))
    with ThreadPoolExecutor(1) as writer, ThreadPoolExecutor(1) as checker:
        for name, given in regions.items():
            region = given if isinstance(given, Region) else given()
            data, entry = _prepared(region)
            raw = _bytes(data)
            layout[name] = {**entry, "offset": offset}
            futures = []
            for at in _chunks(len(raw)):
                # Every write on the writer's thread: a write here would wait for the file's
                # lock while that thread writes a large array.
                chunk = raw[at : at + _CHUNK]
                writes.append(_submit(writer, _write_all, descriptor, chunk, offset + at))
                futures.append(_done(_crc(chunk)) if len(chunk) < _INLINE else _submit(checker, _crc, chunk))
            sums.append((name, futures))
            offset = _align(offset + len(raw))
            for write in writes:  # a failed write (a full disk) stops the writer now
                if write.done():
                    write.result()
        for write in writes:
            write.result()
        for name, futures in sums:
            layout[name]["crc"] = [future.result() for future in futures]
    header = json.dumps({"meta": dict(meta), "arrays": layout}, separators=(",", ":")).encode()
    tail = header + _TRAILER.pack(offset, len(header), zlib.crc32(header), MAGIC)
    _write_all(descriptor, memoryview(tail), offset)
    return offset + len(tail)


def _prepared(region: Region) -> tuple[np.ndarray, dict[str, Any]]:
    """A region's data, contiguous and little-endian, and its header entry (without offset)."""
    data = np.ascontiguousarray(region.data)
    dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
    data = data.astype(dtype, copy=False)
    if dtype.str not in _DTYPES:
        raise ValueError(f"snapshot arrays cannot hold dtype {dtype.str}")
    if data.ndim not in (1, 2) or region.axis >= data.ndim:
        raise ValueError("snapshot arrays are 1-D or 2-D, grown on an axis they have")
    shape = list(data.shape)
    rows = shape[region.axis]
    if region.capacity is not None:
        if region.capacity < rows:
            raise ValueError("a region's capacity is below its data")
        shape[region.axis] = region.capacity
    return data, {"dtype": dtype.str, "shape": shape, "axis": region.axis, "rows": rows}


def _write_all(descriptor: int, view: memoryview, offset: int) -> None:
    done = 0
    while done < len(view):
        done += os.pwrite(descriptor, view[done:], offset + done)


def read_snapshot(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The snapshot's ``meta`` and its arrays, read into the process's own (writable) memory
    and checked against the writer's checksums.

    Raises :class:`SnapshotError` for a missing, truncated, damaged or malformed file, or one
    that changed while it was read.
    """
    with open_snapshot(path) as reading:
        reading.finish()
        return reading.meta, dict(reading.arrays)


def open_snapshot(path: str, order: Callable[[str], int] = lambda _name: 0) -> SnapshotReading:
    """Start reading a snapshot on a thread of its own, the arrays in the order ``order`` gives
    (lowest first). When this returns, ``meta`` is read and its checksum matched; looking an
    array up in ``arrays`` waits until that array is read. The arrays' checksums are matched
    by :meth:`SnapshotReading.finish`: a caller may compute from the arrays before (restoring
    the caches while the rest is read), but must drop what it computed if ``finish`` raises.
    Raises :class:`SnapshotError`.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise SnapshotError("no snapshot") from exc
    except OSError as exc:
        raise SnapshotError(f"the snapshot cannot be read: {exc}") from exc
    reading = SnapshotReading(descriptor)
    try:
        with _as_snapshot_errors():
            reading._start(order)
    except BaseException:
        reading.close()
        raise
    return reading


@contextlib.contextmanager
def _as_snapshot_errors() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise SnapshotError(f"the snapshot cannot be read: {exc}") from exc
    except (KeyError, TypeError, ValueError, OverflowError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"the snapshot's header is damaged: {exc}") from exc


_Job = tuple[str, memoryview, int, list[Any]]  # name, bytes to fill, offset in the file, checksums


class _Arriving(Mapping[str, np.ndarray]):
    """The arrays of a :class:`SnapshotReading`; looking one up waits until it is read."""

    def __init__(self, reading: SnapshotReading) -> None:
        self._reading = reading

    def __getitem__(self, name: str) -> np.ndarray:
        return self._reading._arrived(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._reading._arrays)

    def __len__(self) -> int:
        return len(self._reading._arrays)


class SnapshotReading:
    """A snapshot being read (see :func:`open_snapshot`); a context manager that closes it.

    The loader thread reads the arrays in batches (one read per run of adjacent arrays), then
    matches checksums; :meth:`finish` matches the rest from the other end of the list."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor
        self._identity = _identity(descriptor)
        self._loader: ThreadPoolExecutor | None = None
        self._loaded: Future[None] | None = None
        self._arrays: dict[str, np.ndarray] = {}
        self._events: dict[str, threading.Event] = {}
        self._read: set[str] = set()  # arrays read in full (before their event is set)
        self._unchecked: deque[_Job] = deque()
        self._failed: list[str] = []  # arrays whose checksum did not match
        self._stop = False
        self.meta: dict[str, Any] = {}
        self.arrays: Mapping[str, np.ndarray] = _Arriving(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _start(self, order: Callable[[str], int]) -> None:
        descriptor = self._descriptor
        assert descriptor is not None
        size = self._identity[2]
        advise = getattr(os, "posix_fadvise", None)
        if advise is not None:
            try:
                advise(descriptor, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass
        if size < _align(len(MAGIC)) + _TRAILER.size:
            raise SnapshotError("the snapshot is truncated")
        magic = bytearray(len(MAGIC))
        _read_exactly(descriptor, memoryview(magic), 0)
        trailer = bytearray(_TRAILER.size)
        _read_exactly(descriptor, memoryview(trailer), size - _TRAILER.size)
        start, length, header_crc, end_magic = _TRAILER.unpack(trailer)
        if magic != MAGIC or end_magic != MAGIC:
            raise SnapshotError("not a snapshot of this format")
        if length > _HEADER_MAX or start < _align(len(MAGIC)) or start + length + _TRAILER.size != size:
            raise SnapshotError("the snapshot's trailer is damaged")
        raw = bytearray(length)
        _read_exactly(descriptor, memoryview(raw), start)
        if zlib.crc32(raw) != header_crc:
            raise SnapshotError("the snapshot's header fails its checksum")
        header = json.loads(raw)
        meta, layout = header["meta"], header["arrays"]
        if not isinstance(meta, dict) or not isinstance(layout, dict):
            raise TypeError("header fields")
        batches: dict[int, list[tuple[_Job, np.ndarray | None]]] = {}
        for name, entry in layout.items():
            placed = self._place(name, entry, _align(len(MAGIC)), start)
            batches.setdefault(order(name), []).append(placed)
        self.meta = meta
        plan = []
        for key in sorted(batches):
            event = threading.Event()
            batch = sorted(batches[key], key=lambda placed: placed[0][2])
            self._events.update((job[0], event) for job, _out in batch)
            plan.append((batch, event))
        self._loader = ThreadPoolExecutor(1)
        self._loaded = _submit(self._loader, self._load, plan)

    def _place(
        self, name: str, entry: Mapping[str, Any], base: int, end: int
    ) -> tuple[_Job, np.ndarray | None]:
        """Allocate array ``name`` (zeros past its rows); where its bytes are, and for an array
        grown on axis 1 (read whole, then placed) the array to place them in."""
        if entry["dtype"] not in _DTYPES:
            raise TypeError(f"dtype {entry['dtype']}")
        dtype = np.dtype(entry["dtype"])
        shape = [int(n) for n in entry["shape"]]
        axis, rows = int(entry["axis"]), int(entry["rows"])
        if len(shape) not in (1, 2) or axis not in range(len(shape)) or any(n < 0 for n in shape):
            raise ValueError(f"array {name} has a damaged shape")
        if not 0 <= rows <= shape[axis]:
            raise ValueError(f"array {name} holds more rows than its shape")
        stored = list(shape)
        stored[axis] = rows
        out = np.zeros(shape, dtype=dtype) if rows < shape[axis] else np.empty(shape, dtype=dtype)
        target = out[:rows] if axis == 0 else np.empty(stored, dtype=dtype)
        view = _bytes(target)
        sums = entry["crc"]
        offset = int(entry["offset"])
        if (
            offset < base
            or offset + len(view) > end
            or not isinstance(sums, list)
            or len(sums) != len(_chunks(len(view)))
        ):
            raise ValueError(f"array {name} does not fit the file")
        self._arrays[name] = out
        return (name, view, offset, sums), (None if axis == 0 else out)

    def _load(self, plan: list[tuple[list[tuple[_Job, np.ndarray | None]], threading.Event]]) -> None:
        """The loader: every batch read (waking whoever waits for it), then checksums matched
        until :meth:`finish`, working from the other end, has matched the rest."""
        try:
            for batch, event in plan:
                for run in _runs([job for job, _out in batch]):
                    if self._stop or self._descriptor is None:
                        raise SnapshotError("the snapshot was closed while it was read")
                    _read_runs(self._descriptor, run)
                for job, out in batch:
                    if out is not None and out.size:  # grown on axis 1: each row's filled part
                        read = np.frombuffer(job[1], dtype=out.dtype).reshape(out.shape[0], -1)
                        out[:, : read.shape[1]] = read
                    self._read.add(job[0])
                    self._unchecked.append(job)
                event.set()
        finally:
            for _batch, event in plan:
                event.set()  # a waiter finds its array unread and raises
        self._check(self._unchecked.popleft)

    def _check(self, take: Callable[[], _Job]) -> None:
        """Match checksums of the arrays ``take`` hands out until none is left."""
        while not self._stop:
            try:
                name, view, _offset, sums = take()
            except IndexError:
                return
            pieces = zip(_chunks(len(view)), sums, strict=True)
            if not all(_matches(view[at : at + _CHUNK], expected) for at, expected in pieces):
                self._failed.append(name)

    def _arrived(self, name: str) -> np.ndarray:
        array = self._arrays[name]
        self._events[name].wait()
        if name not in self._read:
            raise SnapshotError("the snapshot could not be read")
        return array

    def finish(self) -> None:
        """Wait until every array is read and its checksums matched. Raises
        :class:`SnapshotError` if one does not match or the file changed while it was read."""
        with _as_snapshot_errors():
            if self._loaded is None:
                raise SnapshotError("the snapshot is not being read")
            for event in self._events.values():
                event.wait()
            if len(self._read) != len(self._arrays):
                self._loaded.result()  # the loader's error
                raise SnapshotError("the snapshot could not be read")
            self._check(self._unchecked.pop)  # with the loader, from the other end
            self._loaded.result()
            if self._failed:
                raise SnapshotError(f"the snapshot's {self._failed[0]} fails its checksum")
            if self._descriptor is None or _identity(self._descriptor) != self._identity:
                raise SnapshotError("the snapshot changed while it was read")

    def close(self) -> None:
        """Stop reading (a reader that did not :meth:`finish` must not use the arrays)."""
        self._stop = True
        if self._loader is not None:
            self._loader.shutdown(wait=True)
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def _runs(jobs: list[_Job]) -> Iterator[list[_Job]]:
    """``jobs`` (by offset) in runs of arrays that lie one after the other in the file."""
    run: list[_Job] = []
    for job in jobs:
        if run and (job[2] != _align(run[-1][2] + len(run[-1][1])) or len(run) >= 256):
            yield run
            run = []
        run.append(job)
    if run:
        yield run


def _read_runs(descriptor: int, run: list[_Job]) -> None:
    """One run of adjacent arrays in one read (the alignment gaps into a scratch buffer)."""
    buffers: list[memoryview] = []
    for number, (_name, view, offset, _sums) in enumerate(run):
        if view:
            buffers.append(view)
        if number + 1 < len(run) and (gap := run[number + 1][2] - offset - len(view)):
            buffers.append(memoryview(bytearray(gap)))
    expected = sum(len(buffer) for buffer in buffers)
    done = os.preadv(descriptor, buffers, run[0][2]) if buffers else 0
    if done != expected:  # a short read: the rest, array by array
        for _name, view, offset, _sums in run:
            _read_exactly(descriptor, view, offset)


def _identity(descriptor: int) -> tuple[int, ...]:
    found = os.fstat(descriptor)
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _submit(checker: ThreadPoolExecutor, function: Callable[..., T], *args: Any) -> Future[T]:
    """``function(*args)`` on the checker's thread, or here if no thread can start any more
    (an exit hook, after the interpreter began shutting down)."""
    try:
        return checker.submit(function, *args)
    except RuntimeError:
        done: Future[T] = Future()
        try:
            done.set_result(function(*args))
        except Exception as exc:  # noqa: BLE001 - handed to the caller, as a thread's would be
            done.set_exception(exc)
        return done


def _done(value: T) -> Future[T]:
    done: Future[T] = Future()
    done.set_result(value)
    return done


def _matches(chunk: memoryview, expected: object) -> bool:
    return isinstance(expected, str) and _crc(chunk) == expected


def _read_exactly(descriptor: int, view: memoryview, offset: int) -> None:
    """Fill ``view`` from the file at ``offset``; a short file is damage."""
    done = 0
    while done < len(view):
        count = os.preadv(descriptor, [view[done:]], offset + done)
        if count == 0:
            raise SnapshotError("the snapshot is truncated")
        done += count


def _sweep(path: str) -> None:
    """Remove the temporary files of writers that died before renaming theirs into place."""
    folder, name = os.path.split(os.path.abspath(path))
    prefix = name + ".tmp-"
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid = entry[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, entry))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # somebody else's process: leave its file alone
    return True


def strings_region(values: list[str | None]) -> Region:
    """A list of strings (``None`` allowed) as a region: the strings' UTF-8 joined by NUL, after
    a line of JSON giving their number and where the ``None`` are (one split decodes a million
    ids in a tenth of the time a JSON list takes); strings holding a NUL as one JSON list."""
    nones: list[int] = []
    with contextlib.suppress(ValueError):  # found in C, a few at most (list.index stops at each)
        while True:
            nones.append(values.index(None, nones[-1] + 1 if nones else 0))
    texts = values
    if nones:
        texts = list(values)
        for number in nones:
            texts[number] = ""
    body = "\x00".join(texts)  # type: ignore[arg-type]
    if body.count("\x00") != max(len(values) - 1, 0):
        head = b"J"
        encoded = json.dumps(values, separators=(",", ":")).encode()
    else:
        head = b"S" + json.dumps({"n": len(values), "none": nones}, separators=(",", ":")).encode() + b"\n"
        encoded = body.encode()
    return Region(np.frombuffer(head + encoded, dtype=np.uint8))


def strings_of(array: np.ndarray) -> list[Any]:
    """The list :func:`strings_region` wrote."""
    raw = array.tobytes()
    if raw[:1] == b"J":
        values = json.loads(raw[1:])
        if not isinstance(values, list):
            raise SnapshotError("a string table is damaged")
        return values
    end = raw.find(b"\n")
    if raw[:1] != b"S" or end < 0:
        raise SnapshotError("a string table is damaged")
    head = json.loads(raw[1:end])
    if not isinstance(head, dict) or not isinstance(head.get("n"), int) or not isinstance(head.get("none"), list):
        raise SnapshotError("a string table is damaged")
    count: int = head["n"]
    strings: list[Any] = raw[end + 1 :].decode().split("\x00") if count else []
    nones = head["none"]
    if len(strings) != count or not all(isinstance(n, int) and 0 <= n < count for n in nones):
        raise SnapshotError("a string table is damaged")
    for number in nones:
        strings[number] = None
    return strings


class StringTable:
    """Interns the strings a snapshot refers to (ids, scope ids), so that each is written once
    and a restored index shares one string object per id with the other caches."""

    __slots__ = ("_codes", "_recent")

    def __init__(self) -> None:
        self._codes: dict[str | None, int] = {}  # in the order of the codes
        self._recent: list[tuple[list[str | None], np.ndarray]] = []

    @property
    def values(self) -> list[str | None]:
        return list(self._codes)

    def code(self, value: str | None) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def codes(self, values: Iterable[str | None]) -> np.ndarray:
        """The codes of ``values``, new ones added. Every call is a few passes in C: the same
        ids are coded for the vector index, the keyword index and the record attributes."""
        values = values if type(values) is list else list(values)
        for seen, found in self._recent:  # often the very same list: compared in one pass
            if len(seen) == len(values) and seen == values:
                return found
        codes = self._codes
        first = len(codes)
        try:  # every value seen before
            result = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
        except KeyError:
            if codes.keys().isdisjoint(values):  # all new (ids): one pass to code them
                codes.update(zip(values, range(first, first + len(values))))
                if len(codes) == first + len(values):
                    result = np.arange(first, first + len(values), dtype=np.int32)
                else:  # repeated values were coded by their last place: renumber, in order
                    codes.update(zip(list(itertools.islice(codes, first, None)), itertools.count(first)))
                    result = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
            else:
                new = dict.fromkeys(values).keys() - codes.keys()
                codes.update(zip(new, range(first, first + len(new))))
                result = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
        if len(values) >= 1024:
            self._recent = [(values, result), *self._recent[:1]]
        return result

    def region(self, values: Iterable[str | None]) -> Region:
        """:meth:`codes` as a snapshot region (``partial(table.region, values)`` codes them
        when the writer reaches it)."""
        return Region(self.codes(values))


def string_objects(array: np.ndarray) -> np.ndarray:
    """A :class:`StringTable` as written, as an object array (``objects[codes].tolist()`` turns
    an array of codes back into strings in one step)."""
    values = strings_of(array)
    objects = np.empty(len(values), dtype=object)
    objects[:] = values
    return objects


def lookup(objects: np.ndarray, codes: np.ndarray) -> list[Any]:
    """The strings of ``codes`` (see :func:`string_objects`), bounds-checked."""
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(objects)):
        raise SnapshotError("a string code is out of range")
    result: list[Any] = objects[codes].tolist()
    return result
