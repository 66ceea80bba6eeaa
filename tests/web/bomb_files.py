"""Decompression bombs for the hardening tests: small files that expand to hundreds of MB.

Why built here and not committed: a gzip of N zeros is about N/1000 bytes and takes well
under a second to make, so each test makes exactly the size it needs. Everything is streamed,
so building a 400 MB bomb never holds 400 MB.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zlib
from pathlib import Path

MB = 1 << 20
_BLOCK = b"\0" * MB


def deflate_stream(
    prefix: bytes, zeros: int, suffix: bytes = b"", wbits: int = 31, fill: bytes = b"\0"
) -> bytes:
    """One deflate stream (gzip for wbits 31, zlib 15, raw -15) of prefix + `zeros` bytes of
    `fill` + suffix, made in milliseconds: after a full flush the compressor forgets its
    history, so every further MB compresses to the very same bytes, which are repeated; only
    the checksum trailer is computed over the whole content."""
    block_in = fill * MB
    if zeros < 3 * MB:  # too small for the trick: compress it plainly
        packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
        return packer.compress(prefix + fill * zeros + suffix) + packer.flush()
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    head = packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(block_in) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block_in) + packer.flush(zlib.Z_FULL_FLUSH)
    assert block == again, "full flush did not reset the compressor"
    count = zeros // MB - 2
    rest = fill * (zeros % MB) + suffix
    tail = packer.compress(rest) + packer.flush()
    if wbits > 16:
        crc = zlib.crc32(prefix)
        for _ in range(count + 2):
            crc = zlib.crc32(block_in, crc)
        total = len(prefix) + zeros + len(suffix)
        tail = tail[:-8] + struct.pack("<II", zlib.crc32(rest, crc), total & 0xFFFFFFFF)
    elif wbits > 0:
        adler = zlib.adler32(prefix)
        for _ in range(count + 2):
            adler = zlib.adler32(block_in, adler)
        tail = tail[:-4] + struct.pack(">I", zlib.adler32(rest, adler))
    return head + block + again + block * count + tail


def zeros_crc(prefix: bytes, n: int, fill: bytes = b"\0") -> int:
    crc = zlib.crc32(prefix)
    block_in = fill * MB
    for _ in range(n // MB):
        crc = zlib.crc32(block_in, crc)
    return zlib.crc32(fill * (n % MB), crc)


def gzip_zeros(n: int) -> bytes:
    """A gzip stream of `n` zero bytes (about n/1000 bytes long)."""
    return deflate_stream(b"", n)


def deflate_zeros(n: int, raw: bool = False) -> bytes:
    """`Content-Encoding: deflate` of `n` zeros: zlib-wrapped, or raw deflate as some servers
    send it."""
    return deflate_stream(b"", n, wbits=-15 if raw else 15)


def brotli_zeros(n: int) -> bytes:
    """A brotli stream of `n` zeros (a few hundred bytes per 100 MB)."""
    import brotli

    packer = brotli.Compressor(quality=5)
    parts = [packer.process(_BLOCK) for _ in range(n // MB)]
    parts.append(packer.process(b"\0" * (n % MB)))
    parts.append(packer.finish())
    return b"".join(parts)


def http_block(entity: bytes, coding: str, content_type: str = "text/html") -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
        f"Content-Encoding: {coding}\r\nContent-Length: {len(entity)}\r\n\r\n"
    )
    return head.encode() + entity


def warc_record_head(url: str, kind: str, block_length: int, digest: str = "") -> bytes:
    lines = [
        "WARC/1.1",
        f"WARC-Type: {kind}",
        f"WARC-Target-URI: {url}",
        "WARC-Date: 2024-01-01T00:00:00Z",
        f"WARC-Record-ID: <urn:uuid:{hashlib.md5(url.encode()).hexdigest()}>",
        "Content-Type: application/http;msgtype=response",
    ]
    if digest:
        lines.append(f"WARC-Block-Digest: {digest}")
    lines.append(f"Content-Length: {block_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def write_warc(path: Path, records: list[tuple[str, bytes]]) -> Path:
    """A gzip-per-record WARC of `response` records (url, HTTP block)."""
    with path.open("wb") as out:
        for url, block in records:
            packer = zlib.compressobj(9, zlib.DEFLATED, 31)
            out.write(packer.compress(warc_record_head(url, "response", len(block))))
            out.write(packer.compress(block))
            out.write(packer.compress(b"\r\n\r\n"))
            out.write(packer.flush())
    return path


def write_member_bomb(
    path: Path, url: str, zeros: int, before: tuple[tuple[str, bytes], ...] = ()
) -> Path:
    """A WARC whose last gzip member (after the records `before`) holds one response record
    with an identity entity of `zeros` zero bytes: the member itself is the bomb."""
    write_warc(path, list(before))
    block_head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        b"Content-Length: " + str(zeros).encode() + b"\r\n\r\n"
    )
    prefix = warc_record_head(url, "response", len(block_head) + zeros) + block_head
    with path.open("ab") as out:
        out.write(deflate_stream(prefix, zeros, b"\r\n\r\n"))
    return path


def write_whole_file_bomb(path: Path, zeros: int) -> Path:
    """A whole-file gzip WARC (one member for all records): a plain page, a response with an
    identity entity of `zeros` zero bytes, another plain page."""
    first = write_warc_bytes([("http://bomb.example/a.html", http_block(b"<p>a</p>", "identity"))])
    last = write_warc_bytes([("http://bomb.example/c.html", http_block(b"<p>c</p>", "identity"))])
    block_head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        b"Content-Length: " + str(zeros).encode() + b"\r\n\r\n"
    )
    prefix = (
        first
        + warc_record_head("http://bomb.example/big", "response", len(block_head) + zeros)
        + block_head
    )
    path.write_bytes(deflate_stream(prefix, zeros, b"\r\n\r\n" + last))
    return path


def _resource(path: str, data_hash: str, size: int) -> dict[str, object]:
    return {"name": path.rsplit("/", 1)[-1], "path": path, "hash": data_hash, "bytes": size}


def write_zip(
    path: Path,
    members: list[tuple[str, bytes, int, int, bool]],
    aliases: tuple[tuple[str, int], ...] = (),
) -> Path:
    """A zip of (name, stored or raw-deflated data, crc32, uncompressed size, deflated)
    members, written by hand because zipfile cannot take data already compressed. `aliases`:
    (name, index) entries of the central directory that point at member `index`'s bytes
    again (overlapping members, how zip bombs reuse one compressed kernel)."""
    local, central = io.BytesIO(), io.BytesIO()
    entries = []
    for name, data, crc, size, deflated in members:
        raw = name.encode()
        method = 8 if deflated else 0
        entries.append((crc, len(data), size, method, local.tell()))
        local.write(
            struct.pack(
                "<4sHHHHHIIIHH",
                b"PK\x03\x04",
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(raw),
                0,
            )
            + raw
            + data
        )
    names = [m[0] for m in members] + [a[0] for a in aliases]
    for name, index in zip(names, [*range(len(members)), *(a[1] for a in aliases)], strict=True):
        crc, compressed, size, method, offset = entries[index]
        raw = name.encode()
        central.write(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                compressed,
                size,
                len(raw),
                0,
                0,
                0,
                0,
                0o644 << 16,
                offset,
            )
            + raw
        )
    start = local.tell()
    body = central.getvalue()
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(names), len(names), len(body), start, 0
    )
    path.write_bytes(local.getvalue() + body + end)
    return path


def _warc_member(warc: bytes) -> tuple[str, bytes, int, int, bool]:
    return ("archive/a.warc", warc, zlib.crc32(warc), len(warc), False)


def small_warc() -> bytes:
    return write_warc_bytes(
        [("http://bomb.example/", http_block(b"<html><title>t</title></html>", "identity"))]
    )


def wacz_package_bomb(path: Path, padding: int) -> Path:
    """A WACZ whose datapackage.json (deflated) is valid JSON padded with `padding` spaces;
    its header declares the true size."""
    warc = small_warc()
    text = json.dumps(
        {
            "profile": "data-package",
            "resources": [
                _resource("archive/a.warc", "sha256:" + hashlib.sha256(warc).hexdigest(), len(warc))
            ],
        }
    ).encode()
    prefix, suffix = text[:-1], b"}"
    data = deflate_stream(prefix, padding, suffix, wbits=-15, fill=b" ")
    crc = zlib.crc32(suffix, zeros_crc(prefix, padding, b" "))
    return write_zip(
        path, [("datapackage.json", data, crc, len(prefix) + padding + 1, True), _warc_member(warc)]
    )


def wacz_overlapping(path: Path) -> Path:
    """A WACZ whose second WARC member is the first one's bytes again."""
    warc = small_warc()
    digest = "sha256:" + hashlib.sha256(warc).hexdigest()
    package = json.dumps(
        {
            "profile": "data-package",
            "resources": [
                _resource("archive/a.warc", digest, len(warc)),
                _resource("archive/b.warc", digest, len(warc)),
            ],
        }
    ).encode()
    return write_zip(
        path,
        [
            ("datapackage.json", package, zlib.crc32(package), len(package), False),
            _warc_member(warc),
        ],
        aliases=(("archive/b.warc", 1),),
    )


