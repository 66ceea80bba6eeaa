"""Hostile input to the frozen-web commands (issue 14, item 3): each test reproduces a finding
of the probe and failed before its fix.

- an imported WARC named like a file drarena writes (index.cdxj, manifest.json, docs.jsonl)
  is never written through nor left in the way;
- `local_site.apt_package` cannot smuggle options or a local .deb into `apt-get` as root;
- SIGTERM during a crawl leaves a resumable snapshot, as SIGINT does;
- unbounded or non-finite timings in a spec (or live settings) are refused, naming the field;
- a spec or tournament config that is not UTF-8, not YAML or not a mapping is one line;
- the replay server drops a client that never finishes its request head (slowloris).
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest
import yaml
from web_site import CrawlSite, site_spec

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.web.manifest import Counts, load_manifest
from drarena.web.serve import replay_app, serving
from drarena.web.snapshot import Snapshot
from drarena.web.spec import CrawlSpec, load_spec, parse_spec
from drarena.web.writer import Exchange, SnapshotWriter


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _warc(folder: Path) -> Path:
    """A small gzip-per-record WARC of two pages (written by drarena's own writer)."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(folder, "mini", {"seeds": []}, {"drarena": "test"},
                            clock=lambda: start + timedelta(seconds=next(ticks)))
    writer.open()
    for path, body in (("a", b"<html><title>A</title><p>one</p></html>"),
                       ("b", b"<html><title>B</title><p>two</p></html>")):
        writer.write_exchange(Exchange(f"http://example.org/{path}.html",
                                       (("Host", "example.org"),), 200, "OK",
                                       (("Content-Type", "text/html"),), body))
    writer.close(complete=True, counts=Counts())
    return folder / "mini-00000.warc.gz"


# --- 1. import: inputs named like drarena's own files ------------------------------------------

@pytest.mark.parametrize("name", ["index.cdxj", "manifest.json", "docs.jsonl", "links.jsonl",
                                  "extract-manifest.json", "manifest.json.tmp"])
@pytest.mark.parametrize("keep", ["--link", "--copy"])
def test_import_never_writes_through_an_input_named_like_a_snapshot_file(
        tmp_path: Path, name: str, keep: str, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in" / name
    src.parent.mkdir()
    shutil.copyfile(_warc(tmp_path / "made"), src)
    before = _sha(src)
    out = tmp_path / "out"
    assert main(["snapshot", "import", "t", str(src), "--out", str(out), keep,
                 "--no-progress"]) == 0
    assert _sha(src) == before  # the user's file is untouched
    with Snapshot.open(out) as snap:
        assert snap.verify().ok
        assert len(snap) == 2
        kept = [f.name for f in snap.manifest.warc_files]
    assert kept == ["t-00000.warc.gz"]  # staged under a WARC name, never the input's
    # a later stage writing its own files next to the WARCs cannot reach the input either
    assert main(["extract", str(out), "--no-progress"]) == 0
    assert _sha(src) == before
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()


def test_import_keeps_a_plain_warc_name(tmp_path: Path) -> None:
    """A file already named like a WARC keeps its name (and is hard-linked, bytes shared)."""
    src = _warc(tmp_path / "made")
    out = tmp_path / "out"
    assert main(["snapshot", "import", "t", str(src), "--out", str(out), "--link",
                 "--no-progress"]) == 0
    assert (out / src.name).samefile(src)


def test_import_never_removes_a_build_folder_it_did_not_make(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The staging folder `.OUT.importing` is cleared only when an earlier import made it."""
    src = _warc(tmp_path / "made")
    theirs = tmp_path / ".out.importing"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep")
    assert main(["snapshot", "import", "t", str(src), "--out", str(tmp_path / "out"),
                 "--no-progress"]) == 2
    assert "was not made by drarena" in capsys.readouterr().err
    assert (theirs / "notes.txt").read_text() == "keep"
    (theirs / "notes.txt").unlink()
    (theirs / ".drarena-import").touch()  # as an interrupted import leaves it
    assert main(["snapshot", "import", "t", str(src), "--out", str(tmp_path / "out"),
                 "--no-progress"]) == 0
    assert not theirs.exists() and not (tmp_path / "out" / ".drarena-import").exists()
