"""WACZ 1.1.1 packages (Webrecorder): export a snapshot as one, open and check one for import.

Why: a snapshot should travel to the tools people view archives with (ReplayWeb.page, pywb),
and archives made by other crawlers arrive as WACZ. The layout follows the WACZ 1.1.1 spec:
`archive/*.warc.gz` copied byte for byte and stored uncompressed (ZIP_STORED), so the CDXJ
offsets still address single gzip members that a reader can fetch by HTTP range;
`indexes/index.cdx`, the snapshot's CDXJ lines re-keyed with pywb's SURT and sorted (plain
CDXJ under the one name both pywb's `wb-manager add --unpack-wacz` and ReplayWeb.page load;
its `filename` values are already relative to `archive/`); `pages/pages.jsonl` (each HTML page
answered 200); `datapackage.json` with the sha256 and size of every member; and
`datapackage-digest.json` with the hash of `datapackage.json`. Every member is stored, and the
zip timestamps and `created` come from the snapshot manifest, so one snapshot always gives the
same bytes, whatever the zlib build or the clock.

Why not the `wacz` package on PyPI (0.6.0): it re-indexes the WARC files (a zipnum
`index.cdx.gz` + `index.idx` through cdxj-indexer) where the snapshot already has a CDXJ whose
offsets come from the very bytes written; it would add 21 packages (frictionless and its table
stack, tldextract, boilerpy3, chardet, which `requests` then prefers for charset guessing) to the
environment, even as a test-only dependency; and its validator extracts the whole zip to a
temporary folder. Its checks (hashes, listed members, frictionless' name pattern) are done here,
streamed, and in the tests. `wacz validate` (0.6.0, from a throwaway environment) accepts the
packages written here; pywb 2.10 replays every page of the exported fixture from one, and
ReplayWeb.page 2.4.6 renders its pages.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import re
import struct
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.files import FULL_ERRNOS, atomic_output, open_input, read_bounded, write_error
from drarena.web.warc.manifest import CDXJ_NAME, Manifest
from drarena.web.warc.urls import surt

if TYPE_CHECKING:
    from drarena.web.warc.snapshot import Snapshot

WACZ_VERSION = "1.1.1"
DATAPACKAGE = "datapackage.json"
DIGEST = "datapackage-digest.json"
INDEX_PATH = "indexes/index.cdx"  # CDXJ lines: the name both pywb and ReplayWeb.page load
PAGES_PATH = "pages/pages.jsonl"
_CHUNK = 1 << 20
MAX_DATAPACKAGE_BYTES = 16 * 1024 * 1024
"""datapackage.json is read whole (and datapackage-digest.json, pages.jsonl lines): a real
one is a few KB, a line per member; a larger one is refused before it is inflated."""
MAX_INFLATE_RATIO = 100
"""A compressed member may expand to at most this many times its compressed size (+1 MiB):
WARC and JSON text deflate 3-10x, while ~1000x is reached only by repeated bytes, the stuff of
decompression bombs (a 1.2 MB member that writes 1.2 GB to disk)."""
_INFLATE_SLACK = 1 << 20
_DIGEST_MAX = 1 << 16
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_NAME_CHARS = re.compile(r"[^-a-z0-9._/]")
# Declared hashes are checked with hashlib; the shake_* algorithms have no fixed length (their
# hexdigest needs one), so a declaration naming them says nothing checkable.
_HASHES = frozenset(a for a in hashlib.algorithms_guaranteed if not a.startswith("shake_"))


@dataclass(frozen=True, slots=True)
class WaczMember:
    """A resource declared in datapackage.json: path in the zip, declared bytes and hash."""

    name: str
    size: int
    hash: str  # as declared, "sha256:<hex>" (or another hashlib algorithm)

    @property
    def algorithm(self) -> str:
        return self.hash.partition(":")[0]

    @property
    def sha256(self) -> str:
        """Declared sha256 as bare hex (the snapshot manifest's form); "" for another algorithm."""
        algo, _, value = self.hash.partition(":")
        return value if algo == "sha256" else ""


@dataclass(frozen=True, slots=True)
class WaczPage:
    """One line of pages/pages.jsonl."""

    url: str
    ts: str
    title: str = ""
    id: str = ""


@dataclass(frozen=True, slots=True)
class WaczExport:
    """What `export_wacz` wrote."""

    path: Path
    snapshot: str
    fingerprint: str
    warc_files: int
    captures: int
    pages: int
    bytes: int

    def summary(self) -> str:
        return (
            f"{self.path}: WACZ {WACZ_VERSION} of snapshot {self.snapshot} "
            f"({self.warc_files} WARC file(s), {self.captures} captures, {self.pages} pages, "
            f"{self.bytes / 1e6:.1f} MB; fingerprint {self.fingerprint[:16]})"
        )


# --- export ----------------------------------------------------------------------------------


def export_wacz(snapshot_dir: Path, out: Path, *, title: str | None = None) -> WaczExport:
    """Write the snapshot as a WACZ package at `out`, which must not exist yet (atomically: a
    temporary file of a unique name next to it, then renamed)."""
    from drarena.web.warc.snapshot import Snapshot  # the reader side needs none of this

    out = Path(out)
    with Snapshot.open(snapshot_dir) as snap:
        manifest = snap.manifest
        index_bytes, captures = _replay_index(
            snap.path / CDXJ_NAME,
            manifest.cdxj.sha256,
            {f.name for f in manifest.warc_files},
            manifest.cdxj.size,
        )
        pages = _pages(snap)
        pages_bytes = _pages_jsonl(pages, title or manifest.name)
        moment = _zip_time(manifest.ended_at)
        _refuse_existing(out)  # after the snapshot's checks, which name its own problems first
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DrarenaError(f"{out}: cannot create its folder ({exc.strerror})") from None
        # A name of our own, created exclusively, so no file of the user's is truncated;
        # not tempfile.mkstemp, whose 0600 mode the rename would give the package.
        tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:12]}.part")
        handle = tmp.open("xb")
        try:
            with handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                resources = []
                for item in sorted(manifest.warc_files, key=lambda f: f.name):
                    path = f"archive/{item.name}"
                    _store_file(zf, snap.path / item.name, path, moment, item.sha256)
                    resources.append(_resource(path, item.sha256, item.size))
                resources.append(
                    _resource(INDEX_PATH, hashlib.sha256(index_bytes).hexdigest(), len(index_bytes))
                )
                resources.append(
                    _resource(PAGES_PATH, hashlib.sha256(pages_bytes).hexdigest(), len(pages_bytes))
                )
                package_bytes = _datapackage(manifest, pages, title, resources)
                digest = {
                    "path": DATAPACKAGE,
                    "hash": "sha256:" + hashlib.sha256(package_bytes).hexdigest(),
                }
                _store_bytes(zf, DIGEST, (json.dumps(digest, indent=2) + "\n").encode(), moment)
                _store_bytes(zf, DATAPACKAGE, package_bytes, moment)
                _store_bytes(zf, INDEX_PATH, index_bytes, moment)
                _store_bytes(zf, PAGES_PATH, pages_bytes, moment)
            _refuse_existing(out)  # made while we wrote: still not ours to replace
            tmp.replace(out)
        except OSError as exc:
            if exc.errno in FULL_ERRNOS:  # one line; the finally removes the part written
                raise write_error(out, exc) from None
            raise
        finally:
            tmp.unlink(missing_ok=True)
        return WaczExport(
            out,
            manifest.name,
            manifest.fingerprint,
            len(manifest.warc_files),
            captures,
            len(pages),
            out.stat().st_size,
        )


