"""Gzip-member floods (issue 38, item 2): a body or a WARC file made of hundreds of thousands
of empty 20-byte gzip members. Each member cost a copy of everything after it (zlib's
unused_data), so 16 MiB of them took minutes to decode, in extract, `snapshot serve` (whose
event loop it blocked), the crawler, live pages and drift; and a WARC file of them took as
long to import.

The work is counted, not timed (machines are noisy): the inflaters made and the bytes fed to
them, which must stay within a bound set by the input's size. Each test failed before its fix.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path
from typing import Any

import pytest
from bomb_files import http_block, write_warc

from drarena.web.warc import warcfile
from drarena.web.warc.warcfile import (
    MAX_BODY_MEMBERS,
    GzipStream,
    HttpMessage,
    Window,
    decode_body,
    iter_members,
)

EMPTY = gzip.compress(b"", mtime=0)  # 20 bytes


class Counted:
    """zlib (or isal_zlib) with its inflaters counted and the bytes fed to them summed."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.made = 0
        self.fed = 0

    def decompressobj(self, **kwargs: Any) -> Any:
        self.made += 1
        return _CountedInflater(self, self.real.decompressobj(**kwargs))


class _CountedInflater:
    def __init__(self, owner: Counted, inner: Any) -> None:
        self.owner, self.inner = owner, inner

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        self.owner.fed += len(data)
        return bytes(self.inner.decompress(data, max_length))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    counter = Counted(warcfile._zlib)
    monkeypatch.setattr(warcfile, "_zlib", counter)
    return counter


def _gzip_body(entity: bytes) -> HttpMessage:
    return HttpMessage(200, "OK", (("Content-Encoding", "gzip"),), entity)


