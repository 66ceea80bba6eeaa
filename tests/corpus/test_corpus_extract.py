"""`drarena extract` on the committed snapshot and on a snapshot of bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_helpers import FIXTURE, fixture_page, write_snapshot

from drarena.corpus.extract import (
    ExtractResult,
    _iter_jsonl,
    doc_id,
    extract_snapshot,
    load_docs,
    load_links,
    text_digest,
)
from drarena.corpus.trees import TreeParams, build_snapshot_trees
from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import Snapshot

BASE = "http://127.0.0.1:8765"
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def test_fixture_docs(pydocs: ExtractResult) -> None:
    docs = load_docs(pydocs.snapshot_dir)
    with Snapshot.open(FIXTURE) as snap:
        html = {r.canonical_url: r for r in snap.iter_responses() if r.status == 200 and r.is_html}
    # Every HTML page of the snapshot is a doc (latest capture per URL), none lost.
    assert {d.url for d in docs} == set(html)
    assert pydocs.docs == len(docs) >= 300
    for doc in docs:
        assert doc.id == doc_id(doc.url)
        assert doc.digest == text_digest(doc.contents) and doc.chars == len(doc.contents)
        assert doc.record_id == html[doc.url].record_id
        assert doc.payload_digest == html[doc.url].payload_digest
    assert len({d.id for d in docs}) == len(docs)
    # pyserini JsonCollection: every line has id and contents.
    for line in pydocs.docs_path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        assert isinstance(data["id"], str) and isinstance(data["contents"], str)


def test_fixture_redirect_and_duplicate_are_reported(pydocs: ExtractResult) -> None:
    docs = {d.url: d for d in load_docs(pydocs.snapshot_dir)}
    manifest = json.loads(pydocs.manifest_path.read_text(encoding="utf-8"))
    # The spec's /howto 301 -> /howto/ becomes an alias of the page it lands on.
    assert f"{BASE}/howto" in docs[f"{BASE}/howto/"].aliases
    assert manifest["counts"]["redirect_aliases"] >= 1
    # /howto/ and /howto/index.html have the same text: one is flagged, both are kept.
    dup = [d for d in docs.values() if d.duplicate_of]
    assert dup and all(docs[d.url].url in docs for d in dup)
    listed = {item["url"] for item in manifest["duplicates"]}
    assert listed == {d.url for d in dup}
    assert manifest["snapshot_fingerprint"] == Snapshot.open(FIXTURE).fingerprint


def test_fixture_links(pydocs: ExtractResult) -> None:
    ids = {d.id for d in load_docs(pydocs.snapshot_dir)}
    links = load_links(pydocs.snapshot_dir)
    assert len(links) == pydocs.links
    for link in links[:5000]:
        assert link.source in ids
        assert link.target_url != link.source_url
        assert link.in_snapshot == (link.target is not None)
        assert link.target is None or link.target in ids
    assert any(not lk.in_snapshot for lk in links)  # e.g. links to github.com


def test_up_to_date_does_nothing(pydocs: ExtractResult) -> None:
    before = pydocs.docs_path.stat().st_mtime_ns
    again = extract_snapshot(pydocs.snapshot_dir, progress=False)
    assert again.up_to_date and again.docs == pydocs.docs
    assert pydocs.docs_path.stat().st_mtime_ns == before


def _bad_pages() -> list[tuple[str, int, tuple[tuple[str, str], ...], bytes]]:
    _, body = fixture_page("/library/os.path.html")
    text = body.decode("utf-8")
    cp1252 = text.replace("Common pathname", "Commön päthname").replace('charset="utf-8"', "")
    self_only = b"<html><head><title>Self</title></head><body><p>" + (
        b"A page that links only to itself, over and over again. " * 8
        + b'<a href="#top">top</a> <a href="self.html">me</a></p></body></html>'
    )
    huge = body.replace(
        b"</body>", b"<p>" + b"filler words in a huge page " * 40000 + b"</p></body>"
    )
    return [
        (f"{BASE}/library/os.path.html", 200, HTML, body),
        (
            f"{BASE}/latin.html",
            200,
            (("Content-Type", "text/html; charset=windows-1252"),),
            cp1252.encode("cp1252", errors="replace"),
        ),
        (
            f"{BASE}/undeclared.html",
            200,
            (("Content-Type", "text/html"),),
            cp1252.encode("cp1252", errors="replace"),
        ),
        (f"{BASE}/empty.html", 200, HTML, b""),
        (f"{BASE}/garbage.html", 200, HTML, bytes(range(256)) * 64),
        (f"{BASE}/huge.html", 200, HTML, huge),
        (f"{BASE}/self.html", 200, HTML, self_only),
        (f"{BASE}/copy.html", 200, HTML, body + b"\n"),  # same text, other bytes
        (f"{BASE}/manual.pdf", 200, (("Content-Type", "application/pdf"),), b"%PDF-1.4 ..."),
        (f"{BASE}/gone.html", 404, HTML, b"<html><body>Not found</body></html>"),
        (f"{BASE}/moved", 301, (("Location", "/library/os.path.html"),), b""),
        (f"{BASE}/loop-a", 302, (("Location", "/loop-b"),), b""),
        (f"{BASE}/loop-b", 302, (("Location", "/loop-a"),), b""),
        (
            f"{BASE}/no-type.html",
            200,
            (),
            b"<!DOCTYPE html><html><body><p>"
            + b"Sniffed as HTML although no Content-Type header was sent. " * 5
            + b"</p></body></html>",
        ),
    ]


def test_bad_inputs_are_counted_not_lost(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "bad", _bad_pages())
    result = extract_snapshot(snap, workers=1, progress=False, max_page_bytes=400_000)
    docs = {d.url.rsplit("/", 1)[1]: d for d in load_docs(snap)}
    assert set(docs) == {
        "os.path.html",
        "latin.html",
        "undeclared.html",
        "empty.html",
        "garbage.html",
        "huge.html",
        "self.html",
        "copy.html",
        "no-type.html",
    }
    c = result.counts
    assert c["skipped_responses"] == {
        "non_html:application/pdf": 1,
        "redirect_unresolved": 2,
        "status:404": 1,
    }
    assert docs["latin.html"].encoding == "cp1252" and "Commön" in docs["latin.html"].title
    assert docs["undeclared.html"].encoding == "cp1252"
    assert docs["empty.html"].near_empty and docs["empty.html"].extractor == "none"
    assert docs["garbage.html"].near_empty
    assert docs["huge.html"].truncated and c["truncated"] == 1
    # Duplicates: the first by URL is the original, the other points at it; both are kept.
    assert docs["os.path.html"].duplicate_of == docs["copy.html"].id
    assert docs["copy.html"].duplicate_of is None and docs["copy.html"].is_content
    assert docs["no-type.html"].chars > 200
    assert f"{BASE}/moved" in docs["os.path.html"].aliases
    assert c["self_links"] >= 2
    assert not any(lk.source == docs["self.html"].id for lk in load_links(snap))
    manifest = json.loads(result.manifest_path.read_text(encoding="utf-8"))
    assert {item["url"] for item in manifest["unparsable"]} >= {f"{BASE}/empty.html"}
    assert f"{BASE}/empty.html" in manifest["near_empty"]
    # Same bytes in, same bytes out.
    first = result.docs_path.read_bytes(), result.links_path.read_bytes()
    extract_snapshot(snap, workers=2, force=True, progress=False, max_page_bytes=400_000)
    assert (result.docs_path.read_bytes(), result.links_path.read_bytes()) == first


def test_snapshot_without_html(tmp_path: Path) -> None:
    snap = write_snapshot(
        tmp_path / "nohtml",
        [
            (f"{BASE}/a.pdf", 200, (("Content-Type", "application/pdf"),), b"%PDF-1.4"),
            (f"{BASE}/b.json", 200, (("Content-Type", "application/json"),), b"{}"),
        ],
    )
    result = extract_snapshot(snap, workers=1, progress=False)
    assert result.docs == 0 and result.links == 0
    assert result.docs_path.read_text() == ""
    assert result.counts["skipped_responses"] == {
        "non_html:application/json": 1,
        "non_html:application/pdf": 1,
    }
    with pytest.raises(DrarenaError, match="asked for 1 trees but the snapshot can root only 0"):
        build_snapshot_trees(snap, TreeParams(count=1), progress=False)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match=r"docs\.jsonl not found"):
        load_docs(tmp_path)
    (tmp_path / "docs.jsonl").write_text('{"id": "a"}\nnot json\n')
    with pytest.raises(DrarenaError, match=r"docs\.jsonl:1: bad doc record"):
        load_docs(tmp_path)
    with pytest.raises(DrarenaError, match="no such snapshot folder"):
        extract_snapshot(tmp_path / "missing", progress=False)


def test_a_line_that_is_not_utf8_is_named_by_its_number(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_bytes(b'{"id": "a"}\n' * 3 + b'{"id": "\xff"}\n')
    with pytest.raises(DrarenaError, match=r"docs\.jsonl:4: not a JSON doc line"):
        list(_iter_jsonl(tmp_path / "docs.jsonl", "doc"))


def test_a_manifest_over_the_limit_is_extracted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """extract-manifest.json sits in a snapshot folder that may be someone else's: it is read
    bounded (it was decoded whole, however large), and one over MAX_MANIFEST_BYTES counts as
    absent, as a damaged one does: the snapshot is extracted again, to the same docs."""
    import drarena.corpus.extract as extract

    snap = write_snapshot(tmp_path / "small", [(f"{BASE}/a.pdf", 200, (), b"%PDF-1.4")])
    first = extract_snapshot(snap, workers=1, progress=False)
    assert extract_snapshot(snap, workers=1, progress=False).up_to_date
    assert first.manifest_path.stat().st_size > 64
    monkeypatch.setattr(extract, "MAX_MANIFEST_BYTES", 64)
    again = extract_snapshot(snap, workers=1, progress=False)
    assert not again.up_to_date and again.docs == first.docs
