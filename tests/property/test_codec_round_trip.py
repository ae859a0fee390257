"""Property: the entity codec (``application/codec.py``) round-trips every entity through JSON.

Encoding gives an object ``json.dumps`` writes as it is (no NaN, no custom types); decoding
what ``json.loads`` reads back gives an equal entity, of every kind, with every field drawn.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from palimpsest.application.codec import ENTITY_KINDS, FIELDS, decode, encode, kind_of
from strategies import entities


@given(entities())
def test_every_entity_survives_json(entity: Any) -> None:
    obj = encode(entity)
    assert list(obj) == ["kind", *FIELDS[kind_of(entity)]]
    text = json.dumps(obj, allow_nan=False, ensure_ascii=False)
    assert decode(json.loads(text)) == entity


@given(entities())
def test_decoding_as_the_named_kind_without_kind_in_the_object(entity: Any) -> None:
    obj = encode(entity)
    kind = obj.pop("kind")
    assert kind in ENTITY_KINDS
    assert decode(obj, kind=kind) == entity
