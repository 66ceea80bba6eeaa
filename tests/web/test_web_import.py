"""`drarena snapshot import` on archives no one here wrote: Debian's wget crawling a site served
on loopback by Python's http.server, plus the committed snapshot's own WARC re-imported."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.manifest import Counts
from drarena.web.warc.scope import ImportScope
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.warcfile import Damage, RawRecord, iter_file
from drarena.web.warc.writer import Exchange, SnapshotWriter

BASE = "http://127.0.0.1:8765"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


SITE_PAGES = re.compile(r"^(tutorial|howto)/|^library/(index|[a-d])")


@pytest.fixture(scope="module")
def site(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About a hundred pages of the Python docs (bodies from the committed snapshot) as plain
    files, with a front page; links to pages left out answer 404, as on any real site."""
    root = tmp_path_factory.mktemp("site")
    with Snapshot.open(repo_root / "snapshots" / "pydocs") as snap:
        for resp in snap.iter_responses():
            path = resp.url.removeprefix(BASE + "/")
            if SITE_PAGES.match(path) and path.endswith(".html") and resp.status == 200:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_bytes(resp.body)
    links = "".join(
        f'<li><a href="{d}/index.html">{d}</a></li>' for d in ("tutorial", "howto", "library")
    )
    (root / "index.html").write_text(
        f"<!DOCTYPE html><html><head><title>Docs</title></head>"
        f"<body><h1>Python docs</h1><ul>{links}</ul></body></html>"
    )
    return root


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _wget(origin: str, out: Path, *extra: str) -> Path:
    wget = shutil.which("wget")
    if wget is None:
        pytest.skip(
            "Debian's wget is not installed (apt-get install wget); the import tests "
            "need an archive made by a crawler other than drarena's"
        )
    subprocess.run(
        [
            wget,
            "-q",
            "--recursive",
            "--level=4",
            "--no-parent",
            "-e",
            "robots=off",
            "--delete-after",
            "-P",
            str(out.parent / "wget-files"),
            f"--warc-file={out}",
            *extra,
            f"{origin}/index.html",
        ],
        check=False,
        timeout=120,
    )
    made = out.with_name(out.name + (".warc" if extra else ".warc.gz"))
    assert made.is_file(), "wget wrote no WARC file"
    return made