def _datapackage(
    manifest: Manifest, pages: list[WaczPage], title: str | None, resources: list[dict[str, Any]]
) -> bytes:
    """datapackage.json's bytes: the package's title and main page, the snapshot it holds
    (drarena's own fields) and its `resources`."""
    main = _main_page(pages, manifest.spec.get("seeds"))
    package: dict[str, Any] = {
        "profile": "data-package",
        "wacz_version": WACZ_VERSION,
        "title": title or manifest.name,
        "description": (
            f"drarena snapshot {manifest.name}: {len(pages)} pages, "
            f"fingerprint {manifest.fingerprint}"
        ),
        "created": manifest.ended_at,
        "software": f"drarena {__version__}",
        **({"mainPageUrl": main.url, "mainPageDate": main.ts} if main else {}),
        "drarena": {
            "snapshot": manifest.name,
            "fingerprint": manifest.fingerprint,
            "started_at": manifest.started_at,
            "ended_at": manifest.ended_at,
        },
        "resources": resources,
    }
    return (json.dumps(package, indent=2, ensure_ascii=False) + "\n").encode()


def _refuse_existing(out: Path) -> None:
    if out.exists() or out.is_symlink():
        raise DrarenaError(f"{out}: already exists; remove it or choose another name")


def _replay_index(cdxj: Path, expected: str, warc_names: set[str], size: int) -> tuple[bytes, int]:
    """The snapshot's CDXJ lines under pywb's keys, sorted; every line must name a WARC file of
    the manifest. (The snapshot's own keys keep IP hosts and trailing slashes, which pywb's
    binary search would miss.) Read bounded by the manifest's `size` of it, never waiting on
    a FIFO in its place (files.read_bounded)."""
    raw = read_bounded(cdxj, size, "its manifest says so: damaged, or replaced", what="CDXJ index")
    if hashlib.sha256(raw).hexdigest() != expected:
        raise DrarenaError(
            f"{cdxj}: sha256 differs from the snapshot manifest; "
            f"run `drarena snapshot verify {cdxj.parent}`"
        )
    lines = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        try:
            key, stamp, blob = line.split(" ", 2)
            fields = json.loads(blob)
            name, url = fields["filename"], fields["url"]
            if not isinstance(name, str) or not isinstance(url, str):
                raise TypeError("filename and url must be strings")
        except (ValueError, KeyError, TypeError):
            raise DrarenaError(
                f"{cdxj}: line {number}: not a CDXJ line with url and filename"
            ) from None
        if name not in warc_names:
            raise DrarenaError(f"{cdxj}: line {number}: {name} is not a WARC file of the manifest")
        lines.append(f"{replay_key(url, key)} {stamp} {blob}")
    lines.sort()  # code point order = UTF-8 byte order, as `LC_ALL=C sort` leaves pywb's files
    return "".join(line + "\n" for line in lines).encode(), len(lines)


