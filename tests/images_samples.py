"""Tiny, well-formed sample images built byte by byte (no image library), for the image tests."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int = 2, height: int = 2, *, animated: bool = False, seed: int = 0) -> bytes:
    """An RGB PNG (``seed`` varies the pixels, so two images differ); ``animated`` adds an acTL."""
    raw = b"".join(b"\x00" + bytes([seed % 256, 0, 0]) * width for _ in range(height))
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    actl = _chunk(b"acTL", struct.pack(">II", 1, 0)) if animated else b""
    return b"\x89PNG\r\n\x1a\n" + header + actl + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")


def jpeg(width: int = 3, height: int = 2) -> bytes:
    """SOI, an APP0 segment, a baseline frame header, a scan header and EOI (no real entropy data)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    sos = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00\x00\x3f\x00"
    return b"\xff\xd8" + app0 + sof + sos + b"\x00\x00" + b"\xff\xd9"


def _riff(chunks: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WEBP" + chunks


def _webp_chunk(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("<I", len(body)) + body + (b"\x00" if len(body) % 2 else b"")


def webp(width: int = 4, height: int = 3, *, lossless: bool = False) -> bytes:
    """A simple (lossy VP8 or lossless VP8L) WebP header with a few bytes of frame data."""
    if lossless:
        bits = (width - 1) | ((height - 1) << 14)
        return _riff(_webp_chunk(b"VP8L", b"\x2f" + bits.to_bytes(4, "little") + b"\x00\x00"))
    frame = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 6
    return _riff(_webp_chunk(b"VP8 ", frame))


def animated_webp() -> bytes:
    vp8x = bytes([0x02, 0, 0, 0]) + (3).to_bytes(3, "little") + (2).to_bytes(3, "little")
    return _riff(_webp_chunk(b"VP8X", vp8x) + _webp_chunk(b"ANIM", b"\x00" * 6))