@pytest.fixture(scope="module")
def wget_gz(served: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wget(served, tmp_path_factory.mktemp("wget") / "crawl")


@pytest.fixture(scope="module")
def wget_plain(served: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wget(served, tmp_path_factory.mktemp("wget") / "plain", "--no-warc-compression")


def _bodies(folder: Path) -> dict[str, bytes]:
    """Path -> body of every capture, each also read back by lookup; the snapshot verifies."""
    with Snapshot.open(folder) as snap:
        report = snap.verify()
        assert report.ok, report.problems
        out: dict[str, bytes] = {}
        for resp in snap.iter_responses():
            out[resp.url.split("/", 3)[3]] = resp.body
            found = snap.lookup(resp.url)
            assert found is not None and found.body == resp.body
        assert snap.skipped == 0
        return out


# --- the wget archive through the whole pipeline ------------------------------------------------


def test_wget_archive_flows_through_extract_trees_and_bm25(
    wget_gz: Path, site: Path, served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert len(pages) >= 80
    out = tmp_path / "wg"
    assert main(["snapshot", "import", "wg", str(wget_gz), "--out", str(out), "--no-progress"]) == 0
    summary = capsys.readouterr().out
    assert f"{len(pages)} pages" in summary and "warcinfo 1" in summary
    with Snapshot.open(out) as snap:
        manifest = snap.manifest
        assert manifest.counts.pages == len(pages) == manifest.counts.statuses["200"]
        assert manifest.counts.http_errors == manifest.counts.statuses["404"] > 0
        assert len(snap) == manifest.counts.responses
        assert manifest.counts.skipped == {"metadata": 1, "non-http": 2, "warcinfo": 1}
        source = manifest.spec["import"]["sources"][0]
        assert source["kept"] == "hardlink" and source["path"] == str(wget_gz.resolve())
        assert (out / wget_gz.name).read_bytes() == wget_gz.read_bytes()
        for page in pages:  # every page of the site, byte for byte
            found = snap.lookup(f"{served}/{page}")
            assert found is not None and found.body == (site / page).read_bytes()
        assert snap.verify().ok

    assert main(["extract", str(out), "--no-progress"]) == 0
    docs = [json.loads(line) for line in (out / "docs.jsonl").open()]
    assert sorted(d["url"].split("/", 3)[3] for d in docs) == pages
    assert main(["trees", str(out), "--count", "1", "--seed", "1", "--no-progress"]) == 0
    tree = json.loads(next((out / "trees").glob("tree-*.json")).read_text())
    assert len(tree["nodes"]) > 3 and all(n["url"].startswith(served) for n in tree["nodes"])
    index_root = tmp_path / "index"
    assert main(["index", str(out), "--no-dense", "--index-root", str(index_root)]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "search",
                str(out),
                "for loops over a sequence",
                "--json",
                "-k",
                "3",
                "--index-root",
                str(index_root),
            ]
        )
        == 0
    )
    hits = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert hits and any("controlflow" in str(h) for h in hits)


def test_uncompressed_wget_warc_is_kept_and_read(
    wget_plain: Path, wget_gz: Path, tmp_path: Path
) -> None:
    assert wget_plain.read_bytes().startswith(b"WARC/1.")
    plain = import_archives(
        "plain", [wget_plain], tmp_path / "plain", ImportOptions(progress=False)
    )
    gz = import_archives("gz", [wget_gz], tmp_path / "gz", ImportOptions(progress=False))
    assert plain.files[0]["kept"] == "hardlink" and plain.files[0]["as"] == ["plain.warc"]
    assert _bodies(tmp_path / "plain") == _bodies(tmp_path / "gz")
    assert plain.manifest.counts.pages == gz.manifest.counts.pages
    with Snapshot.open(tmp_path / "plain") as snap:  # CDXJ offsets land on "WARC/1."
        data = (tmp_path / "plain" / "plain.warc").read_bytes()
        for line in (tmp_path / "plain" / "index.cdxj").read_text().splitlines():
            fields = json.loads(line.split(" ", 2)[2])
            assert data[int(fields["offset"]) :].startswith(b"WARC/1.")
        assert len(snap) == gz.manifest.counts.responses


def test_whole_file_gzip_is_rewritten_one_member_per_record(
    wget_plain: Path, wget_gz: Path, tmp_path: Path
) -> None:
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(wget_plain.read_bytes()))
    result = import_archives("whole", [whole], tmp_path / "whole", ImportOptions(progress=False))
    assert result.files[0]["kept"] == "rewritten-per-record"
    assert result.files[0]["as"] == ["whole-00000.warc.gz"]
    import_archives("gz", [wget_gz], tmp_path / "gz", ImportOptions(progress=False))
    assert _bodies(tmp_path / "whole") == _bodies(tmp_path / "gz")
    data = (tmp_path / "whole" / "whole-00000.warc.gz").read_bytes()
    records = [r for r in iter_file(tmp_path / "whole" / "whole-00000.warc.gz")]
    assert all(isinstance(r, RawRecord) for r in records)
    assert len(records) == result.manifest.counts.records
    for record in records:  # each its own member
        assert isinstance(record, RawRecord)
        assert len(gzip.decompress(data[record.offset : record.offset + record.length])) > 0

    cut = tmp_path / "cut.warc.gz"  # truncated: the records before the cut are kept
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size * 2 // 3])
    damaged = import_archives("cut", [cut], tmp_path / "cut", ImportOptions(progress=False))
    assert damaged.files[0]["kept"] == "rewritten-per-record"
    assert damaged.manifest.counts.skipped["damaged"] == 1
    kept = _bodies(tmp_path / "cut")
    full = _bodies(tmp_path / "whole")
    assert 0 < len(kept) < len(full) and all(full[k] == v for k, v in kept.items())
    # the record cut in the middle was streamed into the output, then cut off it again:
    # what is left is the whole import's first members, byte for byte
    kept_bytes = (tmp_path / "cut" / "cut-00000.warc.gz").read_bytes()
    assert 0 < len(kept_bytes) < len(data) and data.startswith(kept_bytes)


# --- the committed snapshot, imported again -------------------------------------------------------


