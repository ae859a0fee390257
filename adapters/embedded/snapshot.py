"""Embedded adapter: the index snapshot file, so that a large store opens without a rebuild.

Private to ``EmbeddedStore``. A snapshot is a cache of the caches: the vector index, the
keyword index and the record attributes exactly as they stood at one change-log position,
written beside the store file (``<store>.index``). SQLite stays the source of truth: a store
opening a snapshot replays the change log after the snapshot's position, exactly as a running
store catches up with another process's commits, and any doubt (another format, another schema
version, a token the store file does not hold, a log pruned past the position, a damaged file)
means a rebuild from the tables, never a wrong answer.

Layout: an 8-byte magic, the header's length (8 bytes, little-endian), the header (JSON:
``meta`` for the caller, and each array's dtype, shape and offset), then the arrays at 64-byte
aligned offsets. An array may be declared longer on its growing axis than the rows written
(``capacity``): the rest of its region is a file hole (zeros, no disk), so that a partition
restored from the file takes appends without first copying itself.

Reading maps the file copy-on-write: arrays are views on the mapping (writes stay private to
the process and never reach the file), so opening reads only the pages a search touches and
the kernel may drop clean pages under memory pressure. Nothing is unpickled: the header is
JSON and every dtype is checked against a short list.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = [
    "MAGIC",
    "Region",
    "SnapshotError",
    "StringTable",
    "advise_sequential",
    "lookup",
    "read_snapshot",
    "snapshot_path",
    "string_objects",
    "strings_of",
    "strings_region",
    "write_snapshot",
]

MAGIC = b"PLMPIDX1"
_ALIGN = 64
_DTYPES = frozenset({"|b1", "|i1", "|u1", "<i4", "<i8", "<u8", "<f4", "<f8"})
_HEADER_MAX = 1 << 30


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
    cold: bool = False
    """Read at random and rarely (a vector matrix): left out of the page cache once written, so
    that a reader maps only the pages it reads (see :func:`read_snapshot`)."""


def _align(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def write_snapshot(
    path: str,
    meta: Mapping[str, Any],
    regions: Mapping[str, Region],
    before_publish: Callable[[], None] = lambda: None,
) -> None:
    """Write a snapshot to ``path`` atomically: a temporary file in the same folder, flushed to
    disk, then renamed over ``path``. A crash leaves the old file or the new one, never half.

    ``before_publish`` runs between the flush and the rename (the store records the new
    snapshot's token there); if it raises, the temporary file is removed and ``path`` is left
    as it was.
    """
    layout: dict[str, dict[str, Any]] = {}
    offset = 0
    prepared: list[tuple[int, Region, tuple[int, ...]]] = []
    for name, region in regions.items():
        data = np.ascontiguousarray(region.data)
        dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
        data = data.astype(dtype, copy=False)
        if dtype.str not in _DTYPES:
            raise ValueError(f"snapshot arrays cannot hold dtype {dtype.str}")
        shape = list(data.shape)
        if region.capacity is not None:
            if region.capacity < shape[region.axis]:
                raise ValueError("a region's capacity is below its data")
            shape[region.axis] = region.capacity
        offset = _align(offset)
        layout[name] = {"dtype": dtype.str, "shape": shape, "offset": offset}
        prepared.append((offset, replace(region, data=data), tuple(shape)))
        offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    _sweep(path)
    header = json.dumps({"meta": dict(meta), "arrays": layout}, separators=(",", ":")).encode()
    base = _align(len(MAGIC) + 8 + len(header))
    total = base + offset
    folder = os.path.dirname(os.path.abspath(path))
    temporary = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(temporary, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", len(header)) + header)
            for start, region, declared in prepared:
                data = region.data
                if region.axis == 0 or data.ndim == 1:
                    out.seek(base + start)
                    out.write(data.data.cast("B"))
                else:  # 2-D along axis 1: each row of the region is `capacity` long
                    row_bytes = declared[1] * data.dtype.itemsize
                    for row in range(data.shape[0]):
                        out.seek(base + start + row * row_bytes)
                        out.write(np.ascontiguousarray(data[row]).data.cast("B"))
            out.truncate(total)
            out.flush()
            os.fsync(out.fileno())
            _drop_cached(out.fileno(), [(base + start, region, declared) for start, region, declared in prepared])
        before_publish()
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a platform without directory handles: the rename is as durable as it gets
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def read_snapshot(
    path: str, random_access: Callable[[str], bool] = lambda _name: False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The snapshot's ``meta`` and its arrays (writable copy-on-write views of the file).

    Arrays whose name ``random_access`` accepts are advised as read at random (no read-ahead):
    a search reads a few thousand rows of a vector matrix scattered over the file, and with
    the kernel's read-ahead each of them would map hundreds of kilobytes around it (measured:
    2,000 rows of a 1M-row matrix made 1.4 GB resident; advised, a few megabytes).
    Raises :class:`SnapshotError` for a missing, truncated or malformed file.
    """
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < len(MAGIC) + 8:
                raise SnapshotError("the snapshot is truncated")
            mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    except FileNotFoundError as exc:
        raise SnapshotError("no snapshot") from exc
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"the snapshot cannot be read: {exc}") from exc
    if mapping[: len(MAGIC)] != MAGIC:
        raise SnapshotError("not a snapshot of this format")
    (length,) = struct.unpack("<Q", mapping[len(MAGIC) : len(MAGIC) + 8])
    if length > min(_HEADER_MAX, size):
        raise SnapshotError("the snapshot's header is damaged")
    try:
        header = json.loads(mapping[len(MAGIC) + 8 : len(MAGIC) + 8 + length])
        meta, layout = header["meta"], header["arrays"]
        if not isinstance(meta, dict) or not isinstance(layout, dict):
            raise TypeError("header fields")
        base = _align(len(MAGIC) + 8 + length)
        arrays: dict[str, np.ndarray] = {}
        for name, entry in layout.items():
            dtype = np.dtype(entry["dtype"])
            if entry["dtype"] not in _DTYPES:
                raise TypeError(f"dtype {entry['dtype']}")
            shape = tuple(int(n) for n in entry["shape"])
            if any(n < 0 for n in shape):
                raise ValueError("negative shape")
            count = int(np.prod(shape, dtype=np.int64))
            start = base + int(entry["offset"])
            if start < base or start + count * dtype.itemsize > size:
                raise ValueError(f"array {name} runs past the end of the file")
            arrays[name] = np.frombuffer(mapping, dtype=dtype, count=count, offset=start).reshape(shape)
            if count and random_access(name):
                _advise_random(mapping, start, count * dtype.itemsize)
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"the snapshot's header is damaged: {exc}") from exc
    return meta, arrays


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


