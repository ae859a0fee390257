"""The check of image bytes (domain.images): formats, MIME detection, refusals, and a fuzz test
that whatever the bytes, the check answers a size or the one typed error, never another."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from images_samples import animated_webp, jpeg, png, webp
from palimpsest.domain.errors import InvalidImageError, ValidationError
from palimpsest.domain.images import (
    INVALID_IMAGE_MESSAGE,
    MAX_IMAGE_PIXELS,
    ImageMimeType,
    StoredImage,
    check_image_bytes,
    detect_mime_type,
    parse_mime_type,
)

SAMPLES = {
    "png": (png(5, 4), ImageMimeType.PNG, (5, 4)),
    "jpeg": (jpeg(3, 2), ImageMimeType.JPEG, (3, 2)),
    "webp-lossy": (webp(4, 3), ImageMimeType.WEBP, (4, 3)),
    "webp-lossless": (webp(7, 9, lossless=True), ImageMimeType.WEBP, (7, 9)),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_a_valid_image_is_detected_and_measured(name: str) -> None:
    data, mime, size = SAMPLES[name]
    assert detect_mime_type(data) is mime
    assert check_image_bytes(data, mime) == size


@pytest.mark.parametrize("name", SAMPLES)
def test_bytes_of_another_format_are_refused_with_the_reference_message(name: str) -> None:
    data, mime, _ = SAMPLES[name]
    for other in ImageMimeType:
        if other is not mime:
            with pytest.raises(InvalidImageError, match=r"^Image bytes are invalid or do not match the supplied"):
                check_image_bytes(data, other)


@pytest.mark.parametrize(
    ("data", "mime"),
    [(png(animated=True), ImageMimeType.PNG), (animated_webp(), ImageMimeType.WEBP)],
    ids=["apng", "animated-webp"],
)
def test_animated_images_are_refused(data: bytes, mime: ImageMimeType) -> None:
    with pytest.raises(InvalidImageError):
        check_image_bytes(data, mime)


def test_an_image_of_too_many_pixels_is_refused_before_any_decoding() -> None:
    side = int(MAX_IMAGE_PIXELS**0.5) + 1
    # A header announcing side × side pixels; the data is a few bytes (never decoded).
    with pytest.raises(InvalidImageError):
        check_image_bytes(png(side, side)[:33] + png(1, 1)[33:], ImageMimeType.PNG)
    with pytest.raises(InvalidImageError):
        check_image_bytes(jpeg(side, side), ImageMimeType.JPEG)


@pytest.mark.parametrize("name", SAMPLES)
def test_a_truncated_image_is_refused(name: str) -> None:
    data, mime, _ = SAMPLES[name]
    with pytest.raises(InvalidImageError):
        check_image_bytes(data[: len(data) // 2], mime)


def test_a_png_with_a_broken_checksum_is_refused() -> None:
    data = bytearray(png())
    data[20] ^= 0xFF  # inside IHDR: its CRC no longer matches
    with pytest.raises(InvalidImageError):
        check_image_bytes(bytes(data), ImageMimeType.PNG)


def test_unknown_bytes_have_no_mime_type() -> None:
    with pytest.raises(InvalidImageError, match=INVALID_IMAGE_MESSAGE[:20]):
        detect_mime_type(b"GIF89a" + b"\x00" * 20)


def test_only_raw_bytes_are_images() -> None:
    with pytest.raises(ValidationError, match="image must be raw bytes"):
        check_image_bytes("iVBORw0KGgo=", ImageMimeType.PNG)


def test_mime_types_parse_from_their_names_only() -> None:
    assert parse_mime_type("image/webp") is ImageMimeType.WEBP
    with pytest.raises(ValidationError, match="mime_type must be one of"):
        parse_mime_type("image/gif")


def test_a_stored_image_names_its_message_and_position_together() -> None:
    with pytest.raises(ValidationError):
        StoredImage("i1", ImageMimeType.PNG, b"x", message_id="m1")
    assert StoredImage("i1", "image/png", b"x", message_id="m1", position=0).mime_type is ImageMimeType.PNG


def _mutations() -> st.SearchStrategy[bytes]:
    """Valid samples with a few bytes changed, cut short, or extended; and arbitrary bytes."""
    base = st.sampled_from([s[0] for s in SAMPLES.values()] + [png(animated=True), animated_webp()])

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(base))
        for _ in range(draw(st.integers(0, 6))):
            position = draw(st.integers(0, len(data) - 1))
            data[position] = draw(st.integers(0, 255))
        cut = draw(st.integers(0, len(data)))
        return bytes(data[:cut]) + draw(st.binary(max_size=8))

    return st.one_of(mutated(), st.binary(max_size=256))


@settings(max_examples=1500, deadline=None)
@given(data=_mutations(), mime=st.sampled_from(list(ImageMimeType)))
@example(data=b"", mime=ImageMimeType.PNG)
@example(data=b"\xff\xd8" + b"\xff" * 40, mime=ImageMimeType.JPEG)
@example(data=b"RIFF\xff\xff\xff\xffWEBP", mime=ImageMimeType.WEBP)
@example(data=b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 2**32 - 1) + b"IHDR", mime=ImageMimeType.PNG)
def test_whatever_the_bytes_the_check_answers_a_size_or_the_typed_error(data: bytes, mime: ImageMimeType) -> None:
    try:
        width, height = check_image_bytes(data, mime)
    except InvalidImageError as exc:
        assert str(exc) == INVALID_IMAGE_MESSAGE
    else:
        assert 1 <= width * height <= MAX_IMAGE_PIXELS
    try:
        detected = detect_mime_type(data)
    except InvalidImageError:
        return
    assert detected in ImageMimeType