def test_reimport_of_committed_snapshot_gives_same_fingerprint_and_docs(
    repo_root: Path, pydocs_extracted: Path, tmp_path: Path
) -> None:
    fixture = repo_root / "snapshots" / "pydocs"
    out = tmp_path / "again"
    result = import_archives(
        "again", [fixture / "pydocs-00000.warc.gz"], out, ImportOptions(keep="copy", progress=False)
    )
    original = Snapshot.open(fixture).manifest
    assert result.manifest.fingerprint == original.fingerprint
    assert result.files[0]["kept"] == "copy"
    assert (out / "index.cdxj").read_bytes() == (fixture / "index.cdxj").read_bytes()
    assert main(["extract", str(out), "--no-progress"]) == 0
    assert (out / "docs.jsonl").read_bytes() == (pydocs_extracted / "docs.jsonl").read_bytes()
    again = import_archives(
        "again", [fixture / "pydocs-00000.warc.gz"], out, ImportOptions(progress=False)
    )
    assert again.up_to_date
    with pytest.raises(DrarenaError, match="different snapshot"):
        import_archives(
            "again",
            [fixture / "pydocs-00000.warc.gz"],
            out,
            ImportOptions(progress=False, scope=ImportScope(statuses=("200",))),
        )


# --- scope filter ---------------------------------------------------------------------------------


def test_scope_keeps_requests_of_kept_responses(repo_root: Path, tmp_path: Path) -> None:
    warc = repo_root / "snapshots" / "pydocs" / "pydocs-00000.warc.gz"
    out = tmp_path / "howto"
    # options before the files as well as after them
    assert (
        main(
            [
                "snapshot",
                "import",
                "howto",
                "--prefix",
                f"{BASE}/howto/",
                str(warc),
                "--out",
                str(out),
                "--no-progress",
                "--mime",
                "text/*",
                "--status",
                "2xx",
            ]
        )
        == 0
    )
    with Snapshot.open(out) as snap:
        assert snap.verify().ok
        urls = snap.urls()
        assert urls and all(u.startswith(f"{BASE}/howto/") for u in urls)
        responses = list(snap.iter_responses())
        assert all(r.status == 200 and r.content_type.startswith("text/") for r in responses)
        kinds = [r.type for r in snap.iter_records()]
        assert kinds.count("request") == kinds.count("response") + kinds.count("revisit")
        counts = snap.manifest.counts
        assert counts.skipped["out-of-scope"] == 322 - len(snap)
        assert snap.manifest.spec["import"]["scope"]["prefixes"] == [f"{BASE}/howto/"]
        full = Snapshot.open(repo_root / "snapshots" / "pydocs")
        for r in responses:
            found = full.lookup(r.url)
            assert found is not None and found.body == r.body


def _write_warc(folder: Path, pages: list[tuple[str, bytes]]) -> Path:
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "mini",
        {"seeds": []},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
    )
    writer.open()
    for url, body in pages:
        writer.write_exchange(
            Exchange(
                url, (("Host", "example.org"),), 200, "OK", (("Content-Type", "text/html"),), body
            )
        )
    writer.close(complete=True, counts=Counts())
    return folder / "mini-00000.warc.gz"


def test_scope_keeps_the_original_of_a_kept_revisit(tmp_path: Path) -> None:
    body = b"<html><title>same</title><p>identical payload</p></html>"
    warc = _write_warc(
        tmp_path / "src",
        [
            ("http://example.org/a/one.html", body),
            ("http://example.org/b/two.html", body),
            ("http://example.org/c/three.html", b"<p>other</p>"),
        ],
    )
    result = import_archives(
        "cut",
        [warc],
        tmp_path / "cut",
        ImportOptions(progress=False, scope=ImportScope(prefixes=("http://example.org/b/",))),
    )
    assert result.files[0]["as"] == ["cut-00000.warc.gz", "cut-00000-originals.warc.gz"]
    with Snapshot.open(tmp_path / "cut") as snap:
        assert snap.verify().ok
        found = snap.lookup("http://example.org/b/two.html")
        assert found is not None and found.revisit and found.body == body
        assert "http://example.org/c/three.html" not in snap
        assert snap.manifest.counts.skipped.get("revisit-unresolved", 0) == 0
        assert snap.manifest.counts.skipped["out-of-scope"] == 1


