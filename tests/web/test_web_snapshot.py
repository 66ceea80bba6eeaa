"""The committed fixture (snapshots/pydocs) through the reader, verify and damage handling."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import Snapshot, StoredResponse
from drarena.web.warc.warcfile import sha1_b32

BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def fixture_dir(repo_root: Path) -> Path:
    return repo_root / "snapshots" / "pydocs"


@pytest.fixture(scope="module")
def snap(fixture_dir: Path) -> Snapshot:
    return Snapshot.open(fixture_dir)


@pytest.fixture()
def copy(fixture_dir: Path, snap: Snapshot, tmp_path: Path) -> Path:
    """The snapshot's own files (not what later stages derive next to them)."""
    target = tmp_path / "pydocs"
    target.mkdir()
    for name in ["manifest.json", "index.cdxj", *(f.name for f in snap.manifest.warc_files)]:
        shutil.copy2(fixture_dir / name, target / name)
    return target


def warc_of(folder: Path) -> Path:
    return sorted(folder.glob("*.warc.gz"))[0]


def test_fixture_is_a_few_hundred_pages_under_8mib(snap: Snapshot, fixture_dir: Path) -> None:
    own = ["manifest.json", "index.cdxj", *(f.name for f in snap.manifest.warc_files)]
    total = sum((fixture_dir / name).stat().st_size for name in own)  # derived files aside
    assert total < 8 * 1024 * 1024
    assert snap.manifest.complete
    assert 250 <= snap.manifest.counts.pages <= 400
    assert snap.name == "pydocs"
    assert len(snap.fingerprint) == 64


def test_iter_responses_matches_index_and_payload_digests(snap: Snapshot) -> None:
    responses = list(snap.iter_responses())
    assert snap.skipped == 0
    assert len(responses) == len(snap)  # one CDXJ line per response or revisit
    revisits = [r for r in responses if r.revisit]
    assert len(revisits) == snap.manifest.counts.revisits >= 1
    for stored in responses:
        # the body (decoded; no content coding here) hashes to the recorded payload digest
        assert sha1_b32(stored.body) == stored.payload_digest, stored.url


def test_lookup_canonicalizes_and_resolves_revisits(snap: Snapshot) -> None:
    page = snap.lookup(f"{BASE}/library/os.html#os.getcwd")
    assert isinstance(page, StoredResponse)
    assert page.status == 200 and page.content_type == "text/html"
    assert page.canonical_url == f"{BASE}/library/os.html"
    assert b"<title>os " in page.body
    assert snap.lookup("HTTP://127.0.0.1:8765/library/%6fs.html") == page
    redirect = snap.lookup(f"{BASE}/howto")
    assert redirect is not None and redirect.status == 301
    assert redirect.location == f"{BASE}/howto/"
    revisit = snap.lookup(f"{BASE}/howto/")
    original = snap.lookup(f"{BASE}/howto/index.html")
    assert revisit is not None and original is not None
    assert revisit.revisit and revisit.body == original.body and revisit.body
    assert snap.lookup(f"{BASE}/library/never-captured.html") is None
    assert f"{BASE}/library/os.html" in snap


def test_redirect_to_unparsable_location_has_no_target(snap: Snapshot) -> None:
    """A stored 3xx whose Location urljoin cannot parse (any WARC may hold one) has no target,
    as a bad href has none, instead of raising in every reader (serve, extract)."""
    redirect = snap.lookup(f"{BASE}/howto")
    assert redirect is not None
    bad = dataclasses.replace(redirect, headers=(("Location", "http://[oops/"),))
    assert bad.status == 301 and bad.location is None


def test_verify_passes_on_fixture(fixture_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(fixture_dir)]) == 0
    assert "OK" in capsys.readouterr().out


