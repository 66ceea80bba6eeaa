"""Fuzzing the WARC reader and the HTTP head parser with arbitrary and mutated bytes.

Properties (what each API documents): `iter_file` yields records and Damage items and never
raises on bad bytes; the import scanners (`scan_member` per gzip member, `iter_plain`) do the
same, a gzip member holding several records aside (MultiRecordMember, a ValueError the
importer handles); `read_member` and `parse_http_response` return a result or raise
ValueError/zlib.error; `dechunk` always returns bytes. (Content decoding and its size cap
have their own bomb tests in tests/web.)
"""

from __future__ import annotations

import gzip
import io
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_inputs import mutated, tiny_snapshot
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.web.warc.warcfile import (
    DAMAGE_ERRORS,
    Damage,
    HttpMessage,
    MultiRecordMember,
    RawRecord,
    RecordHead,
    Window,
    dechunk,
    find_split,
    iter_file,
    iter_members,
    iter_plain,
    parse_http_response,
    read_member,
    scan_member,
)


@pytest.fixture(scope="module")
def seeds() -> Iterator[dict[str, bytes]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = tiny_snapshot(Path(tmp) / "tiny")
        gz = (folder / "tiny-00000.warc.gz").read_bytes()
        yield {"gz": gz, "plain": gzip.decompress(gz)}


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp) / "fuzz.warc"


def _walk_file(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    total = 0
    for item in iter_file(path):
        assert isinstance(item, RawRecord | Damage)
        if isinstance(item, RawRecord):
            assert 0 <= item.offset < len(data)
            total += len(item.block)
            for _ in (item.type, item.header("WARC-Target-URI")):
                pass
    # a member inflates to at most ~1032x its size: no block can come from nowhere
    assert total <= 1100 * len(data) + 1024


def _scan(data: bytes, gzipped: bool) -> list[RecordHead | Damage]:
    win = Window(io.BytesIO(data))
    items = iter_members(win, "f", scan_member) if gzipped else iter_plain(win, "f")
    out = []
    try:
        for item in items:
            assert isinstance(item, RecordHead | Damage)
            out.append(item)
    except MultiRecordMember:
        pass  # documented: the importer rewrites such a file
    return out


def _one_member(data: bytes) -> None:
    for offset in {0, len(data) // 3, len(data) // 2}:
        try:
            records = read_member(data, offset, "f")
        except DAMAGE_ERRORS:
            continue
        assert all(isinstance(r, RawRecord) for r in records)
        for record in records:
            _http(record.block)


def _http(block: bytes) -> None:
    try:
        message = parse_http_response(block)
    except ValueError:
        return
    assert isinstance(message, HttpMessage) and message.status >= 0
    assert message.entity == block[len(block) - len(message.entity) :]


@given(st.binary(max_size=4096))
@example(b"")
@example(b"\x1f\x8b\x08")
@example(b"WARC/1.1\r\nContent-Length: 99999999999\r\n\r\n")
@example(b"WARC/1.1\r\nContent-Length: \xc2\xb2\r\n\r\nxy")  # '²' passes isdigit(), not int()
def test_random_bytes(seeds: dict[str, bytes], scratch: Path, data: bytes) -> None:
    for prefix in (b"", b"WARC/1.1\r\n", b"\x1f\x8b\x08\x00"):
        blob = prefix + data
        _walk_file(scratch, blob)
        _scan(blob, prefix.startswith(b"\x1f"))
        _one_member(blob)


@given(st.data())
def test_mutated_gzip_warc(seeds: dict[str, bytes], scratch: Path, data: st.DataObject) -> None:
    blob = data.draw(mutated(seeds["gz"]))
    _walk_file(scratch, blob)
    _scan(blob, True)
    _one_member(blob)
    scratch.write_bytes(blob)
    at = find_split(scratch, True, len(blob) // 2, len(blob))
    assert at is None or 0 <= at < len(blob)


@given(st.data())
def test_mutated_plain_warc(seeds: dict[str, bytes], scratch: Path, data: st.DataObject) -> None:
    blob = data.draw(mutated(seeds["plain"]))
    _walk_file(scratch, blob)
    _scan(blob, False)
    _one_member(blob)
    scratch.write_bytes(blob)
    at = find_split(scratch, False, len(blob) // 2, len(blob))
    assert at is None or 0 <= at < len(blob)


HEADS = st.sampled_from(
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>x</p>",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(b"<p>x</p>" * 50),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n" + zlib.compress(b"<p>y</p>" * 50),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n\x1b\x07\x00\xf8\xa5\x12\x8c\x04",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.0 301 Moved\r\nLocation: /x\r\n folded: on\r\n\r\n",
    ]
)


@given(HEADS.flatmap(mutated))
@example(b"HTTP/1.1 \xb200 OK\r\n\r\n")  # latin-1 '²': isdigit() but not int()
@example(b"HTTP/1.1 " + b"9" * 5000 + b" OK\r\n\r\n")  # past int()'s digit limit
def test_http_head_parser(block: bytes) -> None:
    _http(block)


@given(st.one_of(st.binary(max_size=512), HEADS.flatmap(mutated)))
@example(b"ffffffffffffffff\r\nx")
@example(b"-5\r\nabc\r\n0\r\n\r\n")
def test_dechunk_returns_bytes(data: bytes) -> None:
    out = dechunk(data)
    assert isinstance(out, bytes) and len(out) <= len(data)
