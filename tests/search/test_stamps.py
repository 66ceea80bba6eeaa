"""Whole-file sha256s remembered by stat (drarena/search/stamps.py): an unchanged file is not
hashed again, any write (in place, same size, mtime set back; or a file replaced) is, a file
written just before it was hashed is hashed again, and a damaged stamp file is ignored and
rewritten. Then through the retriever's open: an edited docs.jsonl, passages.jsonl or
offsets.npy is refused with the errors it always was, and an unchanged index is opened
without hashing or parsing anything."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from test_passagestore import SETTINGS, tiny_snapshot

from drarena import digests
from drarena.errors import DrarenaError
from drarena.search import stamps
from drarena.search.base import SearchData
from drarena.search.build import build_passages
from drarena.search.manifest import IndexLayout, PassagesManifest, require_fresh
from drarena.search.passagestore import OFFSETS_FILE, PASSAGES_FILE
from drarena.search.stamps import STAMPS_FILE, verified_sha256


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files hashed in full, in order (drarena.digests.file_sha256's calls)."""
    calls: list[Path] = []
    real = digests.file_sha256

    def counting(path: Path) -> str:
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(digests, "file_sha256", counting)
    return calls


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file as if written long ago: the stamps' clock runs a minute ahead, so a file
    written by the test is not 'racy' (see the module)."""
    real = time.time_ns
    monkeypatch.setattr(stamps.time, "time_ns", lambda: real() + 60_000_000_000)


def rewrite_in_place(path: Path, data: bytes) -> None:
    """The bytes written into the same file (same inode), until its ctime has moved on: a
    write within one tick of the clock keeps the ctime (the racy case the stamps guard)."""
    before = os.stat(path).st_ctime_ns
    while True:
        with path.open("r+b") as fh:
            fh.write(data)
            fh.truncate()
        if os.stat(path).st_ctime_ns != before:
            return
        time.sleep(0.005)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"one\n" * 1000)
    return path


@pytest.mark.usefixtures("settled")
def test_an_unchanged_file_is_hashed_once(big: Path, hashed: list[Path]) -> None:
    folder = big.parent
    assert verified_sha256(big, folder) == sha(big.read_bytes())
    assert verified_sha256(big, folder) == sha(big.read_bytes())
    assert verified_sha256(big, folder) == sha(big.read_bytes())
    assert hashed == [big]
    record = json.loads((folder / STAMPS_FILE).read_text())["files"][str(big)]
    st = os.stat(big)
    assert record == {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
        "dev": st.st_dev,
        "sha256": sha(big.read_bytes()),
    }


@pytest.mark.usefixtures("settled")
def test_any_write_is_hashed_again(big: Path, hashed: list[Path]) -> None:
    folder = big.parent
    verified_sha256(big, folder)
    old = os.stat(big)
    # the same size, other bytes, written in place, and the mtime set back as it was
    changed = b"two\n" + b"one\n" * 999
    rewrite_in_place(big, changed)
    os.utime(big, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(big).st_size == old.st_size and os.stat(big).st_mtime_ns == old.st_mtime_ns
    assert verified_sha256(big, folder) == sha(changed)
    # replaced by another file (a rename over it: another inode)
    other = big.with_name("other")
    other.write_bytes(b"three\n")
    os.replace(other, big)
    assert verified_sha256(big, folder) == sha(b"three\n")
    assert verified_sha256(big, folder) == sha(b"three\n")
    assert hashed == [big, big, big]


def test_a_file_written_just_before_is_hashed_again(big: Path, hashed: list[Path]) -> None:
    """The real clock: a ctime under RACY_NS old is not recorded (a same-size write in the
    same clock tick would leave the stat as it was)."""
    assert verified_sha256(big, big.parent) == verified_sha256(big, big.parent)
    assert hashed == [big, big]
    assert not (big.parent / STAMPS_FILE).exists()


@pytest.mark.usefixtures("settled")
@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xfe not utf-8",
        b"{not json",
        b"[1, 2]",
        b'{"format": 99, "files": {}}',
        b'{"format": 1, "files": []}',
        b'{"format": 1, "files": {"PATH": {"size": "1"}}}',
        b'{"format": 1, "files": {"PATH": {"size": 1, "mtime_ns": 1, "ctime_ns": 1, '
        b'"ino": 1, "dev": 1, "sha256": "../../etc"}}}',
        b"[" * 100_000,
        b" " * (stamps.MAX_STAMPS_BYTES + 1),
    ],
)
def test_a_damaged_stamp_file_is_ignored_and_rewritten(
    big: Path, hashed: list[Path], garbage: bytes
) -> None:
    stamp_file = big.parent / STAMPS_FILE
    stamp_file.write_bytes(garbage.replace(b"PATH", str(big).encode()))
    assert verified_sha256(big, big.parent) == sha(big.read_bytes())
    assert hashed == [big]
    assert str(big) in json.loads(stamp_file.read_text())["files"]
    assert verified_sha256(big, big.parent) == sha(big.read_bytes()) and hashed == [big]


@pytest.mark.usefixtures("settled")
def test_no_folder_or_one_that_cannot_be_written(big: Path, hashed: list[Path]) -> None:
    verified_sha256(big, None)
    verified_sha256(big, big.parent / "missing")
    verified_sha256(big, big.parent / "missing")
    assert hashed == [big] * 3 and not (big.parent / "missing").exists()
    with pytest.raises(FileNotFoundError):
        verified_sha256(big.parent / "nope", big.parent)


# --- through the retriever's open -----------------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> IndexLayout:
    layout = IndexLayout(tmp_path / "index", tiny_snapshot(tmp_path / "tiny"))
    build_passages(layout, SETTINGS)
    return layout


def open_data(layout: IndexLayout) -> SearchData:
    SearchData._cache.clear()
    return SearchData.load(layout)


@pytest.mark.usefixtures("settled")
def test_an_unchanged_index_opens_without_reading_a_file_through(
    layout: IndexLayout, hashed: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_data(layout)
    assert set(hashed) >= {layout.passages / PASSAGES_FILE, layout.passages / OFFSETS_FILE}
    hashed.clear()

    def no_parse(*args: object) -> None:
        raise AssertionError("docs.jsonl read through")

    monkeypatch.setattr("drarena.corpus.extract.doc_lines", no_parse)
    again = open_data(layout)
    assert hashed == []
    assert again.docs.get("0000000000000003") == first.docs.get("0000000000000003")
    pid = next(iter(first.passages))
    assert again.passages[pid] == first.passages[pid]


@pytest.mark.usefixtures("settled")
def test_a_docs_file_edited_after_its_stamp_is_refused(layout: IndexLayout) -> None:
    require_fresh(layout.passages, PassagesManifest, layout.snapshot_dir, layout, "passages")
    docs = layout.snapshot_dir / "docs.jsonl"
    raw = docs.read_bytes()
    rewrite_in_place(docs, raw.replace(b"common", b"COMMON", 1))
    with pytest.raises(DrarenaError, match=r"docs\.jsonl changed since it was built"):
        require_fresh(layout.passages, PassagesManifest, layout.snapshot_dir, layout, "passages")


@pytest.mark.usefixtures("settled")
def test_passages_edited_after_their_stamp_are_refused(layout: IndexLayout) -> None:
    open_data(layout)
    path = layout.passages / PASSAGES_FILE
    rewrite_in_place(path, path.read_bytes().replace(b"common", b"COMMON", 1))
    with pytest.raises(DrarenaError, match="not the passages its manifest recorded"):
        open_data(layout)


@pytest.mark.usefixtures("settled")
def test_offsets_damaged_after_their_stamp_are_refused(layout: IndexLayout) -> None:
    open_data(layout)
    path = layout.passages / OFFSETS_FILE
    raw = path.read_bytes()
    rewrite_in_place(path, raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(DrarenaError, match="damaged passage offsets"):
        open_data(layout)
