"""Fuzzing what reads a snapshot folder and what builds one from foreign archives: CDXJ
lines (Snapshot lookups, the WACZ export's re-keying) and `snapshot import` of mutated WARC
files.

Property: each call returns its documented result or raises DrarenaError (the one-line error
the CLI prints), never another exception; an import that succeeds leaves a snapshot that
verifies and whose every indexed URL can be looked up.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_inputs import BASE, mutated, text_mutated, tiny_snapshot
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.errors import DrarenaError
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.manifest import CDXJ_NAME, load_manifest, write_manifest
from drarena.web.warc.snapshot import Snapshot, StoredResponse
from drarena.web.warc.wacz import export_wacz
from drarena.web.warc.warcfile import RawRecord, iter_file, sha1_b32

URLS = [
    f"{BASE}{p}"
    for p in (
        "/",
        "/gz",
        "/deflate",
        "/chunked",
        "/moved",
        "/missing",
        "/copy",
        "/slow",
        "/nowhere",
    )
]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tiny_snapshot(root / "tiny")
        yield root


def _with_cdxj(work: Path, cdxj: bytes) -> Path:
    """A copy of the tiny snapshot whose index.cdxj is `cdxj`, its manifest digest updated
    (a self-consistent snapshot someone else made, not one `verify` would flag)."""
    folder = work / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(work / "tiny", folder)
    (folder / CDXJ_NAME).write_bytes(cdxj)
    manifest = load_manifest(folder)
    cdxj_digest = manifest.cdxj.model_copy(
        update={"sha256": hashlib.sha256(cdxj).hexdigest(), "size": len(cdxj)}
    )
    write_manifest(folder, manifest.model_copy(update={"cdxj": cdxj_digest}))
    return folder


def _read_all(folder: Path, export_to: Path) -> None:
    try:
        snap = Snapshot.open(folder)
    except DrarenaError:
        return
    with snap:
        for url in URLS:
            try:
                found = snap.lookup(url)
            except DrarenaError:
                continue
            assert found is None or isinstance(found, StoredResponse)
            assert isinstance(url in snap, bool)
        with contextlib.suppress(DrarenaError):
            assert all(isinstance(u, str) for u in snap.urls())
    export_to.unlink(missing_ok=True)  # an earlier example's package: export never replaces one
    with contextlib.suppress(DrarenaError):
        export_wacz(folder, export_to)


def _cdxj_lines(work: Path) -> list[str]:
    return (work / "tiny" / CDXJ_NAME).read_text(encoding="utf-8").splitlines()


@given(st.data())
@example(None)
def test_mutated_cdxj(work: Path, data: st.DataObject | None) -> None:
    lines = _cdxj_lines(work)
    text = "".join(line + "\n" for line in lines)
    cdxj = text.encode() if data is None else data.draw(text_mutated(text, 6))
    _read_all(_with_cdxj(work, cdxj), work / "out.wacz")


# Field values a foreign or edited index may hold: wrong types, bad URLs, odd offsets.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.text(max_size=20),
    st.sampled_from(
        [
            "http://[::1",
            "http://example.org/",
            "tiny-00000.warc.gz",
            "../manifest.json",
            "-1",
            "1e9",
            "nan",
            "warc/revisit",
        ]
    ),
    st.lists(st.integers(), max_size=2),
)


@given(st.data())
@example(None)
def test_cdxj_fields(work: Path, data: st.DataObject | None) -> None:
    """Every line kept sorted and well-formed as a line; the JSON fields themselves fuzzed."""
    out = []
    for line in _cdxj_lines(work):
        key, stamp, blob = line.split(" ", 2)
        fields = json.loads(blob)
        if data is not None:
            for name in data.draw(st.lists(st.sampled_from(sorted(fields)), max_size=3)):
                if data.draw(st.booleans()):
                    fields[name] = data.draw(_VALUES)
                else:
                    fields.pop(name, None)
            if data.draw(st.booleans()):
                blob = json.dumps(data.draw(st.one_of(_VALUES, st.just(fields))))
            else:
                blob = json.dumps(fields)
        out.append(f"{key} {stamp} {blob}")
    cdxj = "".join(line + "\n" for line in sorted(out)).encode()
    _read_all(_with_cdxj(work, cdxj), work / "out.wacz")


def _import(work: Path, warc: bytes, suffix: str, plain: bytes | None = None) -> None:
    """Import `warc`; `plain`: what it inflates to when it is one gzip member for all records
    (its bad block digests are counted there, since reading member by member cannot)."""
    src = work / f"input{suffix}"
    out = work / "imported"
    shutil.rmtree(out, ignore_errors=True)
    src.write_bytes(warc)
    try:
        result = import_archives("fuzz", [src], out, ImportOptions(progress=False, jobs=1))
    except DrarenaError:
        assert not out.exists()  # a refused import leaves nothing half-made
        return
    with Snapshot.open(result.out) as snap:
        # Import keeps records as they are and does not recompute block digests, so a record
        # whose stated digest was already wrong in the input is flagged by verify; the import
        # itself must add no problem.
        problems = snap.verify().problems
        assert all("block digest mismatch" in p for p in problems), problems
        if plain is not None:
            (work / "plain.warc").write_bytes(plain)
        assert len(problems) <= _bad_block_digests(src if plain is None else work / "plain.warc")
        for url in snap.urls():
            try:
                found = snap.lookup(url)
            except DrarenaError:
                continue
            assert found is None or isinstance(found, StoredResponse)


def _bad_block_digests(path: Path) -> int:
    return sum(
        1
        for r in iter_file(path)
        if isinstance(r, RawRecord)
        and r.header("WARC-Block-Digest").startswith("sha1:")
        and sha1_b32(r.block) != r.header("WARC-Block-Digest")
    )


@given(st.data())
def test_import_mutated_gzip_warc(work: Path, data: st.DataObject) -> None:
    _import(
        work, data.draw(mutated((work / "tiny" / "tiny-00000.warc.gz").read_bytes())), ".warc.gz"
    )


@given(st.data())
def test_import_mutated_plain_warc(work: Path, data: st.DataObject) -> None:
    plain = gzip.decompress((work / "tiny" / "tiny-00000.warc.gz").read_bytes())
    _import(work, data.draw(mutated(plain)), ".warc")


@given(st.data())
def test_import_mutated_whole_file_gzip_warc(work: Path, data: st.DataObject) -> None:
    """One gzip member for all records: rewritten per record as it streams (a mutated
    record, or a mutated stream cut short, must leave no partial member behind)."""
    plain = gzip.decompress((work / "tiny" / "tiny-00000.warc.gz").read_bytes())
    whole = gzip.compress(data.draw(mutated(plain)), mtime=0)
    if data.draw(st.booleans()):
        whole = data.draw(mutated(whole))
    _import(work, whole, ".warc.gz", plain=_inflated(whole))


def _inflated(data: bytes) -> bytes:
    """What a gzip stream inflates to before its first error (as import reads it)."""
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        try:
            while chunk := stream.read1(1 << 16):
                out += chunk
        except (OSError, EOFError, zlib.error):
            pass
    return bytes(out)


# --- crashes the fuzzing found, kept as named regression tests --------------------------------


def _edit_line(work: Path, url: str, edit: object) -> Path:
    """The tiny snapshot with the CDXJ line of `url` changed by `edit` (fields -> blob)."""
    out = []
    for line in _cdxj_lines(work):
        key, stamp, blob = line.split(" ", 2)
        fields = json.loads(blob)
        if fields["url"] == url:
            blob = edit(fields)  # type: ignore[operator]
        out.append(f"{key} {stamp} {blob}")
    return _with_cdxj(work, "".join(line + "\n" for line in out).encode())


def _set(name: str, value: object) -> object:
    return lambda fields: json.dumps({**fields, name: value})


@pytest.mark.parametrize(
    ("url", "edit", "needle"),
    [
        (f"{BASE}/", lambda f: json.dumps(f)[:-5], "line 1"),  # JSONDecodeError before the fix
        (f"{BASE}/", lambda f: json.dumps([1, 2]), "line 1"),  # TypeError
        (
            f"{BASE}/",
            lambda f: json.dumps({k: v for k, v in f.items() if k != "offset"}),
            "offset",
        ),  # KeyError
        (f"{BASE}/", _set("offset", "12ab"), "line 1"),  # ValueError from int()
        (f"{BASE}/", _set("offset", None), "line 1"),  # TypeError from int()
        (f"{BASE}/", _set("url", None), "line 1"),  # TypeError in canonicalize_url
        (f"{BASE}/", _set("url", "http://[::1"), "line 1"),  # ValueError in canonicalize_url
        (f"{BASE}/", _set("filename", 7), "line 1"),  # AttributeError in safe_file_name
        (f"{BASE}/", _set("offset", "0"), "not an HTTP response"),  # the warcinfo record
        (f"{BASE}/copy", _set("digest", ["x"]), "payload"),  # unhashable digest (revisits)
    ],
)
def test_malformed_cdxj_line_is_one_line_error(
    work: Path, url: str, edit: object, needle: str
) -> None:
    folder = _edit_line(work, url, edit)
    with Snapshot.open(folder) as snap, pytest.raises(DrarenaError, match=needle) as err:
        snap.lookup(f"{BASE}/copy" if "copy" in url else url)
    assert "\n" not in str(err.value)


def test_urls_names_a_malformed_line(work: Path) -> None:
    folder = _edit_line(work, f"{BASE}/gz", lambda f: "{}")
    with Snapshot.open(folder) as snap, pytest.raises(DrarenaError, match=r"line \d+"):
        snap.urls()


@pytest.mark.parametrize("field", ["url", "filename"])
@pytest.mark.parametrize("value", [None, 7, ["x"]])
def test_export_names_a_line_whose_field_is_not_text(work: Path, field: str, value: object) -> None:
    """AttributeError/TypeError in the WACZ export's re-keying before the fix."""
    folder = _edit_line(work, f"{BASE}/missing", _set(field, value))
    with pytest.raises(DrarenaError, match=r"line \d+: not a CDXJ line"):
        export_wacz(folder, work / "out.wacz")