def _drop_cached(descriptor: int, placed: list[tuple[int, Region, tuple[int, ...]]]) -> None:
    """Evict the cold regions' pages (clean once flushed) from the page cache. Written pages
    sit in large folios, and a reader faulting one row in would map a whole folio."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    for start, region, shape in placed:
        if region.cold:
            length = int(np.prod(shape, dtype=np.int64)) * region.data.dtype.itemsize
            try:
                advise(descriptor, start, length, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass


def _advise_random(mapping: mmap.mmap, start: int, length: int) -> None:
    advice = getattr(mmap, "MADV_RANDOM", None)
    if advice is None:
        return  # a platform without madvise: read-ahead stays, correctness does not change
    page = mmap.PAGESIZE
    first = start // page * page
    try:
        mapping.madvise(advice, first, start + length - first)
    except (OSError, ValueError):
        pass


def advise_sequential(arrays: Iterable[np.ndarray]) -> None:
    """Undo :func:`read_snapshot`'s random-access advice on the mappings ``arrays`` view, before
    a writer reads them through: read page by page without read-ahead, the 1.5 GB of a
    1M-row matrix took 41 s instead of about one."""
    advice = getattr(mmap, "MADV_SEQUENTIAL", None)
    if advice is None:
        return
    seen: set[int] = set()
    for array in arrays:
        base: object = array
        while isinstance(base, np.ndarray):
            base = base.base
        if isinstance(base, memoryview):
            base = base.obj
        if isinstance(base, mmap.mmap) and id(base) not in seen and not base.closed:
            seen.add(id(base))
            try:
                base.madvise(advice)
            except (OSError, ValueError):
                pass


def strings_region(values: list[str | None]) -> Region:
    """A list of strings (``None`` allowed) as a UTF-8 JSON region."""
    return Region(np.frombuffer(json.dumps(values, separators=(",", ":")).encode(), dtype=np.uint8))


def strings_of(array: np.ndarray) -> list[Any]:
    """The list :func:`strings_region` wrote."""
    values = json.loads(array.tobytes())
    if not isinstance(values, list):
        raise SnapshotError("a string table is damaged")
    return values


class StringTable:
    """Interns the strings a snapshot refers to (ids, scope ids), so that each is written once
    and a restored index shares one string object per id with the other caches."""

    __slots__ = ("_codes", "values")

    def __init__(self) -> None:
        self._codes: dict[str | None, int] = {}
        self.values: list[str | None] = []

    def code(self, value: str | None) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def codes(self, values: Iterable[str | None]) -> np.ndarray:
        get, code = self._codes.get, self.code
        return np.array([found if (found := get(v)) is not None else code(v) for v in values], dtype=np.int32)


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
