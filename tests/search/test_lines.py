"""drarena/search/lines.py: key tables, pread ranges, and LineList (a dense index's `docid`
file as a list of lines, memory-mapped) against what the code before it read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.search import lines
from drarena.search.lines import KeyTable, LineList, LineReader, PackedStrings, key_of, keys_of


def test_key_of_is_stable_and_takes_any_string() -> None:
    assert key_of("abc#0") == key_of("abc#0") != key_of("abc#1")
    # offsets.npy files already built hold these digests: the function must never change
    assert key_of("abc#0") == 0xA3878565CFDB3939
    assert 0 <= key_of("\ud800") < 2**64  # a lone surrogate is still a key
    assert keys_of(["a", "b"]).dtype == np.uint64
    assert keys_of(["a", "\ud800", "é#1"]).tolist() == [
        key_of("a"),
        key_of("\ud800"),
        key_of("é#1"),
    ]
    assert keys_of([]).tolist() == []


def test_key_table_finds_rows_and_shared_digests() -> None:
    keys = np.array([5, 3, 5, 9], dtype=np.uint64)
    table = KeyTable.build(keys, np.array([0, 1, 2, 3], dtype=np.uint64))
    assert list(table.keys) == [3, 5, 5, 9] and table.distinct() == 3 and len(table) == 4
    assert table.shared() == [[0, 2]]
    empty = KeyTable(np.zeros(0, dtype=np.uint64))
    assert empty.holds(["x"]) == [False] and empty.candidates("x") == [] and empty.distinct() == 0


def test_key_table_candidates_and_holds_use_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "_digest", lambda raw: len(raw).to_bytes(8, "little"))
    table = KeyTable(np.array([1, 2, 2, 4], dtype=np.uint64))  # rows: positions
    assert table.candidates("xy") == [1, 2] and table.candidates("abc") == []
    assert table.holds(["a", "abc", "abcd", "zzzzz"]) == [True, False, True, False]


@pytest.mark.parametrize(
    "data",
    [b"", b"a\n", b"a", b"p1\np2\n", b"p1\np2", b"\n\n", b"x\n\ny\n", "é#1\nß#2\n".encode()],
)
def test_line_list_reads_what_splitlines_read(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "docid"
    path.write_bytes(data)
    ids = LineList(path, "ids")
    expected = data.decode("utf-8").splitlines()
    assert len(ids) == len(expected) and list(ids) == expected
    assert ids[:] == expected and ids[-1:] == expected[-1:]
    with pytest.raises(IndexError):
        ids[len(expected)]


def test_line_list_across_scan_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "NEWLINE_CHUNK", 7)
    path = tmp_path / "docid"
    expected = [f"page{i:03d}#{i % 4}" for i in range(100)]
    path.write_text("\n".join(expected) + "\n", encoding="utf-8")
    assert list(LineList(path, "ids")) == expected


def test_line_list_names_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "docid"
    path.write_bytes(b"ok\n\xff\xfe\n")
    ids = LineList(path, "dense ids")
    assert ids[0] == "ok"
    with pytest.raises(DrarenaError, match=r"docid: line 2 of the dense ids is not UTF-8"):
        ids[1]


def test_line_reader_reads_ranges_and_refuses_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    reader = LineReader(path, "test file")
    assert reader.read(2, 3) == b"234" and reader.read(10, 0) == b""
    with pytest.raises(DrarenaError, match="test file shorter than its offsets say"):
        reader.read(8, 3)
    with pytest.raises(DrarenaError, match="cannot read the test file"):
        LineReader(tmp_path / "missing", "test file")


def test_packed_strings_by_position_in_any_order() -> None:
    texts = ["b#0", "", "é#12", "\ud800x", "a" * 300]
    packed = PackedStrings(len(texts) + 1)
    for i in (3, 0, 4, 2, 1):
        packed.put(i, texts[i])
    packed.freeze()
    assert len(packed) == 6 and list(packed) == [*texts, ""]  # never put: ""
    assert packed[-2] == texts[-1] and packed[1:3] == texts[1:3]
