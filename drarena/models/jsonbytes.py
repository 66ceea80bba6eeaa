"""Compact JSON as UTF-8 bytes: the bytes of `json.dumps(value, sort_keys=..., separators=(",",
":"), ensure_ascii=False).encode("utf-8")`, faster where the value holds long strings.

Why: every model call encodes its messages twice, once sorted for the cache key (request_key)
and once for the HTTP body, and a task prompt quotes ~30 KB of pages. json's C encoder writes a
string with any non-ASCII character in it (one curly quote is enough) at about 7 ns a
character, so a 128-agent round's 64 task requests spent ~0.8 ms each on JSON, half of what
preparing one took, while the model servers waited (bench/bench_cluster.py). Here each long
string is escaped on its UTF-8 bytes instead (JSON escapes only ASCII characters, and no byte
of a multi-byte UTF-8 character is ASCII, so escaping the bytes is escaping the text), and the
rest of the value, small, still goes through json's encoder.

The bytes are identical by construction, and tests/models/test_models_jsonbytes.py checks them
against json.dumps on generated values; where a shortcut could differ (a control character
without a short escape, a string that looks like a stand-in), json.dumps does the work.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

# strings at least this long are escaped on their bytes; shorter ones stay with json
LONG = 8192
# containers this deep are not opened to find long strings: a request's message text sits at
# depth 3 (payload -> messages -> message -> content), and deeper values go to json whole
MAX_DEPTH = 3
# A long string's stand-in while json encodes the rest: json writes the two control
# characters as \u0000\u0001, and the number says which string it stands for.
_STAND_IN = "\x00\x01"
_MARK = b'"\\u0000\\u0001'
# json's escapes for the characters it escapes (ensure_ascii=False): backslash first, so the
# backslashes the others add are not doubled again
_SHORT = (
    (b"\\", b"\\\\"),
    (b'"', b'\\"'),
    (b"\n", b"\\n"),
    (b"\r", b"\\r"),
    (b"\t", b"\\t"),
    (b"\x08", b"\\b"),
    (b"\x0c", b"\\f"),
)
# the control characters json writes as \u00XX: rare in text, left to json
_OTHER_CONTROLS = bytes([*range(0x08), 0x0B, *range(0x0E, 0x20)])
# long strings whose literals are remembered (id -> (the string, its literal)), oldest first;
# the strings are held, so an id is not reused while its entry lives
RECENT = 32
_recent: dict[int, tuple[str, bytes]] = {}
_recent_lock = threading.Lock()
_ENCODE = {
    sort: json.JSONEncoder(sort_keys=sort, separators=(",", ":"), ensure_ascii=False).encode
    for sort in (False, True)
}


def compact_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """UTF-8 bytes of `json.dumps(value, sort_keys=sort_keys, separators=(",", ":"),
    ensure_ascii=False)`; raises what that and `.encode("utf-8")` raise (a lone surrogate:
    UnicodeEncodeError)."""
    encode = _ENCODE[sort_keys]
    if not _has_long(value, 0):
        return encode(value).encode("utf-8")
    return _spliced(value, encode)


def request_body(value: Any) -> bytes:
    """An HTTP body for `value`: json.dumps' own bytes (ASCII, as aiohttp's `json=` sends)
    where no string is long, else compact_json's. The same JSON value either way; only the
    cache key needs one exact spelling."""
    if not _has_long(value, 0):
        return json.dumps(value).encode("utf-8")
    return _spliced(value, _ENCODE[False])


def _spliced(value: Any, encode: Callable[[Any], str]) -> bytes:
    """`encode(value)` as UTF-8, its long strings escaped on their bytes: json writes the
    value with stand-ins, each stand-in is replaced by its string's literal."""
    longs: list[str] = []
    text = encode(_stand_ins(value, longs, 0)).encode("utf-8")
    parts = text.split(_MARK)
    out = [parts[0]]
    seen: set[int] = set()
    for part in parts[1:]:
        number, quote, rest = part.partition(b'"')
        if not quote or not number.isdigit() or int(number) >= len(longs):
            return encode(value).encode("utf-8")  # a string of the value looked like a mark
        seen.add(int(number))
        out += (_string(longs[int(number)]), rest)
    if len(seen) != len(longs) or len(parts) != len(longs) + 1:
        return encode(value).encode("utf-8")
    return b"".join(out)


def _has_long(value: Any, depth: int) -> bool:
    """Whether _stand_ins would find a long string (a walk that builds nothing)."""
    kind = type(value)
    if kind is str:
        return len(value) >= LONG
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        value = value.values()
    elif kind is not list and kind is not tuple:
        return False
    for item in value:
        if type(item) is str:
            if len(item) >= LONG:
                return True
        elif depth + 1 < MAX_DEPTH and _has_long(item, depth + 1):
            return True
    return False


def _stand_ins(value: Any, longs: list[str], depth: int) -> Any:
    """`value` with each long string (a dict value or list item, down to MAX_DEPTH) replaced
    by its stand-in (numbered by its place in `longs`); containers with none are returned as
    they are. Dict keys are left alone, so json sorts (or refuses to sort) the same keys."""
    kind = type(value)
    if kind is str:
        if len(value) < LONG:
            return value
        longs.append(value)
        return f"{_STAND_IN}{len(longs) - 1}"
    if depth >= MAX_DEPTH:
        return value
    if kind is dict:
        new = {k: _stand_ins(v, longs, depth + 1) for k, v in value.items()}
        return new if any(new[k] is not v for k, v in value.items()) else value
    if kind is list or kind is tuple:
        items = [_stand_ins(v, longs, depth + 1) for v in value]
        return items if any(n is not v for n, v in zip(items, value, strict=True)) else value
    return value


def _string(text: str) -> bytes:
    """json's literal for `text`, as UTF-8; the last few are remembered by identity (a str
    cannot change), since a call's key and its body hold the same message strings."""
    with _recent_lock:  # keys are made on the event loop and in tool threads alike
        found = _recent.get(id(text))
    if found is not None and found[0] is text:
        return found[1]
    literal = _literal(text)
    with _recent_lock:
        if len(_recent) >= RECENT:
            del _recent[next(iter(_recent))]
        _recent[id(text)] = (text, literal)
    return literal


def _literal(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw.translate(None, _OTHER_CONTROLS)) != len(raw):
        return _ENCODE[False](text).encode("utf-8")
    for char, escaped in _SHORT:
        if char in raw:
            raw = raw.replace(char, escaped)
    return b'"' + raw + b'"'


def without_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings replaced by U+FFFD (a surrogate pair
    becomes its character). Why: a lone surrogate (invalid UTF-8 on a command line, read with
    Python's surrogateescape; a model's tool call with a "\\ud800" escape) has no UTF-8 bytes,
    so no request key can hash it and no server can read it. Only called when encoding failed:
    walking every request would cost each call time for a case this rare."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_lone_surrogates(v) for v in value]
    return value
