"""jsonbytes.compact_json writes json.dumps' bytes exactly; request_body writes the same value.

The cache keys of every recorded run are sha256 over these bytes, so one differing byte would
make old caches miss on replay: each case is compared with json.dumps itself, including the
cases where the shortcut must hand over to json (control characters without a short escape,
strings that look like a stand-in, lone surrogates, keys json cannot sort).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from typing import Any

import pytest

from drarena.models import jsonbytes
from drarena.models.cache import canonical_json, request_key
from drarena.models.jsonbytes import LONG, compact_json, request_body

# every character class json treats apart, and some it does not
ALPHABET = [
    *map(chr, range(0x20)),  # control characters: short escapes and \u00XX ones
    '"',
    "\\",
    "/",
    "\x7f",
    "a",
    "Z",
    "0",
    " ",
    "é",
    "’",
    "中",
    "😀",
    "\u2028",
    "\x00\x01",  # the stand-in's prefix
    "\x00\x010",  # a whole stand-in
    '"\x00\x01',
]


# without the control characters json writes as \u00XX: long strings made of these take the
# shortcut all the way (one of the others hands the string to json)
SHORT_ESCAPES = [c for c in ALPHABET if not any(ord(x) < 0x20 and x not in "\b\t\n\f\r" for x in c)]


def _text(rng: random.Random, long: bool) -> str:
    if long:  # chunks repeated up to past LONG, so escapes land all over a long string
        alphabet = ALPHABET if rng.random() < 0.3 else SHORT_ESCAPES
        chunks = ["".join(rng.choices(alphabet, k=rng.randint(1, 8))) for _ in range(20)]
        out = ""
        while len(out) < LONG + rng.randint(0, 100):
            out += rng.choice(chunks) + "plain text " * rng.randint(0, 40)
        return out
    return "".join(rng.choices(ALPHABET, k=rng.randint(0, 12)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 5 and roll < 0.3:
        return {_text(rng, False): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 5 and roll < 0.45:
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return tuple(items) if rng.random() < 0.3 else items
    if roll < 0.7:
        return _text(rng, long=rng.random() < 0.25)
    return rng.choice([0, -3, 10**20, 1.5, -0.0, 1e300, math.inf, math.nan, True, False, None])


def _dumps(value: Any, sort_keys: bool) -> bytes:
    text = json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


@pytest.mark.parametrize("sort_keys", [False, True])
def test_generated_values_encode_to_json_dumps_bytes(sort_keys: bool) -> None:
    rng = random.Random(20261201)
    longs = 0
    for _ in range(400):
        value = _value(rng)
        longs += jsonbytes._has_long(value, 0)
        assert compact_json(value, sort_keys=sort_keys) == _dumps(value, sort_keys)
    assert longs > 40  # the generator reached the long-string path, not only json's


def test_request_shaped_values_with_long_messages() -> None:
    rng = random.Random(7)
    for _ in range(50):
        messages = [
            {"role": "user", "content": _text(rng, long=True)},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "n": 1}]},
            {"content": _text(rng, long=rng.random() < 0.5), "role": "tool"},
        ]
        payload = {
            "v": "1",
            "model": "openai/m",
            "messages": messages,
            "response_format": {"type": "json_schema", "json_schema": {"schema": {"b": 1, "a": 2}}},
            "sampling": {"temperature": 0.0, "seed": 3},
        }
        assert compact_json(payload, sort_keys=True) == _dumps(payload, True)
        assert compact_json(payload) == _dumps(payload, False)
        assert json.loads(request_body(payload)) == json.loads(_dumps(payload, False))


def test_a_string_that_looks_like_a_stand_in_is_left_to_json() -> None:
    long = "x" * LONG + "é"
    for look_alike in ("\x00\x010", "\x00\x011", '"\x00\x01', "\x00\x019", "\x00\x01"):
        value = {"a": long, "b": look_alike, "c": [long, look_alike + long]}
        for sort_keys in (False, True):
            assert compact_json(value, sort_keys=sort_keys) == _dumps(value, sort_keys)


def test_long_strings_at_the_top_and_as_keys() -> None:
    long = "q\n" * LONG
    assert compact_json(long) == _dumps(long, False)
    assert compact_json([long, long]) == _dumps([long, long], False)
    value = {long: long, "k": {long: [long]}}
    assert compact_json(value, sort_keys=True) == _dumps(value, True)


def test_what_json_refuses_is_refused_the_same_way() -> None:
    lone = "\ud800" + "x" * LONG  # json writes it; UTF-8 cannot
    with pytest.raises(UnicodeEncodeError):
        compact_json({"a": lone})
    with pytest.raises(UnicodeEncodeError):
        _dumps({"a": lone}, False)
    # the cache stores it as its \\uXXXX escape (SQLite takes UTF-8 only): it reads back as is
    stored = canonical_json({"a": lone})
    assert stored == json.dumps({"a": lone}, sort_keys=True, separators=(",", ":"))
    assert stored.isascii() and json.loads(stored) == {"a": lone}
    mixed = {1: "x" * LONG, "b": 2}  # keys json cannot sort
    with pytest.raises(TypeError):
        compact_json(mixed, sort_keys=True)
    assert compact_json(mixed) == _dumps(mixed, False)


def test_request_body_of_a_short_value_is_json_dumps_own() -> None:
    value = {"model": "m", "messages": [{"role": "user", "content": "héllo \n"}]}
    assert request_body(value) == json.dumps(value).encode("utf-8")


def test_remembered_literals_are_bounded_and_keyed_by_the_string_itself() -> None:
    texts = [f"{i}:" + "é\n" * LONG for i in range(jsonbytes.RECENT * 3)]
    for text in texts:
        assert compact_json([text]) == _dumps([text], False)
    assert len(jsonbytes._recent) <= jsonbytes.RECENT
    again = texts[-1]
    assert compact_json({"t": again}) == _dumps({"t": again}, False)
    equal_not_same = "".join(list(again))  # an equal string, another object
    assert compact_json([equal_not_same]) == _dumps([again], False)


def test_request_key_is_the_hash_it_always_was() -> None:
    """The key before jsonbytes: sha256 over json.dumps' canonical text."""
    messages = [{"role": "user", "content": "Quote: “" + "page text\n\t\\ " * 2000 + "”"}]
    fmt = {"type": "json_schema", "json_schema": {"name": "task", "schema": {"type": "object"}}}
    payload = {
        "v": "1",
        "model": "openai/q",
        "messages": messages,
        "tools": None,
        "tool_choice": None,
        "response_format": fmt,
        "sampling": {"temperature": 0.0},
    }
    before = hashlib.sha256(_dumps(payload, True)).hexdigest()
    key = request_key(
        model="openai/q",
        messages=messages,
        sampling={"temperature": 0.0},
        response_format=fmt,
    )
    assert key == before