def replay_key(url: str, fallback: str = "") -> str:
    """The SURT key pywb and the `surt` package give `url`: drarena's key with IPv4 hosts
    reversed, `www<digits>.` dropped and trailing slashes of the path stripped."""
    try:
        key = surt(url)
    except ValueError:
        return fallback or url.lower()
    host, _, rest = key.partition(")")
    path, mark, query = rest.partition("?")
    ipv4 = re.fullmatch(r"(\d+\.\d+\.\d+\.\d+)(:\d+)?", host)
    if ipv4:
        host = ",".join(reversed(ipv4[1].split("."))) + (ipv4[2] or "")
    else:
        host = re.sub(r",www\d+(?=:\d+$|$)", "", host)
    return f"{host}){path.rstrip('/') or '/'}{mark}{query}"


def _pages(snap: Snapshot) -> list[WaczPage]:
    """Each URL's first HTML capture answered 200, in WARC order (revisits resolved)."""
    pages: list[WaczPage] = []
    seen: set[str] = set()
    for response in snap.iter_responses():
        if response.status != 200 or not response.is_html or response.canonical_url in seen:
            continue
        seen.add(response.canonical_url)
        found = _TITLE.search(response.body[: 1 << 16])
        title = (
            " ".join(html.unescape(found.group(1).decode("utf-8", "replace")).split())
            if found
            else ""
        )
        page_id = hashlib.sha256(f"{response.url} {response.warc_date}".encode()).hexdigest()
        pages.append(WaczPage(response.url, response.warc_date, title, page_id[:16]))
    return pages