def test_verify_names_file_with_flipped_byte(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warc = warc_of(copy)
    data = bytearray(warc.read_bytes())
    data[len(data) // 2] ^= 0x01
    warc.write_bytes(bytes(data))
    assert main(["verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert f"{warc.name}: sha256 mismatch" in out
    assert "FAILED" in out


def test_verify_flags_edited_cdxj(copy: Path) -> None:
    cdxj = copy / "index.cdxj"
    cdxj.write_text(cdxj.read_text().replace('"status": "200"', '"status": "201"', 1))
    report = Snapshot.open(copy).verify()
    assert not report.ok and any("index.cdxj" in p for p in report.problems)


def _member_offsets(warc: Path) -> list[int]:
    offsets = []
    with warc.open("rb") as fh:
        records = ArchiveIterator(fh)
        for _ in records:
            offsets.append(records.get_record_offset())
    return offsets


def test_corrupt_member_costs_only_that_record(copy: Path, snap: Snapshot) -> None:
    warc = warc_of(copy)
    offsets = _member_offsets(warc)
    data = bytearray(warc.read_bytes())
    victim = offsets[len(offsets) // 2]
    for pos in range(victim + 40, victim + 60):  # inside the deflate stream of one member
        data[pos] ^= 0xFF
    warc.write_bytes(bytes(data))
    damaged = Snapshot.open(copy)
    responses = list(damaged.iter_responses())
    assert damaged.skipped == 1
    assert len(responses) >= len(snap) - 1
    report = damaged.verify()
    assert any(f"{warc.name}: 1 damaged record(s) at offset {victim}" in p for p in report.problems)
    # lookups of other pages still work
    assert damaged.lookup(f"{BASE}/library/os.html") is not None


def test_truncated_file_keeps_earlier_records(copy: Path, snap: Snapshot) -> None:
    warc = warc_of(copy)
    data = warc.read_bytes()
    warc.write_bytes(data[: len(data) - 500])
    damaged = Snapshot.open(copy)
    responses = list(damaged.iter_responses())
    assert damaged.skipped == 1
    assert len(responses) >= len(snap) - 1


@pytest.mark.parametrize(
    ("remove", "needle"),
    [
        ("manifest.json", "manifest is missing"),
        ("index.cdxj", "CDXJ index is missing"),
    ],
)
def test_missing_parts_are_one_line_errors(copy: Path, remove: str, needle: str) -> None:
    (copy / remove).unlink()
    with pytest.raises(DrarenaError, match=needle) as info:
        Snapshot.open(copy)
    assert str(copy) in str(info.value) and "\n" not in str(info.value)


def test_unreadable_manifest_is_one_line(copy: Path) -> None:
    (copy / "manifest.json").write_text("{not json")
    with pytest.raises(DrarenaError, match="not readable JSON") as info:
        Snapshot.open(copy)
    assert "\n" not in str(info.value)


def test_a_manifest_over_the_limit_is_one_line(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot folder may be someone else's: its manifest.json was decoded whole, however
    large; now one over MAX_MANIFEST_BYTES is one line naming it, having read only that much."""
    import drarena.web.warc.manifest as manifest

    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", 64)
    with pytest.raises(DrarenaError, match=r"manifest\.json: larger than 64 bytes") as info:
        Snapshot.open(copy)
    assert str(copy) in str(info.value) and "\n" not in str(info.value)


def test_unknown_path_and_escaping_names(copy: Path, tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match="no such snapshot folder"):
        Snapshot.open(tmp_path / "nowhere")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["warc_files"][0]["name"] = "../../etc/passwd"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DrarenaError, match=r"warc_files\.0\.name"):
        Snapshot.open(copy)


def test_cli_reports_bad_snapshot_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "verify", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("drarena: error:") and "\n" not in err


def test_warcio_tools_accept_fixture(fixture_dir: Path) -> None:
    warcio = [sys.executable, "-m", "warcio.cli"]
    for warc in fixture_dir.glob("*.warc.gz"):
        check = subprocess.run([*warcio, "check", str(warc)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        index = subprocess.run([*warcio, "index", str(warc)], capture_output=True, text=True)
        assert index.returncode == 0, index.stderr
        assert index.stdout.count('"warc-type": "response"') >= 250
        with gzip.open(warc, "rb") as fh:
            assert fh.read(9) == b"WARC/1.1\r"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _write(folder: Path, *parts: bytes, warc_too: bool = False) -> None:
    (folder / "index.cdxj").write_bytes(b"".join(parts))
    if warc_too:
        warc_of(folder).unlink()


def _damage(folder: Path, damage: str) -> None:
    """One way an index can be wrong (or several at once, to check which is named)."""
    cdxj = folder / "index.cdxj"
    lines = _lines(cdxj)
    whole = cdxj.read_bytes()
    if damage == "missing":
        cdxj.unlink()
    elif damage == "not utf-8":
        _write(folder, *lines[:4], b"\xff", *lines[4:])
    elif damage == "cut multibyte":
        _write(folder, whole, b"zz \xe2\x82")
    elif damage == "no space, after disorder":
        _write(folder, lines[1], lines[0], *lines[2:9], b"bad\n")
    elif damage == "disorder":
        _write(folder, *lines[3:], *lines[:3])
    elif damage == "form feed splits a line":
        _write(folder, *lines[:6], b"zzz x\x0cnospace\n")
    elif damage == "empty line":
        _write(folder, *lines[:6], b"\n")
    elif damage == "bad line and missing WARC":
        _write(folder, whole, b"zzz\n", warc_too=True)
    elif damage == "bad byte and missing WARC":
        _write(folder, whole, b"zzz \xff\n", warc_too=True)
    elif damage == "too large, bad byte first":
        _write(folder, b"\xff", whole, whole)


DAMAGES = (
    "missing",
    "not utf-8",
    "cut multibyte",
    "no space, after disorder",
    "disorder",
    "form feed splits a line",
    "empty line",
    "bad line and missing WARC",
    "bad byte and missing WARC",
    "too large, bad byte first",
)


@pytest.mark.parametrize("limited", [False, True])
@pytest.mark.parametrize("damage", DAMAGES)
def test_an_index_checked_a_line_at_a_time_fails_as_one_read_whole(
    copy: Path, damage: str, limited: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open(lookups=False) (extraction's: the index checked, not kept) says what
    open(lookups=True) says, word for word, whatever is wrong with the index (`limited`:
    the manifest's size is the limit, so a longer index is first of all too large)."""
    import drarena.web.warc.snapshot as snapshot

    if limited:
        monkeypatch.setattr(snapshot, "CDXJ_SLACK", 0)
    _damage(copy, damage)
    said = []
    for lookups in (True, False):
        with pytest.raises(DrarenaError) as info:
            Snapshot.open(copy, lookups=lookups)
        said.append(str(info.value))
    assert said[0] == said[1]
    assert "\n" not in said[0]


def test_an_index_not_kept_is_read_on_the_first_lookup(fixture_dir: Path, snap: Snapshot) -> None:
    with Snapshot.open(fixture_dir, lookups=False) as lazy:
        assert not lazy._lines
        assert lazy.lookup(f"{BASE}/library/os.html") == snap.lookup(f"{BASE}/library/os.html")
        assert len(lazy) == len(snap)


def test_revisits_resolve_with_only_their_digests_remembered(
    copy: Path, snap: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """iter_responses remembers only the payloads the index lists revisits of; an index that
    does not list a revisit (out of step with the WARC files) still gives the same
    responses, the records before it read again."""
    expected = [(r.url, r.revisit, r.body) for r in snap.iter_responses()]

    def no_rescan(*args: object) -> None:
        raise AssertionError("an index that lists every revisit needs no second reading")

    with monkeypatch.context() as patch:
        patch.setattr(Snapshot, "_payloads_before", no_rescan)
        with Snapshot.open(copy, lookups=False) as whole:
            assert [(r.url, r.revisit, r.body) for r in whole.iter_responses()] == expected
    cdxj = copy / "index.cdxj"
    cdxj.write_bytes(b"".join(line for line in _lines(cdxj) if b"warc/revisit" not in line))
    with Snapshot.open(copy, lookups=False) as stale:
        assert [(r.url, r.revisit, r.body) for r in stale.iter_responses()] == expected
        assert stale.skipped == 0
