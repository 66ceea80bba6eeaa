"""WACZ export of the committed snapshot, checked with zipfile, hashlib and warcio; the reader's
errors on damaged packages."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import struct
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.wacz import WaczPackage, export_wacz, replay_key

WARC = "archive/pydocs-00000.warc.gz"


@pytest.fixture(scope="module")
def fixture_dir(repo_root: Path) -> Path:
    return repo_root / "snapshots" / "pydocs"


@pytest.fixture(scope="module")
def exported(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wacz") / "pydocs.wacz"
    result = export_wacz(fixture_dir, out, title="Python 3.11 docs")
    assert result.path == out and result.bytes == out.stat().st_size
    assert (result.warc_files, result.captures, result.pages) == (1, 322, 320)
    assert "\n" not in result.summary() and str(out) in result.summary()
    return out


def rewritten(src: Path, dest: Path, changes: dict[str, bytes]) -> Path:
    """A copy of a zip with some members' bytes replaced (zip metadata kept otherwise)."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dest, "w") as new:
        for info in old.infolist():
            new.writestr(copy.copy(info), changes.get(info.filename, old.read(info)))
    return dest


def test_layout_and_datapackage_follow_wacz_1_1_1(exported: Path, fixture_dir: Path) -> None:
    manifest = json.loads((fixture_dir / "manifest.json").read_text())
    with zipfile.ZipFile(exported) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        assert list(infos) == [
            WARC,
            "datapackage-digest.json",
            "datapackage.json",
            "indexes/index.cdx",
            "pages/pages.jsonl",
        ]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos.values())
        raw = zf.read("datapackage.json")
        package = json.loads(raw)
        digest = json.loads(zf.read("datapackage-digest.json"))
        assert digest == {
            "path": "datapackage.json",
            "hash": "sha256:" + hashlib.sha256(raw).hexdigest(),
        }
        assert package["profile"] == "data-package" and package["wacz_version"] == "1.1.1"
        assert package["title"] == "Python 3.11 docs"
        assert package["created"] == manifest["ended_at"]  # from the snapshot, not the clock
        assert package["drarena"]["fingerprint"] == manifest["fingerprint"]
        assert package["mainPageUrl"] == manifest["spec"]["seeds"][0]
        resources = {r["path"]: r for r in package["resources"]}
        assert set(resources) == set(infos) - {"datapackage.json", "datapackage-digest.json"}
        for path, res in resources.items():
            data = zf.read(path)
            assert res["hash"] == "sha256:" + hashlib.sha256(data).hexdigest(), path
            assert res["bytes"] == len(data)
            assert re.fullmatch(r"[-a-z0-9._/]+", res["name"])  # frictionless name pattern
        assert zf.read(WARC) == (fixture_dir / "pydocs-00000.warc.gz").read_bytes()
        index = zf.read("indexes/index.cdx").decode().splitlines()
    own = (fixture_dir / "index.cdxj").read_text().splitlines()
    assert sorted(line.split(" ", 1)[1] for line in index) == sorted(
        line.split(" ", 1)[1] for line in own
    )  # same captures, re-keyed for pywb
    assert index == sorted(index)
    for line in index:
        key, _, blob = line.split(" ", 2)
        assert key == replay_key(json.loads(blob)["url"])
    with WaczPackage.open(exported) as wacz:
        assert [m.name for m in wacz.warcs] == [WARC]
        assert wacz.warcs[0].sha256 == manifest["warc_files"][0]["sha256"]
        assert wacz.verify() == []


