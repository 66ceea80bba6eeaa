"""Fuzzing WACZ reading (drarena.web.warc.wacz.WaczPackage, and `snapshot import` of a .wacz): the
package's bytes mutated, and its datapackage.json replaced by fuzzed JSON.

Property: opening returns a package or raises DrarenaError; on an opened package, `verify`
returns its list of problems, `pages` and `extract_warc` return or raise DrarenaError; an
import returns its result or raises DrarenaError and then leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_inputs import mutated, tiny_snapshot
from hypothesis import given
from hypothesis import strategies as st

from drarena.errors import DrarenaError
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.wacz import WaczPackage, export_wacz

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        export_wacz(tiny_snapshot(root / "tiny"), root / "tiny.wacz")
        yield root


def _read(path: Path, work: Path) -> None:
    try:
        package = WaczPackage.open(path)
    except DrarenaError as exc:
        assert "\n" not in str(exc)
        return
    with package:
        assert all(isinstance(p, str) for p in package.verify())
        with contextlib.suppress(DrarenaError):
            package.pages()
        for number, member in enumerate(package.warcs):
            with contextlib.suppress(DrarenaError):
                package.extract_warc(member, work / f"member{number}")


def _import(path: Path, work: Path) -> None:
    out = work / "imported"
    shutil.rmtree(out, ignore_errors=True)
    try:
        result = import_archives("wacz", [path], out, ImportOptions(progress=False, jobs=1))
    except DrarenaError:
        assert not out.exists()
        return
    with Snapshot.open(result.out) as snap:
        assert snap.verify().complete


@given(st.data())
def test_mutated_wacz_bytes(work: Path, data: st.DataObject) -> None:
    seed = data.draw(
        st.sampled_from(
            [work / "tiny.wacz", REPO / "tests" / "web" / "fixtures" / "pywacz-small.wacz"]
        )
    )
    path = work / "case.wacz"
    path.write_bytes(data.draw(mutated(seed.read_bytes())))
    _read(path, work)
    _import(path, work)


JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=30),
        st.sampled_from(
            [
                "archive/tiny-00000.warc.gz",
                "sha256:00",
                "md5:x",
                "../x",
                "/etc/passwd",
                "archive/",
                "pages/pages.jsonl",
            ]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(st.data())
def test_fuzzed_datapackage(work: Path, data: st.DataObject) -> None:
    """The package rebuilt with datapackage.json's fields replaced (members kept)."""
    path = work / "case.wacz"
    with zipfile.ZipFile(work / "tiny.wacz") as src:
        package = json.loads(src.read("datapackage.json"))
        for _ in range(data.draw(st.integers(1, 3))):
            resources = package.get("resources") if isinstance(package, dict) else None
            if isinstance(resources, list) and resources and data.draw(st.booleans()):
                item = data.draw(st.sampled_from(resources))
                if isinstance(item, dict):
                    item[data.draw(st.sampled_from(["path", "hash", "bytes", "x"]))] = data.draw(
                        JSON
                    )
            elif isinstance(package, dict):
                package[data.draw(st.sampled_from(["resources", "title", "x"]))] = data.draw(JSON)
        with zipfile.ZipFile(path, "w") as out:
            for info in src.infolist():
                body = (
                    json.dumps(package).encode()
                    if info.filename == "datapackage.json"
                    else src.read(info)
                )
                out.writestr(info, body)
    _read(path, work)
    _import(path, work)


def test_damaged_pages_list_is_one_line(work: Path) -> None:
    """Found by `make fuzz`: a flipped byte in the stored pages/pages.jsonl made `pages()`
    raise zipfile.BadZipFile (CRC mismatch) instead of the one-line DrarenaError."""
    raw = bytearray((work / "tiny.wacz").read_bytes())
    at = raw.find(b'{"format"')
    assert at > 0
    raw[at + 3] ^= 0x20
    path = work / "damaged-pages.wacz"
    path.write_bytes(bytes(raw))
    with WaczPackage.open(path) as package, pytest.raises(DrarenaError, match=r"pages\.jsonl"):
        package.pages()
