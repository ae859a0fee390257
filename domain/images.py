"""Domain layer: images — their MIME types, the check of their bytes, and the stored value.

An image is a record row of type ``image`` (its content is the image's description, so search,
scope, expiry and metadata filters treat it like any record) plus a :class:`StoredImage`: the
bytes and MIME type, kept beside the row under the same id. A message-attached image also
names its message and its place among the message's content parts.

The bytes are checked by reading their headers, no image library involved: the signature and
the header of the format (PNG ``IHDR``, JPEG start of frame, WebP ``VP8 ``/``VP8L``/``VP8X``),
the chunk or segment structure up to the image data, a cap on pixels, and no animation. That
is enough to refuse what is not an image of the named type; it does not decode pixels.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass
from typing import Final

from .errors import InvalidImageError, ValidationError
from .model import check_counter, check_id

__all__ = [
    "INVALID_IMAGE_MESSAGE",
    "MAX_IMAGE_PIXELS",
    "ImageMimeType",
    "ImagePart",
    "StoredImage",
    "TextPart",
    "check_image_bytes",
    "detect_mime_type",
    "parse_mime_type",
]

INVALID_IMAGE_MESSAGE: Final = "Image bytes are invalid or do not match the supplied MIME type."

MAX_IMAGE_PIXELS: Final = 20_000_000
"""Width × height an image may have (the pixels of one frame a decoder would allocate)."""


class ImageMimeType(str, enum.Enum):
    """The image formats palimpsest stores (still images only)."""

    PNG = "image/png"
    JPEG = "image/jpeg"
    WEBP = "image/webp"

    def __str__(self) -> str:
        return self.value


def parse_mime_type(value: object) -> ImageMimeType:
    """``"image/png"`` or ``ImageMimeType.PNG`` to ``ImageMimeType.PNG``; raise on anything else."""
    try:
        return ImageMimeType(value)
    except ValueError:
        names = ", ".join(t.value for t in ImageMimeType)
        raise ValidationError(f"mime_type must be one of: {names}; got {value!r}.") from None


_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"


def detect_mime_type(data: bytes) -> ImageMimeType:
    """The format the bytes' signature names; :class:`InvalidImageError` when none does."""
    if data.startswith(_PNG_SIGNATURE):
        return ImageMimeType.PNG
    if data.startswith(b"\xff\xd8\xff"):
        return ImageMimeType.JPEG
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ImageMimeType.WEBP
    raise InvalidImageError(INVALID_IMAGE_MESSAGE)