# Keys printed by pywb 2.10's `pywb.utils.canonicalize.canonicalize` for these URLs (run once in
# a throwaway environment): the keys pywb binary-searches an index for.
PYWB_KEYS = {
    "http://127.0.0.1:8765/howto/": "1,0,0,127:8765)/howto",
    "http://10.0.0.1/": "1,0,0,10)/",
    "http://a.com": "com,a)/",
    "http://a.com/b/?x=1": "com,a)/b?x=1",
    "http://a.com/b//": "com,a)/b",
    "http://a.com/B/C/": "com,a)/b/c",
    "https://www2.Example.com/x": "com,example)/x",
    "http://www.example.com/x;jsessionid=ABC?y=1": "com,example)/x;jsessionid=abc?y=1",
    "http://example.com/?b=2&a=1&a=0": "com,example)/?a=0&a=1&b=2",
    "http://[::1]:8080/x/": "::1:8080)/x",
    "http://example.com/a%20b/%E2%82%AC": "com,example)/a%20b/%e2%82%ac",
    "http://example.com/search?q=Caf%C3%A9&Z=1": "com,example)/search?q=caf%c3%a9&z=1",
    "http://example.com:443/x": "com,example:443)/x",
    "https://example.com:443/x": "com,example)/x",
    "http://example.com/index.html?": "com,example)/index.html",
}


@pytest.mark.parametrize("url", sorted(PYWB_KEYS))
def test_replay_keys_are_pywbs(url: str) -> None:
    assert replay_key(url) == PYWB_KEYS[url]


def test_every_cdxj_line_is_a_byte_range_of_its_record(exported: Path) -> None:
    with WaczPackage.open(exported) as wacz, zipfile.ZipFile(exported) as zf:
        start, size = wacz.data_range(wacz.warcs[0])
        lines = zf.read("indexes/index.cdx").decode().splitlines()
    blob = exported.read_bytes()
    assert hashlib.sha256(blob[start : start + size]).hexdigest() == wacz.warcs[0].sha256
    kinds = set()
    for line in lines:
        fields = json.loads(line.split(" ", 2)[2])
        assert "archive/" + fields["filename"] == WARC  # relative to archive/, as readers expect
        offset = start + int(fields["offset"])
        records = list(ArchiveIterator(BytesIO(blob[offset : offset + int(fields["length"])])))
        assert len(records) == 1
        assert records[0].rec_headers.get_header("WARC-Target-URI") == fields["url"]
        kinds.add(records[0].rec_type)
    assert kinds == {"response", "revisit"} and len(lines) == 322


def test_pages_are_the_html_pages_extract_found(exported: Path, pydocs_extracted: Path) -> None:
    docs = {d["url"]: d for d in map(json.loads, (pydocs_extracted / "docs.jsonl").open())}
    with zipfile.ZipFile(exported) as zf:
        header = json.loads(zf.read("pages/pages.jsonl").splitlines()[0])
    assert header == {"format": "json-pages-1.0", "id": "pages", "title": "Python 3.11 docs"}
    with WaczPackage.open(exported) as wacz:
        pages = wacz.pages()
    assert len(pages) == len(docs) == 320
    for page in pages:  # docs.jsonl comes from trafilatura's extraction, a separate reader
        assert (page.title, page.ts) == (docs[page.url]["title"], docs[page.url]["warc_date"])
    assert len({p.id for p in pages}) == 320


def test_export_is_deterministic_and_extracts_the_same_warc(
    exported: Path, fixture_dir: Path, tmp_path: Path
) -> None:
    again = export_wacz(fixture_dir, tmp_path / "again.wacz", title="Python 3.11 docs")
    assert again.path.read_bytes() == exported.read_bytes()
    with WaczPackage.open(exported) as wacz:
        wacz.extract_warc(wacz.warcs[0], tmp_path / "out.warc.gz")
    assert (tmp_path / "out.warc.gz").read_bytes() == (
        fixture_dir / "pydocs-00000.warc.gz"
    ).read_bytes()
    assert not list(tmp_path.glob("*.part"))


def test_export_never_writes_over_a_users_file(
    exported: Path, fixture_dir: Path, tmp_path: Path
) -> None:
    """The package is built under a name of its own (a user's `OUT.part` is not ours), and an
    existing OUT, file or folder, is refused in one line, not replaced or a traceback."""
    (tmp_path / "new.wacz.part").write_bytes(b"my notes")
    export_wacz(fixture_dir, tmp_path / "new.wacz", title="Python 3.11 docs")
    assert (tmp_path / "new.wacz").read_bytes() == exported.read_bytes()
    assert (tmp_path / "new.wacz.part").read_bytes() == b"my notes"
    (tmp_path / "old.wacz").write_bytes(b"my package")
    (tmp_path / "folder").mkdir()
    for taken in (tmp_path / "old.wacz", tmp_path / "folder"):
        with pytest.raises(DrarenaError) as err:
            export_wacz(fixture_dir, taken)
        assert str(err.value) == f"{taken}: already exists; remove it or choose another name"
    assert (tmp_path / "old.wacz").read_bytes() == b"my package"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "folder",
        "new.wacz",
        "new.wacz.part",
        "old.wacz",
    ]