def wacz_member_bomb(path: Path, zeros: int) -> Path:
    """A WACZ whose archive/a.warc is deflated: one WARC record, then `zeros` zero bytes,
    declared honestly (zip header, datapackage bytes and hash all match the content)."""
    record = small_warc()
    size = len(record) + zeros
    digest = hashlib.sha256(record)
    for _ in range(zeros // MB):
        digest.update(_BLOCK)
    digest.update(b"\0" * (zeros % MB))
    package = json.dumps(
        {
            "profile": "data-package",
            "resources": [_resource("archive/a.warc", "sha256:" + digest.hexdigest(), size)],
        }
    ).encode()
    data = deflate_stream(record, zeros, wbits=-15)
    return write_zip(
        path,
        [
            ("datapackage.json", package, zlib.crc32(package), len(package), False),
            ("archive/a.warc", data, zeros_crc(record, zeros), size, True),
        ],
    )


def write_warc_bytes(records: list[tuple[str, bytes]]) -> bytes:
    """An uncompressed WARC of `response` records, as bytes."""
    out = io.BytesIO()
    for url, block in records:
        out.write(warc_record_head(url, "response", len(block)))
        out.write(block)
        out.write(b"\r\n\r\n")
    return out.getvalue()


def wacz_repeated(path: Path, times: int, size: int = 600_000) -> Path:
    """A WACZ of one stored WARC (`size` bytes of records) whose datapackage.json lists it
    `times` times (issue 38, item 4: 0.6 MB imported as a 587 MB snapshot)."""
    records: list[tuple[str, bytes]] = []
    while sum(len(b) for _, b in records) < size:
        n = len(records)
        body = b"<html><title>page %d</title><p>" % n + b"x" * 4000 + b"</p></html>"
        records.append((f"http://rep.example/{n}", http_block(body, "identity")))
    warc = write_warc_bytes(records)
    resource = _resource("archive/a.warc", "sha256:" + hashlib.sha256(warc).hexdigest(), len(warc))
    package = json.dumps({"profile": "data-package", "resources": [resource] * times}).encode()
    return write_zip(
        path,
        [
            ("datapackage.json", package, zlib.crc32(package), len(package), False),
            ("archive/a.warc", warc, zlib.crc32(warc), len(warc), False),
        ],
    )