def check_image_bytes(data: object, mime_type: ImageMimeType) -> tuple[int, int]:
    """The (width, height) of a valid still image of ``mime_type``; :class:`InvalidImageError`
    (with the one message) for anything else. Never raises another error, whatever the bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValidationError("image must be raw bytes.")
    raw = bytes(data)
    try:
        if mime_type is ImageMimeType.PNG:
            size = _png_size(raw)
        elif mime_type is ImageMimeType.JPEG:
            size = _jpeg_size(raw)
        else:
            size = _webp_size(raw)
    except (_Bad, struct.error, IndexError):
        raise InvalidImageError(INVALID_IMAGE_MESSAGE) from None
    width, height = size
    if width < 1 or height < 1 or width * height > MAX_IMAGE_PIXELS:
        raise InvalidImageError(INVALID_IMAGE_MESSAGE)
    return size


class _Bad(Exception):
    """Internal: the bytes break the format."""


def _require(condition: bool) -> None:
    if not condition:
        raise _Bad


# PNG colour types and the bit depths each allows (PNG specification, IHDR).
_PNG_DEPTHS: Final = {0: {1, 2, 4, 8, 16}, 2: {8, 16}, 3: {1, 2, 4, 8}, 4: {8, 16}, 6: {8, 16}}


def _png_size(data: bytes) -> tuple[int, int]:
    _require(data.startswith(_PNG_SIGNATURE))
    pos = len(_PNG_SIGNATURE)
    size: tuple[int, int] | None = None
    seen_data = False
    first = True
    while True:
        _require(pos + 12 <= len(data))
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        _require(length < 2**31 and pos + 12 + length <= len(data))
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        _require(zlib.crc32(kind + body) == crc)
        if first:
            _require(kind == b"IHDR" and length == 13)
            width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", body)
            _require(0 < width < 2**31 and 0 < height < 2**31)
            _require(depth in _PNG_DEPTHS.get(colour, set()))
            _require(compression == 0 and filtering == 0 and interlace in (0, 1))
            size = (width, height)
            first = False
        elif kind == b"acTL":  # an animated PNG
            raise _Bad
        elif kind == b"IDAT":
            seen_data = True
        elif kind == b"IEND":
            if size is None or not seen_data:
                raise _Bad
            return size
        pos += 12 + length


# JPEG start-of-frame markers (baseline, extended, progressive, lossless; Huffman or arithmetic).
_SOF: Final = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_STANDALONE: Final = frozenset({0x01, *range(0xD0, 0xD8)})


def _jpeg_size(data: bytes) -> tuple[int, int]:
    _require(data[:2] == b"\xff\xd8")
    pos = 2
    while True:
        _require(pos < len(data) and data[pos] == 0xFF)
        while pos < len(data) and data[pos] == 0xFF:  # fill bytes
            pos += 1
        _require(pos < len(data))
        marker = data[pos]
        pos += 1
        _require(marker not in (0x00, 0xD8, 0xD9, 0xDA))  # data or image end before any frame
        if marker in _STANDALONE:
            continue
        _require(pos + 2 <= len(data))
        (length,) = struct.unpack(">H", data[pos : pos + 2])
        _require(length >= 2 and pos + length <= len(data))
        if marker in _SOF:
            _require(length >= 8)
            precision, height, width, components = struct.unpack(">BHHB", data[pos + 2 : pos + 8])
            _require(precision in (8, 12, 16) and 1 <= components <= 4 and length == 8 + 3 * components)
            # The frame's scan must follow: a file cut right after its header is not an image.
            _require(b"\xff\xda" in data[pos + length :])
            return width, height
        pos += length


def _webp_size(data: bytes) -> tuple[int, int]:
    _require(len(data) >= 20 and data[:4] == b"RIFF" and data[8:12] == b"WEBP")
    (riff_size,) = struct.unpack("<I", data[4:8])
    _require(riff_size >= 12 and riff_size % 2 == 0 and 8 + riff_size <= len(data))
    end = 8 + riff_size
    pos = 12
    canvas: tuple[int, int] | None = None
    first = True
    while pos + 8 <= end:
        kind = data[pos : pos + 4]
        (length,) = struct.unpack("<I", data[pos + 4 : pos + 8])
        body_end = pos + 8 + length
        _require(body_end <= end)
        body = data[pos + 8 : body_end]
        if kind == b"VP8X":
            _require(first and length >= 10)
            _require(not body[0] & 0x02)  # the animation flag
            width = 1 + int.from_bytes(body[4:7], "little")
            height = 1 + int.from_bytes(body[7:10], "little")
            canvas = (width, height)
        elif kind in (b"ANIM", b"ANMF"):
            raise _Bad
        elif kind == b"VP8 ":
            size = _vp8_size(body)
            return canvas or size
        elif kind == b"VP8L":
            size = _vp8l_size(body)
            return canvas or size
        else:
            _require(not first)  # a simple file starts with its image chunk
        first = False
        pos = body_end + (length & 1)
    raise _Bad


def _vp8_size(body: bytes) -> tuple[int, int]:
    _require(len(body) >= 10)
    tag = int.from_bytes(body[0:3], "little")
    _require(not tag & 1)  # a key frame
    _require(body[3:6] == b"\x9d\x01\x2a")
    width, height = struct.unpack("<HH", body[6:10])
    return width & 0x3FFF, height & 0x3FFF


def _vp8l_size(body: bytes) -> tuple[int, int]:
    _require(len(body) >= 5 and body[0] == 0x2F)
    bits = int.from_bytes(body[1:5], "little")
    _require(bits >> 29 == 0)  # the version number
    return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)


@dataclass(frozen=True, slots=True)
class StoredImage:
    """The bytes of an image record (``record_id``): its MIME type, its bytes (``None`` when a
    read did not ask for them), and for a message-attached image its message and the place of
    the image among the message's content parts (``position``, from 0)."""

    record_id: str
    mime_type: ImageMimeType
    data: bytes | None = None
    message_id: str | None = None
    position: int | None = None

    def __post_init__(self) -> None:
        check_id(self.record_id, "image id")
        object.__setattr__(self, "mime_type", parse_mime_type(self.mime_type))
        if self.data is not None and not isinstance(self.data, bytes):
            raise ValidationError("image must be raw bytes.")
        if (self.message_id is None) != (self.position is None):
            raise ValidationError("a message-attached image names its message and its position together.")
        if self.message_id is not None:
            check_id(self.message_id, "message id")
        if self.position is not None:
            check_counter(self.position, "image position", minimum=0)


@dataclass(frozen=True, slots=True)
class TextPart:
    """A text content part of a message read with its images."""

    text: str
    type: str = "text"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image content part of a message read with its images: the attached image's id, MIME
    type and description, and its bytes when the read asked for them (else ``None``)."""

    id: str
    mime_type: ImageMimeType
    description: str
    bytes: bytes | None = None
    type: str = "image"
