"""manifest.json of a snapshot: what was crawled, with which code, and the digests of its files.

Why: later stages (extract, trees, index) record the snapshot fingerprint in their own
manifests, so every result traces back to the exact WARC bytes; `drarena snapshot verify`
recomputes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from drarena.errors import DrarenaError
from drarena.files import read_bounded, write_atomic
from drarena.quoting import shown
from drarena.web.warc.urls import safe_file_name

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
CDXJ_NAME = "index.cdxj"
# A snapshot folder may be someone else's (shared, copied, damaged), so its manifest is read
# bounded. Why 1 GiB: the manifest grows with spec.seeds (a seeds file holds up to 64 MiB,
# about a million URLs: ~90 MB as indented JSON for a crawl of 1 million pages seeded with
# all of them) and ~1 KB per WARC file (warc_files, an import's sources: hundreds of files
# for 1 million pages), so 1 GiB is over 10x the largest a crawl of 1 million pages writes.
MAX_MANIFEST_BYTES = 1 << 30


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileDigest(_Frozen):
    """One file of the snapshot with its sha256 and (for WARC files) its record count."""

    name: str
    sha256: str
    size: int
    records: int = 0

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        try:
            return safe_file_name(value)
        except DrarenaError as exc:
            raise ValueError(str(exc)) from None


class Counts(_Frozen):
    """What a crawl, a live capture or an import did: the one counters record, counted as it
    goes (each step adds a record of its own with `plus`, so it is never changed in place) and
    written as the manifest's `counts`. `pages` counts page fetches (a redirect chain is one
    page); an import counts captures with a status below 300 as pages. `responses` counts
    revisits too."""

    pages: int = 0
    responses: int = 0
    revisits: int = 0
    redirects: int = 0
    http_errors: int = 0
    fetch_errors: int = 0
    robots_blocked: int = 0
    truncated: int = 0
    bytes: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)
    errors: dict[str, int] = Field(default_factory=dict)
    records: int = 0  # WARC records read (import; a crawl leaves 0)
    skipped: dict[str, int] = Field(default_factory=dict)  # records not indexed, by reason

    def plus(self, other: Counts) -> Counts:
        """Both counted together: each number summed, and each tally (statuses, errors,
        skipped) summed per key, in key order, a key that sums to 0 left out. Called once per
        record an import indexes, so it touches only what `other` adds."""
        mine, theirs = self.__dict__, other.__dict__
        values: dict[str, Any] = {name: mine[name] + theirs[name] for name in _NUMBERS}
        for name in _TALLIES:
            if added := theirs[name]:
                summed = dict(mine[name])
                for key, count in added.items():
                    summed[key] = summed.get(key, 0) + count
                values[name] = {key: n for key, n in sorted(summed.items()) if n}
        return self.model_copy(update=values)  # sums of valid counts: nothing to validate


_TALLIES = ("statuses", "errors", "skipped")
_NUMBERS = tuple(name for name in Counts.model_fields if name not in _TALLIES)


class Manifest(_Frozen):
    """Typed manifest.json. `fingerprint` = sha256 over `name sha256\\n` of the WARC files."""

    schema_version: int = SCHEMA_VERSION
    name: str
    complete: bool
    spec: dict[str, Any]
    software: dict[str, str]
    started_at: str
    ended_at: str
    warc_files: tuple[FileDigest, ...]
    cdxj: FileDigest
    counts: Counts
    fingerprint: str

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        """A snapshot's name names folders and files (its WARC files, serve-web's default
        state folder .drarena-webproxy/<name>): a manifest received from elsewhere saying
        `"../../x"` or an absolute path must not place them outside, so only a plain name
        passes (safe_file_name), wherever a manifest is read."""
        try:
            return safe_file_name(value, "snapshot name")
        except DrarenaError as exc:
            raise ValueError(shown(str(exc), 300)) from None

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def fingerprint(files: tuple[FileDigest, ...] | list[FileDigest]) -> str:
    digest = hashlib.sha256()
    for item in files:
        digest.update(f"{item.name} {item.sha256}\n".encode())
    return digest.hexdigest()


def load_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST_NAME
    missing = f"{path}: snapshot manifest is missing"
    raw = read_bounded(path, MAX_MANIFEST_BYTES, what="snapshot manifest", missing=missing)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DrarenaError(f"{path}: snapshot manifest is not readable JSON ({exc})") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        raise DrarenaError(f"{path}: field {shown(field)}: {shown(msg, 500)}") from None


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write atomically so an interrupted write never leaves half a manifest."""
    write_atomic(folder / MANIFEST_NAME, manifest.to_json())