def test_a_body_of_empty_members_is_cut_at_the_member_cap(counted: Counted) -> None:
    flood = EMPTY * ((1 << 20) // len(EMPTY))  # 52,428 members, 1 MiB
    decoded = decode_body(_gzip_body(flood))
    assert decoded.body == b"" and decoded.truncated
    assert counted.made <= MAX_BODY_MEMBERS + 1
    assert counted.fed <= 4 * len(flood)  # before: each member was fed the rest of the body


def test_members_up_to_the_cap_decode_whole(counted: Counted) -> None:
    parts = [f"<p>part {i}</p>".encode() for i in range(MAX_BODY_MEMBERS)]
    body = b"".join(gzip.compress(p, mtime=0) for p in parts)
    decoded = decode_body(_gzip_body(body))
    assert decoded.body == b"".join(parts) and not decoded.truncated
    one_more = decode_body(_gzip_body(body + gzip.compress(b"<p>over</p>", mtime=0)))
    assert one_more.truncated and one_more.body == b"".join(parts)


@pytest.mark.parametrize(
    ("entity", "expected"),
    [
        (gzip.compress(b"a", mtime=0) + gzip.compress(b"b", mtime=0), b"ab"),
        (gzip.compress(b"a", mtime=0) + b"\0" * 100_000 + gzip.compress(b"b", mtime=0), b"ab"),
        (gzip.compress(b"a" * 300_000, mtime=0) + b"\0" * 7, b"a" * 300_000),
    ],
    ids=["two members", "zero padding between", "zero padding after"],
)
def test_several_members_and_zero_padding_decode_as_gzip_does(
    entity: bytes, expected: bytes
) -> None:
    assert gzip.decompress(entity) == expected
    decoded = decode_body(_gzip_body(entity))
    assert decoded.body == expected and not decoded.truncated


def test_trailing_garbage_and_a_cut_stream_keep_the_body_as_stored() -> None:
    for entity in (
        gzip.compress(b"a", mtime=0) + b"garbage",
        gzip.compress(b"a" * 1000, mtime=0)[:-9],
    ):
        assert decode_body(_gzip_body(entity)).body == entity


def test_a_large_member_is_capped_with_bounded_feeding(counted: Counted) -> None:
    entity = gzip.compress(b"x" * (20 << 20), mtime=0)  # 20 MiB -> ~20 KiB compressed
    decoded = decode_body(_gzip_body(entity), limit=1 << 20)
    assert decoded.truncated and decoded.body == b"x" * (1 << 20)
    assert counted.made == 1 and counted.fed <= 4 * len(entity)


@pytest.mark.parametrize("wbits", [15, -15])
def test_zlib_and_raw_deflate_bodies_still_decode(wbits: int) -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    entity = packer.compress(b"<p>deflated</p>" * 5000) + packer.flush()
    decoded = decode_body(HttpMessage(200, "OK", (("Content-Encoding", "deflate"),), entity))
    assert decoded.body == b"<p>deflated</p>" * 5000


# --- a whole-file gzip stream (import's rewrite of multi-record members) ----------------------


def _read_all(stream: GzipStream) -> bytes:
    out = []
    while chunk := stream.read1(1 << 16):
        out.append(chunk)
    return b"".join(out)


@pytest.mark.parametrize("split", [1, 7, 4096, 1 << 20])
def test_gzip_stream_reads_what_gzip_reads(split: int) -> None:
    data = bytes(range(256)) * (40 if split < 100 else 5000)
    members = b"".join(
        gzip.compress(data[i : i + split], mtime=0) for i in range(0, len(data), split)
    )
    if len(members) > 4 << 20:
        members = members[: 4 << 20]
        members = members[: members.rfind(b"\x1f\x8b\x08")]
    expected = gzip.decompress(members)
    assert _read_all(GzipStream(io.BytesIO(members))) == expected


def test_gzip_stream_feeds_a_flood_linearly(counted: Counted) -> None:
    flood = gzip.compress(b"WARC/1.0\r\n", mtime=0) + EMPTY * 50_000
    assert _read_all(GzipStream(io.BytesIO(flood))) == b"WARC/1.0\r\n"
    assert counted.fed <= 4 * len(flood)  # gzip.GzipFile: a 128 KiB copy per member


def test_gzip_stream_errors_are_what_import_counts_as_damage() -> None:
    with pytest.raises(EOFError):
        _read_all(GzipStream(io.BytesIO(gzip.compress(b"a" * 1000, mtime=0)[:-20])))
    with pytest.raises(gzip.BadGzipFile):
        _read_all(GzipStream(io.BytesIO(gzip.compress(b"a", mtime=0) + b"junk")))
    with pytest.raises(warcfile.INFLATE_ERRORS):
        bad = bytearray(gzip.compress(b"abc" * 100, mtime=0))
        bad[-8] ^= 0xFF  # the CRC
        _read_all(GzipStream(io.BytesIO(bytes(bad))))


# --- a WARC file of empty members (import's scan) ----------------------------------------------


class CountingFile(io.BytesIO):
    read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def test_a_warc_of_damaged_members_is_read_once(counted: Counted) -> None:
    """Regression: every damaged member rewound the window by seeking, so each of a flood's
    members re-read a 1 MiB window of the file (quadratic): a 16 MiB flood ran for hours."""
    flood = EMPTY * 20_000  # 400 KB
    fh = CountingFile(flood)
    win = Window(fh)
    items = list(iter_members(win, "flood.warc.gz", warcfile.scan_member))
    assert sum(getattr(i, "records", 0) for i in items) >= 20_000 - 1
    assert fh.read_bytes <= 2 * len(flood) + (2 << 20)
    assert counted.fed <= 64 * len(flood)  # before: a 64 KiB piece per 20-byte member


def test_import_of_a_flood_lists_a_few_damaged_stretches_and_counts_all(tmp_path: Path) -> None:
    from drarena.web.warc.importer import ImportOptions, import_archives
    from drarena.web.warc.importfile import DAMAGE_LISTED

    warc = write_warc(
        tmp_path / "flood.warc.gz", [("http://a.test/", http_block(b"<p>hi</p>", ""))]
    )
    with warc.open("ab") as out:
        out.write(EMPTY * 5000)
    result = import_archives(
        "flood", [warc], tmp_path / "out", ImportOptions(progress=False, jobs=1)
    )
    (item,) = result.files
    assert item["damaged_records"] == 5000
    assert len(item["damage"]) == DAMAGE_LISTED
