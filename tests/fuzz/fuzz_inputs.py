"""Inputs for the parser fuzz tests: a small valid snapshot made by drarena's own writer
(the seeds the mutations start from) and a strategy that mutates bytes.

Why mutate valid inputs as well as draw random bytes: random bytes rarely get past a parser's
first check (a magic number, a version line); flips, cuts, splices and repeats of a valid
WARC, CDXJ line or YAML file reach the code behind those checks.
"""

from __future__ import annotations

import gzip
import zlib
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

from hypothesis import strategies as st

from drarena.web.warc.manifest import Counts
from drarena.web.warc.writer import Exchange, FetchFailure, SnapshotWriter

BASE = "http://example.org"

# (kind, position as a fraction of the length, argument)
_OPS = st.tuples(
    st.sampled_from(["flip", "set", "cut", "insert", "delete", "repeat", "splice"]),
    st.floats(0, 1, allow_nan=False),
    st.binary(min_size=1, max_size=24),
)


def apply_ops(data: bytes, ops: list[tuple[str, float, bytes]]) -> bytes:
    """Apply byte mutations in order; each keeps the result within a few KB of the input."""
    buf = bytearray(data)
    for kind, where, arg in ops:
        pos = min(int(where * len(buf)), max(len(buf) - 1, 0))
        if kind == "flip" and buf:
            buf[pos] ^= arg[0] or 1
        elif kind == "set" and buf:
            buf[pos : pos + len(arg)] = arg
        elif kind == "cut":
            del buf[pos:]
        elif kind == "insert":
            buf[pos:pos] = arg
        elif kind == "delete":
            del buf[pos : pos + len(arg)]
        elif kind == "repeat":
            buf[pos:pos] = bytes(buf[pos : pos + 64 * len(arg)])
        elif kind == "splice":  # move a stretch elsewhere (records out of order)
            piece = bytes(buf[pos : pos + 40 * len(arg)])
            del buf[pos : pos + len(piece)]
            at = min(arg[0] * len(buf) // 255, len(buf))
            buf[at:at] = piece
    return bytes(buf)


def mutated(seed: bytes, max_ops: int = 6) -> st.SearchStrategy[bytes]:
    """`seed` with 1..max_ops mutations."""
    return st.lists(_OPS, min_size=1, max_size=max_ops).map(lambda ops: apply_ops(seed, ops))


def text_mutated(seed: str, max_ops: int = 4) -> st.SearchStrategy[bytes]:
    """A text file's bytes with mutations, some of them ASCII-only so the text stays text."""
    ascii_ops = st.tuples(
        st.sampled_from(["set", "insert", "delete", "cut", "repeat"]),
        st.floats(0, 1, allow_nan=False),
        st.text(alphabet=" \n\t:-[]{}&*!|>'\"#,?%@`0123456789.aeEx", min_size=1, max_size=12).map(
            str.encode
        ),
    )
    ops = st.lists(st.one_of(ascii_ops, _OPS), min_size=1, max_size=max_ops)
    return ops.map(lambda o: apply_ops(seed.encode(), o))


def tiny_snapshot(folder: Path) -> Path:
    """A snapshot of 7 captures that covers what the reader decodes: plain, gzip- and
    deflate-coded and chunked bodies, a redirect, a 404, a revisit and a failed fetch."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "tiny",
        {"seeds": [f"{BASE}/"]},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
        new_id=lambda: f"<urn:uuid:00000000-0000-0000-0000-{next(ticks):012d}>",
    )
    writer.open()
    html = (("Content-Type", "text/html; charset=utf-8"),)
    body = b"<html><head><title>Index</title></head><body><a href='/a'>a</a></body></html>"
    pages = [
        ("/", 200, html, body),
        ("/gz", 200, (*html, ("Content-Encoding", "gzip")), gzip.compress(b"<p>gzip</p>" * 9)),
        ("/deflate", 200, (*html, ("Content-Encoding", "deflate")), zlib.compress(b"<p>d</p>")),
        (
            "/chunked",
            200,
            (*html, ("Transfer-Encoding", "chunked")),
            b"5\r\n<p>ch\r\n6\r\nunked<\r\n0\r\n\r\n",
        ),
        ("/moved", 301, (("Location", "/"),), b""),
        ("/missing", 404, (("Content-Type", "text/plain"),), b"not found"),
        ("/copy", 200, html, body),  # same payload as / -> a revisit record
    ]
    for path, status, headers, entity in pages:
        writer.write_exchange(
            Exchange(f"{BASE}{path}", (("Host", "example.org"),), status, "OK", headers, entity)
        )
    writer.write_failure(FetchFailure(f"{BASE}/slow", "timeout", "timed out after 2 s"))
    writer.close(complete=True, counts=Counts(pages=8, responses=7))
    return folder