def _pages_jsonl(pages: list[WaczPage], title: str) -> bytes:
    lines = [
        json.dumps({"format": "json-pages-1.0", "id": "pages", "title": title}, ensure_ascii=False)
    ]
    for page in pages:
        entry = {"id": page.id, "url": page.url, "ts": page.ts}
        if page.title:
            entry["title"] = page.title
        lines.append(json.dumps(entry, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def _main_page(pages: list[WaczPage], seeds: object) -> WaczPage | None:
    by_url = {page.url: page for page in pages}
    for seed in seeds if isinstance(seeds, list) else []:
        if seed in by_url:
            return by_url[seed]
    return pages[0] if pages else None


def _resource(path: str, sha256_hex: str, size: int) -> dict[str, Any]:
    name = _NAME_CHARS.sub("-", path.rsplit("/", 1)[-1].lower())  # frictionless name pattern
    return {"name": name, "path": path, "hash": f"sha256:{sha256_hex}", "bytes": size}


def _zip_time(stamp: str) -> tuple[int, int, int, int, int, int]:
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return (1980, 1, 1, 0, 0, 0)
    return max(
        (1980, 1, 1, 0, 0, 0),
        (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second),
    )


def _zip_info(name: str, moment: tuple[int, int, int, int, int, int], size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, moment)
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = 3
    info.external_attr = 0o644 << 16
    info.file_size = size  # lets zipfile pick ZIP64 up front for members over 4 GiB
    return info


def _store_bytes(
    zf: zipfile.ZipFile, name: str, data: bytes, moment: tuple[int, int, int, int, int, int]
) -> None:
    zf.writestr(_zip_info(name, moment, len(data)), data)


def _store_file(
    zf: zipfile.ZipFile,
    src: Path,
    name: str,
    moment: tuple[int, int, int, int, int, int],
    expected: str,
) -> None:
    """Stream `src` into the zip, checking it against the manifest's sha256 on the way."""
    digest = hashlib.sha256()
    with open_input(src) as fh, zf.open(_zip_info(name, moment, src.stat().st_size), "w") as dst:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
            dst.write(block)
    if digest.hexdigest() != expected:
        raise DrarenaError(
            f"{src}: sha256 differs from the snapshot manifest; "
            f"run `drarena snapshot verify {src.parent}`"
        )


# --- reading ---------------------------------------------------------------------------------


class WaczPackage:
    """An opened WACZ file: its datapackage.json, declared members, streamed checks and copies."""

    def __init__(
        self,
        path: Path,
        zf: zipfile.ZipFile,
        package: dict[str, Any],
        package_bytes: bytes,
        resources: tuple[WaczMember, ...],
    ) -> None:
        self.path = path
        self.datapackage = package
        self.resources = resources
        self.warcs = tuple(
            r
            for r in resources
            if r.name.startswith("archive/") and r.name.endswith((".warc", ".warc.gz"))
        )
        self._zip = zf
        self._package_bytes = package_bytes

    @classmethod
    def open(cls, path: Path) -> WaczPackage:
        path = Path(path)
        try:
            zf = zipfile.ZipFile(path)
        except FileNotFoundError:
            raise DrarenaError(f"{path}: no such file") from None
        except (zipfile.BadZipFile, OSError) as exc:
            raise DrarenaError(f"{path}: not a WACZ package (not a zip file: {exc})") from None
        try:
            raw = _read_small(zf, DATAPACKAGE, MAX_DATAPACKAGE_BYTES)
            try:
                package = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"not valid JSON ({exc})") from None
            resources = _parse_resources(package, set(zf.namelist()))
        except KeyError:
            zf.close()
            raise DrarenaError(f"{path}: {DATAPACKAGE} is missing (not a WACZ package)") from None
        except (ValueError, zipfile.BadZipFile, OSError, EOFError, _Oversized) as exc:
            zf.close()
            raise DrarenaError(f"{path}: {DATAPACKAGE}: {exc}") from None
        overlap = _overlap(zf)
        if overlap:
            zf.close()
            raise DrarenaError(f"{path}: {overlap}")
        wacz = cls(path, zf, package, raw, resources)
        if not wacz.warcs:
            wacz.close()
            raise DrarenaError(f"{path}: {DATAPACKAGE} lists no WARC file under archive/")
        return wacz

    def most_written(self) -> int:
        """The most an import may write of this package's WARC files: what its members may
        yield (each within its own cap, _inflate_cap), never more than MAX_INFLATE_RATIO
        times the package's size. Members are distinct and do not overlap (checked), so this
        bounds the total by the archive's own size."""
        caps = sum(_inflate_cap(self._zip.getinfo(m.name)) for m in self.warcs)
        return min(caps, MAX_INFLATE_RATIO * self.path.stat().st_size + _INFLATE_SLACK)

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> WaczPackage:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def title(self) -> str:
        return str(self.datapackage.get("title") or "")

    def data_range(self, member: WaczMember) -> tuple[int, int]:
        """(offset in the .wacz file, length) of a stored member's bytes: what a range read gets."""
        info = self._zip.getinfo(member.name)
        if info.compress_type != zipfile.ZIP_STORED:
            raise DrarenaError(
                f"{self.path}: {member.name} is compressed in the zip, so it has "
                "no byte range of its own"
            )
        with self.path.open("rb") as fh:
            fh.seek(info.header_offset)
            head = fh.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise DrarenaError(f"{self.path}: {member.name}: damaged local zip header")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        return info.header_offset + 30 + name_len + extra_len, info.compress_size

    def verify(self) -> list[str]:
        """Re-hash every declared member (streamed) and datapackage.json; one line per problem."""
        problems: list[str] = []
        for member in self.resources:
            digest = hashlib.new(member.algorithm)
            size = 0
            try:
                for block in self._blocks(member):
                    digest.update(block)
                    size += len(block)
            except _Oversized as exc:
                problems.append(f"{member.name}: {exc}")
                continue
            except (zipfile.BadZipFile, OSError, EOFError, DrarenaError) as exc:
                problems.append(f"{member.name}: damaged in the zip ({exc})")
                continue
            actual = f"{member.algorithm}:{digest.hexdigest()}"
            if actual != member.hash:
                problems.append(
                    f"{member.name}: hash mismatch: {DATAPACKAGE} says {member.hash}, "
                    f"content is {actual}"
                )
            if size != member.size:
                problems.append(
                    f"{member.name}: size mismatch: {DATAPACKAGE} says {member.size} "
                    f"bytes, content is {size}"
                )
        declared = {m.name for m in self.resources} | {DATAPACKAGE, DIGEST}
        for name in sorted(set(self._zip.namelist()) - declared):
            if not name.endswith("/"):
                problems.append(f"{name}: in the package but not listed in {DATAPACKAGE}")
        problems.extend(self._check_digest())
        return problems

    def extract_warc(self, member: WaczMember, dest: Path, *, check: bool = True) -> None:
        """Copy a WARC member to `dest` (streamed); with `check`, refuse one whose hash is wrong."""
        digest = hashlib.new(member.algorithm)
        try:  # a unique temporary file, never through a link (files.atomic_output)
            with atomic_output(Path(dest), "wb") as out:
                for block in self._blocks(member):
                    digest.update(block)
                    out.write(block)
                actual = f"{member.algorithm}:{digest.hexdigest()}"
                if check and actual != member.hash:
                    raise DrarenaError(
                        f"{self.path}: {member.name}: hash mismatch: {DATAPACKAGE} "
                        f"says {member.hash}, content is {actual}"
                    )
        except _Oversized as exc:
            raise DrarenaError(f"{self.path}: {member.name}: {exc}") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise DrarenaError(f"{self.path}: {member.name}: cannot be read ({exc})") from None

    def pages(self) -> list[WaczPage]:
        """Entries of pages/pages.jsonl (the header line skipped); [] when there is none."""
        if PAGES_PATH not in self._zip.namelist():
            return []
        out: list[WaczPage] = []
        try:
            lines = _lines(self._zip, PAGES_PATH)
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except ValueError as exc:
                    raise DrarenaError(f"{self.path}: {PAGES_PATH}: line {number}: {exc}") from None
                if not isinstance(data, dict) or "format" in data:
                    continue
                if not isinstance(data.get("url"), str):
                    raise DrarenaError(f"{self.path}: {PAGES_PATH}: line {number}: no url")
                out.append(
                    WaczPage(
                        data["url"],
                        str(data.get("ts", "")),
                        str(data.get("title") or ""),
                        str(data.get("id") or ""),
                    )
                )
        except (_Oversized, zipfile.BadZipFile, OSError, EOFError) as exc:  # CRC, cut short
            raise DrarenaError(f"{self.path}: {PAGES_PATH}: {exc}") from None
        return out

    def _blocks(self, member: WaczMember) -> Iterator[bytes]:
        """The member's bytes in chunks. Stored members are read raw, so a damaged one is still
        hashed whole (zipfile's CRC check would stop before the last chunk)."""
        info = self._zip.getinfo(member.name)
        if info.compress_type != zipfile.ZIP_STORED:
            yield from _inflated(self._zip, info)
            return
        start, left = self.data_range(member)
        with self.path.open("rb") as raw:
            raw.seek(start)
            yield from _read_exactly(raw, left)

    def _check_digest(self) -> list[str]:
        if DIGEST not in self._zip.namelist():
            return []
        try:
            declared = json.loads(_read_small(self._zip, DIGEST, _DIGEST_MAX))["hash"]
            algo = declared.partition(":")[0]
            if algo not in _HASHES:
                raise ValueError(f"{algo!r} is not a fixed-length hash algorithm")
            actual = f"{algo}:{hashlib.new(algo, self._package_bytes).hexdigest()}"
        except (
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            zipfile.BadZipFile,
            OSError,
            EOFError,
        ) as exc:
            return [f"{DIGEST}: not a valid digest file ({exc!r})"]
        except _Oversized as exc:
            return [f"{DIGEST}: {exc}"]
        if actual != declared:
            return [f"{DATAPACKAGE}: hash mismatch: {DIGEST} says {declared}, content is {actual}"]
        return []


class _Oversized(Exception):
    """A member that declares or yields more bytes than its cap (a decompression bomb)."""


def _inflate_cap(info: zipfile.ZipInfo) -> int:
    """The most bytes a member may yield: its own size when stored, MAX_INFLATE_RATIO times
    its compressed size (+1 MiB) when compressed."""
    if info.compress_type == zipfile.ZIP_STORED:
        return info.compress_size
    return MAX_INFLATE_RATIO * info.compress_size + _INFLATE_SLACK


def _inflated(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int | None = None
) -> Iterator[bytes]:
    """A member's decoded bytes in chunks (zipfile inflates at most a chunk per read), checked
    against the cap twice: as the zip header declares it (refused before anything is read)
    and as the bytes actually come (a header can lie)."""
    ratio = _inflate_cap(info)
    limit = ratio if cap is None else min(cap, ratio)
    why = (
        f"{MAX_INFLATE_RATIO}x its compressed size"
        if limit == ratio
        else "the most this member may hold"
    )
    if info.file_size > limit:
        raise _Oversized(
            f"the zip header says it expands from {info.compress_size} to "
            f"{info.file_size} bytes, past its cap of {limit} ({why}); refused "
            "as a decompression bomb"
        )
    if info.flag_bits & 0x1:  # zipfile would ask for a password (RuntimeError)
        raise zipfile.BadZipFile("encrypted, which a WACZ member never is")
    try:
        member = zf.open(info)
    except NotImplementedError as exc:  # a compression method zipfile lacks (Deflate64, ...)
        raise zipfile.BadZipFile(f"compression method {info.compress_type}: {exc}") from None
    seen = 0
    with member as fh:
        while block := fh.read(_CHUNK):
            seen += len(block)
            if seen > limit:
                raise _Oversized(
                    f"expands past its cap of {limit} bytes ({why}) although its "
                    f"zip header says {info.file_size}; refused as a "
                    "decompression bomb"
                )
            yield block


def _read_small(zf: zipfile.ZipFile, name: str, cap: int) -> bytes:
    """A small member read whole, never past `cap` bytes (KeyError if it is missing)."""
    return b"".join(_inflated(zf, zf.getinfo(name), cap))


def _lines(zf: zipfile.ZipFile, name: str) -> Iterator[bytes]:
    """A member's lines, each at most MAX_DATAPACKAGE_BYTES long, its total size capped as
    `_inflated` caps it."""
    held = b""
    for block in _inflated(zf, zf.getinfo(name)):
        held += block
        *done, held = held.split(b"\n")
        yield from done
        if len(held) > MAX_DATAPACKAGE_BYTES:
            raise _Oversized(f"a line longer than {MAX_DATAPACKAGE_BYTES} bytes")
    if held:
        yield held


def _overlap(zf: zipfile.ZipFile) -> str:
    """Members whose data overlap in the file: how zip bombs multiply one compressed kernel
    (a real zip never shares bytes between members). "" when there are none."""
    spans = sorted(
        (info.header_offset, info.header_offset + 30 + info.compress_size, info.filename)
        for info in zf.infolist()
    )
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            return f"members {first} and {second} overlap in the zip; refused as a zip bomb"
    return ""


def _read_exactly(fh: IO[bytes], left: int) -> Iterator[bytes]:
    while left > 0:
        block = fh.read(min(_CHUNK, left))
        if not block:
            raise EOFError(f"zip file ends {left} bytes early")
        left -= len(block)
        yield block


def _parse_resources(package: object, names: set[str]) -> tuple[WaczMember, ...]:
    """Declared resources; ValueError naming the field for anything a reader cannot use."""
    if not isinstance(package, dict):
        raise ValueError("not a JSON object")
    items = package.get("resources")
    if not isinstance(items, list) or not items:
        raise ValueError("field resources: missing or empty")
    out: list[WaczMember] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        where = f"field resources[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object")
        path, declared, size = item.get("path"), item.get("hash"), item.get("bytes")
        if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"{where}.path: missing or not a relative path")
        algo, sep, value = declared.partition(":") if isinstance(declared, str) else ("", "", "")
        if not sep or algo not in _HASHES or not value:
            raise ValueError(f"{where}.hash: {declared!r} is not '<algorithm>:<hex>'")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"{where}.bytes: {size!r} is not a byte count")
        if path not in names:
            raise ValueError(f"lists {path}, which is not in the package")
        if path in seen:  # one WARC listed 1,000 times imported as 1,000 copies of it
            raise ValueError(f"{where}.path: {path} is listed again (first at [{seen[path]}])")
        seen[path] = i
        out.append(WaczMember(path, size, f"{algo}:{value}"))
    return tuple(out)