def test_scope_options_are_checked() -> None:
    scope = ImportScope(hosts=("Example.org:8080",), statuses=("2xx",), mimes=("text/*",))
    assert scope.allows("http://www.example.org:8080/x", "", "text/html", 204)
    assert not scope.allows("http://example.org/x", "", "text/html", 200)  # other port
    assert not scope.allows("http://example.org:8080/x", "", "image/png", 200)
    assert not scope.allows("http://example.org:8080/x", "", "text/html", 404)
    assert ImportScope(hosts=("example.org",)).allows("https://a.example.org/", "", "x", 1)
    assert not ImportScope(hosts=("example.org",)).allows("https://badexample.org/", "", "x", 1)
    with pytest.raises(ValueError, match="status code"):
        ImportScope(statuses=("ok",))
    assert main(["snapshot", "import", "x", "y.warc", "--status", "2x"]) == 2


# --- bad input ------------------------------------------------------------------------------------


def test_truncated_member_costs_only_its_records(
    wget_gz: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = wget_gz.read_bytes()
    members = [r.offset for r in iter_file(wget_gz) if isinstance(r, RawRecord)]
    cut = members[len(members) // 2]
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(data[: cut + 200] + data[members[len(members) // 2 + 1] :])
    out = tmp_path / "dmg"
    assert (
        main(["snapshot", "import", "dmg", str(damaged), "--out", str(out), "--no-progress"]) == 0
    )
    err = capsys.readouterr().err
    assert f"{damaged.resolve()}: damaged: offset {cut}" in err
    with Snapshot.open(out) as snap:
        counts = snap.manifest.counts
        assert counts.skipped["damaged"] == 1
        assert counts.records == len(members) - 1
        assert snap.verify().ok  # the copy holds the good records only
        assert snap.manifest.spec["import"]["sources"][0]["kept"] == "copied-without-damage"
        assert len(list(snap.iter_responses())) == len(snap) >= 15


def test_truncated_uncompressed_warc_keeps_good_records(wget_plain: Path, tmp_path: Path) -> None:
    data = wget_plain.read_bytes()
    short = tmp_path / "short.warc"
    short.write_bytes(data[: len(data) * 2 // 3])
    items = list(iter_file(short))
    assert isinstance(items[-1], Damage)
    result = import_archives("short", [short], tmp_path / "short", ImportOptions(progress=False))
    assert result.manifest.counts.skipped["damaged"] == 1
    assert result.files[0]["kept"] == "copied-without-damage"
    assert _bodies(tmp_path / "short")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b"<html>not an archive</html>", "not a WARC file"),
        (gzip.compress(b"just some text", mtime=0), "a gzip file, but not a WARC file"),
    ],
)
def test_bad_files_fail_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(content)
    assert main(["snapshot", "import", "bad", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and message in err
    assert not (tmp_path / "o").exists() and not (tmp_path / ".o.importing").exists()


def test_nothing_importable_and_empty_folder(wget_gz: Path, tmp_path: Path) -> None:
    first = next(r for r in iter_file(wget_gz) if isinstance(r, RawRecord))  # warcinfo only
    only_info = tmp_path / "info.warc.gz"
    only_info.write_bytes(wget_gz.read_bytes()[: first.length])
    with pytest.raises(DrarenaError, match=r"info.warc.gz: nothing importable: 1 records"):
        import_archives("x", [only_info], tmp_path / "x", ImportOptions(progress=False))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DrarenaError, match=r"no \.warc, \.warc\.gz or \.wacz file"):
        import_archives("x", [tmp_path / "empty"], tmp_path / "x", ImportOptions(progress=False))
    assert not (tmp_path / "x").exists()


def test_folder_of_archives_imports_each_file(
    wget_gz: Path, wget_plain: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(wget_gz, folder / "a.warc.gz")
    shutil.copy(wget_plain, folder / "sub" / "a.warc")
    (folder / "notes.txt").write_text("ignored: not a WARC name")
    result = import_archives("both", [folder], tmp_path / "both", ImportOptions(progress=False))
    assert [f["as"] for f in result.files] == [["a.warc.gz"], ["a.warc"]]  # sorted paths
    assert (
        main(
            [
                "snapshot",
                "import",
                "both",
                str(folder),
                "--jobs",
                "2",
                "--no-progress",
                "--out",
                str(tmp_path / "parallel"),
            ]
        )
        == 0
    )  # one worker process per file
    assert (tmp_path / "parallel" / "index.cdxj").read_bytes() == (
        tmp_path / "both" / "index.cdxj"
    ).read_bytes()
    parallel = Snapshot.open(tmp_path / "parallel").manifest
    assert parallel.fingerprint == result.manifest.fingerprint
    assert parallel.counts == result.manifest.counts
    with Snapshot.open(tmp_path / "both") as snap:
        assert snap.verify().ok
        counts = result.manifest.counts
        assert len(list(snap.iter_responses())) == len(snap) == counts.responses
        assert counts.pages % 2 == 0 and counts.pages >= 160  # the same crawl, twice


# --- one file split into ranges ---------------------------------------------------------------

_FIXED = datetime(2026, 3, 4, tzinfo=UTC)


def _snapshot_bytes(inputs: list[Path], out: Path, jobs: int) -> tuple[bytes, bytes]:
    import_archives(
        "one", inputs, out, ImportOptions(progress=False, jobs=jobs, clock=lambda: _FIXED)
    )
    with Snapshot.open(out) as snap:
        assert snap.verify().ok
    return (out / "index.cdxj").read_bytes(), (out / "manifest.json").read_bytes()


def _revisit_archive(folder: Path) -> Path:
    """Pages of incompressible bodies; the last one repeats the first's payload (a revisit
    whose original is at the other end of the file)."""
    bodies = [bytes(range(256)) * 4 + str(i).encode() * 600 for i in range(40)]
    bodies = [gzip.compress(b, mtime=0) for b in bodies]  # incompressible, deterministic
    pages = [(f"http://example.org/p{i}.html", b) for i, b in enumerate(bodies)]
    return _write_warc(folder, [*pages, ("http://example.org/again.html", bodies[0])])


@pytest.fixture
def split_small(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Ranges of 8 KB (the parent plans them, so the workers need no patch); counts the
    whole-file imports the parent runs itself (the fall-back after a failed split)."""
    from drarena.web.warc import importer

    monkeypatch.setattr(importer, "SPLIT_MIN", 8192)
    fallbacks: list[int] = []
    whole = importer.read_whole

    def counting(task: importer._Task, bar: object = None) -> object:
        fallbacks.append(task.index)
        return whole(task, bar)

    monkeypatch.setattr(importer, "read_whole", counting)
    return fallbacks


def test_one_file_in_ranges_matches_one_process(tmp_path: Path, split_small: list[int]) -> None:
    from drarena.web.warc.importer import Source, split_points

    warc = _revisit_archive(tmp_path / "src")
    bounds = split_points(Source(warc, str(warc), True), 3)
    assert len(bounds) == 4 and bounds[-1] == warc.stat().st_size
    first = _snapshot_bytes([warc], tmp_path / "j1", 1)
    assert b'"url": "http://example.org/again.html"' in first[0]  # the revisit resolved
    assert _snapshot_bytes([warc], tmp_path / "j2", 2) == first
    assert _snapshot_bytes([warc], tmp_path / "j3", 3) == first
    assert split_small == []  # every range was indexed by a worker, none read again
    manifest = json.loads(first[1])
    assert manifest["counts"]["revisits"] == 1
    assert manifest["spec"]["import"]["sources"][0]["kept"] == "hardlink"
    copied = import_archives(
        "one", [warc], tmp_path / "copy", ImportOptions(progress=False, jobs=2, keep="copy")
    )  # the parent copies (and hashes) while workers index
    assert copied.files[0]["kept"] == "copy" and split_small == []
    assert (tmp_path / "copy" / "index.cdxj").read_bytes() == first[0]
    assert copied.manifest.fingerprint == manifest["fingerprint"]
    assert (tmp_path / "copy" / warc.name).read_bytes() == warc.read_bytes()


@pytest.mark.parametrize("where", [-1, 0])
def test_damage_near_a_split_point_gives_the_one_process_result(
    tmp_path: Path, split_small: list[int], where: int
) -> None:
    from drarena.web.warc.importer import Source, split_points

    warc = _revisit_archive(tmp_path / "src")
    members = [r.offset for r in iter_file(warc) if isinstance(r, RawRecord)]
    split = split_points(Source(warc, str(warc), True), 2)[1]
    hit = members[members.index(split) + where]  # the member before the split, or at it
    data = bytearray(warc.read_bytes())
    data[hit + 40 : hit + 80] = bytes(40)
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(bytes(data))
    first = _snapshot_bytes([damaged], tmp_path / "j1", 1)
    assert json.loads(first[1])["counts"]["skipped"]["damaged"] == 1
    assert _snapshot_bytes([damaged], tmp_path / "j2", 2) == first
    assert split_small == [0]  # the damaged file was read again whole, in one process


def test_uncompressed_file_in_ranges_and_a_false_split(
    wget_plain: Path, tmp_path: Path, split_small: list[int]
) -> None:
    first = _snapshot_bytes([wget_plain], tmp_path / "j1", 1)
    assert _snapshot_bytes([wget_plain], tmp_path / "j3", 3) == first
    assert split_small == []
    # A record whose block ends with a whole WARC record: a split there looks right but is
    # not a record start; the range before it ends elsewhere, so the file is read whole.
    warc = _revisit_archive(tmp_path / "src")
    plain = gzip.decompress(warc.read_bytes())
    inner = plain[plain.index(b"WARC/1.", 10) :]
    inner = inner[: inner.index(b"\r\n\r\nWARC/1.") + 4]
    fake = tmp_path / "fake.warc"
    block = b"x" * (len(plain) + 2000) + b"\r\n" + inner  # its middle falls in the padding
    fake.write_bytes(plain + _plain_record(block) + _plain_record(b"tail"))
    from drarena.web.warc.importer import Source, split_points

    size = fake.stat().st_size
    false_start = size - len(_plain_record(b"tail")) - 4 - len(inner)
    assert split_points(Source(fake, str(fake), False), 2) == [0, false_start, size]
    split_small.clear()
    first = _snapshot_bytes([fake], tmp_path / "f1", 1)
    assert _snapshot_bytes([fake], tmp_path / "f2", 2) == first
    assert split_small == [0]  # the range before it ended elsewhere: read whole


def _plain_record(block: bytes) -> bytes:
    return (
        b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: urn:x\r\n"
        b"WARC-Record-ID: <urn:uuid:" + str(len(block)).encode() + b">\r\n"
        b"Content-Length: " + str(len(block)).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"
    )


# --- WACZ -----------------------------------------------------------------------------------------


def test_wacz_round_trip_and_wrong_hash(
    wget_gz: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("drarena.web.warc.wacz")
    first = import_archives("wg", [wget_gz], tmp_path / "wg", ImportOptions(progress=False))
    package = tmp_path / "wg.wacz"
    assert main(["snapshot", "export", str(tmp_path / "wg"), "--wacz", str(package)]) == 0
    back = import_archives("back", [package], tmp_path / "back", ImportOptions(progress=False))
    assert back.manifest.fingerprint == first.manifest.fingerprint
    assert back.files[0]["kept"] == "moved"
    assert back.files[0]["path"] == f"{package.resolve()}#archive/{wget_gz.name}"
    assert _bodies(tmp_path / "back") == _bodies(tmp_path / "wg")
    assert (tmp_path / "back" / "index.cdxj").read_bytes() == (
        tmp_path / "wg" / "index.cdxj"
    ).read_bytes()
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == sorted(
        ["index.cdxj", "manifest.json", wget_gz.name]
    )
    cut = import_archives(
        "cut",
        [package],
        tmp_path / "cut",
        ImportOptions(progress=False, scope=ImportScope(statuses=("404",))),
    )
    assert cut.files[0]["kept"] == "filtered" and cut.manifest.counts.statuses.keys() == {"404"}
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == [
        "cut-00000.warc.gz",
        "index.cdxj",
        "manifest.json",
    ]

    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("archive/"):
                data = data[:-10] + bytes(b ^ 0xFF for b in data[-10:])
            dst.writestr(info, data)
    capsys.readouterr()
    assert main(["snapshot", "import", "bad", str(bad), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"archive/{wget_gz.name}: hash mismatch" in err and "sha256:" in err
    assert not (tmp_path / "b").exists()


def test_cli_dispatch_keeps_the_crawl_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "import", "only-name"]) == 2
    assert "expected NAME FILE_OR_DIR" in capsys.readouterr().err
    assert main(["snapshot", str(tmp_path / "spec.yaml"), "--host", "x"]) == 2
    assert "only apply to `snapshot import`" in capsys.readouterr().err
    assert main(["snapshot", "export", str(tmp_path)]) == 2
    assert "--wacz" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # stray arguments elsewhere are still refused
        main(["verify", str(tmp_path), "extra"])
    assert "unrecognized arguments: extra" in capsys.readouterr().err


def test_a_whole_file_gzip_with_odd_record_separators_is_rewritten_readable(
    wget_plain: Path, tmp_path: Path
) -> None:
    """Found by fuzzing: records separated by "\n\n" (not CRLF CRLF) were rewritten with
    that separator inside each member, which the reader (it skips CRLF pairs) then called
    damaged. Each member now ends in CRLF CRLF, and every capture reads back."""
    plain = wget_plain.read_bytes()
    assert plain.count(b"\r\n\r\nWARC/1.") > 2
    whole = tmp_path / "odd.warc.gz"
    whole.write_bytes(gzip.compress(plain.replace(b"\r\n\r\nWARC/1.", b"\n\nWARC/1.")))
    result = import_archives("odd", [whole], tmp_path / "odd", ImportOptions(progress=False))
    assert result.files[0]["kept"] == "rewritten-per-record"
    assert result.manifest.counts.skipped.get("damaged", 0) == 0
    import_archives("plain", [wget_plain], tmp_path / "plain", ImportOptions(progress=False))
    assert _bodies(tmp_path / "odd") == _bodies(tmp_path / "plain")


def test_a_member_whose_record_ends_in_bare_line_breaks_reads_back() -> None:
    """The member reader skipped only CRLF pairs after a record, the stream reader any run of
    CR and LF: a member ending "\n\n" or "\r\n\r" was damaged to one, fine to the other."""
    from drarena.web.warc.warcfile import parse_records

    block = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    head = f"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: {len(block)}\r\n\r\n"
    for tail in (b"\r\n\r\n", b"\n\n", b"\r\n\r", b""):
        (record,) = parse_records(head.encode() + block + tail, "x.warc.gz", 0, 1)
        assert record.block == block
    with pytest.raises(ValueError, match=r"does not start with a WARC/1\.x"):
        parse_records(head.encode() + block + b"\r\nX", "x.warc.gz", 0, 1)


def _large_record_warc(path: Path) -> Path:
    """A per-record gzip WARC: a 48 MiB response of random bytes (incompressible, so as
    large in the file), then a small page."""
    import os

    from bomb_files import write_warc

    body = os.urandom(48 << 20)
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    small = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi"
    return write_warc(
        path, [("http://big.test/file.zip", head.encode() + body), ("http://other.test/", small)]
    )


def test_a_whole_file_gzip_rewrite_streams_a_large_record(tmp_path: Path) -> None:
    """A whole-file gzip is rewritten one member per record, each compressed as it streams
    by: the peak of Python allocations stays near the per-record file's import in the same
    test, where holding the record cost it whole, decompressed and compressed (about twice
    the record), before. The records come out as the per-record import's."""
    import tracemalloc

    per_record = _large_record_warc(tmp_path / "per-record.warc.gz")
    whole = tmp_path / "whole.warc.gz"
    with gzip.open(per_record) as plain, gzip.open(whole, "wb", compresslevel=1) as out:
        while chunk := plain.read(1 << 20):
            out.write(chunk)
    peaks, kept = {}, {}
    for label, source in (("per-record", per_record), ("whole", whole)):
        tracemalloc.start()
        try:
            result = import_archives(
                label, [source], tmp_path / label, ImportOptions(progress=False)
            )
            peaks[label] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        kept[label] = result.files[0]["kept"]
        assert result.manifest.counts.responses == 2
    assert kept["whole"] == "rewritten-per-record" and kept["per-record"] != kept["whole"]
    assert peaks["whole"] < peaks["per-record"] + (16 << 20), f"whole {peaks['whole'] >> 20} MiB"
    assert _bodies(tmp_path / "whole") == _bodies(tmp_path / "per-record")


def test_a_scoped_import_copies_a_large_record_without_holding_it(tmp_path: Path) -> None:
    """The scope filter copies each kept record from the source file a MiB at a time: its
    peak of Python allocations is the whole-file import's, measured in the same test, not
    that plus twice the record (it read each record whole, then joined the reads)."""
    import tracemalloc

    warc = _large_record_warc(tmp_path / "big.warc.gz")
    peaks = {}
    for scope in (None, ImportScope(hosts=("big.test",))):
        tracemalloc.start()
        try:
            result = import_archives(
                "big",
                [warc],
                tmp_path / f"out-{scope is None}",
                ImportOptions(keep="copy", scope=scope or ImportScope(), progress=False),
            )
            peaks[scope is None] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert result.manifest.counts.responses == (2 if scope is None else 1)
    assert peaks[False] < peaks[True] + (16 << 20), f"scoped {peaks[False] >> 20} MiB"