def test_wrong_hash_in_datapackage_is_named(exported: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(exported) as zf:
        raw = zf.read("datapackage.json")
    package = json.loads(raw)
    good = package["resources"][0]["hash"]
    package["resources"][0]["hash"] = "sha256:" + "0" * 64
    bad = rewritten(
        exported, tmp_path / "bad.wacz", {"datapackage.json": json.dumps(package).encode()}
    )
    with WaczPackage.open(bad) as wacz:
        problems = wacz.verify()
        assert problems == [
            f"{WARC}: hash mismatch: datapackage.json says sha256:{'0' * 64}, content is {good}",
            "datapackage.json: hash mismatch: datapackage-digest.json says "
            f"sha256:{hashlib.sha256(raw).hexdigest()}, content is sha256:"
            f"{hashlib.sha256(json.dumps(package).encode()).hexdigest()}",
        ]
        with pytest.raises(DrarenaError, match=f"{WARC}: hash mismatch") as err:
            wacz.extract_warc(wacz.warcs[0], tmp_path / "x.warc.gz")
        assert "\n" not in str(err.value) and not (tmp_path / "x.warc.gz").exists()
        wacz.extract_warc(wacz.warcs[0], tmp_path / "x.warc.gz", check=False)  # kept on request
    assert f"sha256:{hashlib.sha256((tmp_path / 'x.warc.gz').read_bytes()).hexdigest()}" == good


def test_flipped_byte_in_a_warc_member_is_named(exported: Path, tmp_path: Path) -> None:
    with WaczPackage.open(exported) as wacz:
        start, size = wacz.data_range(wacz.warcs[0])
        declared = wacz.warcs[0].hash
    blob = bytearray(exported.read_bytes())
    blob[start + size // 2] ^= 0x01
    damaged = tmp_path / "damaged.wacz"
    damaged.write_bytes(bytes(blob))
    with WaczPackage.open(damaged) as wacz:
        problems = wacz.verify()
        assert len(problems) == 1 and problems[0].startswith(f"{WARC}: hash mismatch")
        assert declared in problems[0] and "content is sha256:" in problems[0]
        with pytest.raises(DrarenaError, match="hash mismatch"):
            wacz.extract_warc(wacz.warcs[0], tmp_path / "x.warc.gz")


def flagged(src: Path, dest: Path, name: str, method: int, flag: int) -> Path:
    """A copy of a zip whose member `name` is deflated, then labelled with another compression
    `method` and general-purpose `flag` bits in both its headers (what zipfile cannot write)."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dest, "w") as new:
        for info in old.infolist():
            kind = zipfile.ZIP_DEFLATED if info.filename == name else info.compress_type
            new.writestr(info.filename, old.read(info), compress_type=kind)
    data = bytearray(dest.read_bytes())
    # (signature, offset of the name length, of the name, of the flags; the method follows)
    for magic, size_at, name_at, flag_at in (
        (b"PK\x03\x04", 26, 30, 6),
        (b"PK\x01\x02", 28, 46, 8),
    ):
        at = 0
        while (at := data.find(magic, at)) >= 0:
            size = struct.unpack_from("<H", data, at + size_at)[0]
            if data[at + name_at : at + name_at + size] == name.encode():
                old_flag = struct.unpack_from("<H", data, at + flag_at)[0]
                struct.pack_into("<HH", data, at + flag_at, old_flag | flag, method)
            at += 4
    dest.write_bytes(bytes(data))
    return dest


def test_members_zipfile_cannot_read_are_one_line_errors(exported: Path, tmp_path: Path) -> None:
    """Deflate64 (method 9), an encrypted member and a hash of no fixed length (shake_128):
    zipfile's NotImplementedError and RuntimeError, hashlib's TypeError before."""
    deflate64 = flagged(exported, tmp_path / "deflate64.wacz", WARC, 9, 0)
    with WaczPackage.open(deflate64) as wacz:
        assert wacz.verify() == [
            f"{WARC}: damaged in the zip (compression method 9: "
            "That compression method is not supported)"
        ]
        with pytest.raises(DrarenaError, match=f"{WARC}: cannot be read"):
            wacz.extract_warc(wacz.warcs[0], tmp_path / "x.warc.gz")
    encrypted = flagged(exported, tmp_path / "encrypted.wacz", "datapackage.json", 8, 1)
    with pytest.raises(DrarenaError) as err:
        WaczPackage.open(encrypted)
    assert (
        str(err.value) == f"{encrypted}: datapackage.json: encrypted, which a WACZ member never is"
    )
    with zipfile.ZipFile(exported) as zf:
        package = json.loads(zf.read("datapackage.json"))
    package["resources"][0]["hash"] = "shake_128:00"
    shake = rewritten(
        exported, tmp_path / "shake.wacz", {"datapackage.json": json.dumps(package).encode()}
    )
    with pytest.raises(DrarenaError, match=r"resources\[0\]\.hash: 'shake_128:00' is not"):
        WaczPackage.open(shake)
    assert not (tmp_path / "x.warc.gz").exists()


def test_undeclared_member_is_reported(exported: Path, tmp_path: Path) -> None:
    extra = shutil.copy(exported, tmp_path / "extra.wacz")
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("archive/stray.warc", b"not declared")
    with WaczPackage.open(Path(extra)) as wacz:
        assert wacz.verify() == [
            "archive/stray.warc: in the package but not listed in datapackage.json"
        ]


def test_reads_a_package_made_by_py_wacz(tmp_path: Path) -> None:
    """fixtures/pywacz-small.wacz: `wacz create` (py-wacz 0.6.0) over 19 records cut from the
    fixture's WARC (a zipnum index.cdx.gz + index.idx, deflated JSON members, no pages list)."""
    package = Path(__file__).parent / "fixtures" / "pywacz-small.wacz"
    with WaczPackage.open(package) as wacz:
        assert wacz.datapackage["software"] == "py-wacz 0.6.0"
        assert [m.name for m in wacz.warcs] == ["archive/small.warc.gz"]
        assert wacz.verify() == [] and wacz.pages() == []
        wacz.extract_warc(wacz.warcs[0], tmp_path / "small.warc.gz")
        member = wacz.warcs[0]
    data = (tmp_path / "small.warc.gz").read_bytes()
    assert len(data) == member.size and hashlib.sha256(data).hexdigest() == member.sha256
    types = [r.rec_type for r in ArchiveIterator(BytesIO(data))]
    assert len(types) == 19 and types.count("revisit") == 1 and types[0] == "warcinfo"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not-a-zip", "not a WACZ package (not a zip file"),
        ("empty", "not a WACZ package (not a zip file"),
        ("no-datapackage", "datapackage.json is missing"),
        ("bad-json", "datapackage.json: not valid JSON (Expecting property name"),
        ("missing-member", "lists archive/gone.warc.gz, which is not in the package"),
        ("bad-hash-field", "resources[0].hash: 'c1cb' is not '<algorithm>:<hex>'"),
        ("no-warc", "lists no WARC file under archive/"),
    ],
)
def test_bad_packages_give_one_line_errors(
    case: str, expected: str, exported: Path, tmp_path: Path
) -> None:
    path = tmp_path / f"{case}.wacz"
    with zipfile.ZipFile(exported) as zf:
        package = json.loads(zf.read("datapackage.json"))
    if case == "not-a-zip":
        path.write_bytes(b"WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n")
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "no-datapackage":
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("archive/data.warc", b"")
    else:
        resources = package["resources"]
        if case == "missing-member":
            resources[0]["path"] = "archive/gone.warc.gz"
        elif case == "bad-hash-field":
            resources[0]["hash"] = "c1cb"
        elif case == "no-warc":
            package["resources"] = resources[1:]
        data = b"{not json" if case == "bad-json" else json.dumps(package).encode()
        rewritten(exported, path, {"datapackage.json": data})
    with pytest.raises(DrarenaError) as err:
        WaczPackage.open(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_export_refuses_a_damaged_snapshot_and_leaves_nothing(
    fixture_dir: Path, tmp_path: Path
) -> None:
    snap = tmp_path / "pydocs"
    snap.mkdir()
    for name in ("manifest.json", "index.cdxj", "pydocs-00000.warc.gz"):
        shutil.copy2(fixture_dir / name, snap / name)
    warc = snap / "pydocs-00000.warc.gz"
    blob = bytearray(warc.read_bytes())
    blob[1000] ^= 0x01
    warc.write_bytes(bytes(blob))
    with pytest.raises(DrarenaError, match=r"pydocs-00000\.warc\.gz: sha256 differs"):
        export_wacz(snap, tmp_path / "out.wacz")
    assert list(tmp_path.iterdir()) == [snap]
    with Snapshot.open(snap) as opened:
        assert not opened.verify().ok


@pytest.mark.slow
def test_cli_round_trip_export_import_extract(
    fixture_dir: Path, pydocs_extracted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """export -> import under a new name -> extract: the same records, index and docs.jsonl."""
    from drarena.cli import main

    wacz = tmp_path / "pydocs.wacz"
    assert main(["snapshot", "export", str(fixture_dir), "--wacz", str(wacz)]) == 0
    assert capsys.readouterr().out.startswith(f"{wacz}: WACZ 1.1.1 of snapshot pydocs")
    back = tmp_path / "pydocs-rt"
    assert (
        main(["snapshot", "import", "pydocs-rt", str(wacz), "--out", str(back), "--no-progress"])
        == 0
    )
    with Snapshot.open(fixture_dir) as original, Snapshot.open(back) as imported:
        assert imported.name == "pydocs-rt" and imported.verify().ok
        assert imported.fingerprint == original.fingerprint  # same WARC bytes, same names
        assert [f.sha256 for f in imported.manifest.warc_files] == [
            f.sha256 for f in original.manifest.warc_files
        ]
    assert (back / "index.cdxj").read_bytes() == (fixture_dir / "index.cdxj").read_bytes()
    assert main(["extract", str(back), "--no-progress"]) == 0
    assert (back / "docs.jsonl").read_bytes() == (pydocs_extracted / "docs.jsonl").read_bytes()

    with zipfile.ZipFile(wacz) as zf:
        package = json.loads(zf.read("datapackage.json"))
    package["resources"][0]["hash"] = "sha256:" + "0" * 64
    bad = rewritten(wacz, tmp_path / "bad.wacz", {"datapackage.json": json.dumps(package).encode()})
    capsys.readouterr()
    assert (
        main(
            ["snapshot", "import", "bad", str(bad), "--out", str(tmp_path / "bad"), "--no-progress"]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{bad}: {WARC}: hash mismatch" in err
    assert not (tmp_path / "bad").exists()


def test_importing_a_changed_wacz_again_is_refused_not_up_to_date(
    exported: Path, tmp_path: Path
) -> None:
    """A WACZ source is recorded per member (package.wacz#archive/...): a package replaced by
    another one declaring other member hashes is a different snapshot, as a changed WARC is
    (before, any source with a '#' passed the check, and the stale snapshot stayed)."""
    from drarena.web.warc.importer import ImportOptions, import_archives

    wacz = Path(shutil.copy(exported, tmp_path / "pkg.wacz"))
    out = tmp_path / "st"
    assert not import_archives("st", [wacz], out, ImportOptions(progress=False)).up_to_date
    assert import_archives("st", [wacz], out, ImportOptions(progress=False)).up_to_date
    with zipfile.ZipFile(wacz) as zf:
        package = json.loads(zf.read("datapackage.json"))
    for resource in package["resources"]:
        if resource["path"].startswith("archive/"):
            resource["hash"] = "sha256:" + "1" * 64
    changed = rewritten(
        wacz, tmp_path / "changed.wacz", {"datapackage.json": json.dumps(package).encode()}
    )
    changed.replace(wacz)
    with pytest.raises(DrarenaError, match="already holds a different snapshot"):
        import_archives("st", [wacz], out, ImportOptions(progress=False))
