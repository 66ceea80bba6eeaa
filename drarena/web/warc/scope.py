"""What an imported archive's records give: the capture a record indexes (or why none), its
CDXJ line, the counts, and the scope filter (hosts, URL prefixes, MIME types, statuses).

Why a filter at import: a large archive (a Common Crawl segment, a site-wide Browsertrix crawl)
holds far more than a tournament needs; cutting it at import keeps the snapshot, its extraction
and its indexes small. Pure logic; the importer applies it record by record.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

from drarena.errors import DrarenaError
from drarena.web.warc.manifest import Counts
from drarena.web.warc.urls import surt
from drarena.web.warc.warcfile import RecordHead

_STATUS = re.compile(r"^[1-5](\d\d|xx)$")


class ImportScope(BaseModel):
    """Keep a capture when it matches every non-empty criterion (any value within one).

    hosts: a host name matches itself and its subdomains; `host:port` matches that port only.
    prefixes: the URL as captured, or its canonical form, starts with one of them.
    mimes: media type of the response (`text/html`), or a family (`text/*`).
    statuses: `200` or a class such as `2xx`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    hosts: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    mimes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()

    @field_validator("hosts", "mimes")
    @classmethod
    def _lower(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        out = tuple(v.strip().lower() for v in values)
        if any(not v or " " in v for v in out):
            raise ValueError("empty or blank value")
        return out

    @field_validator("prefixes")
    @classmethod
    def _url_prefix(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not value.lower().startswith(("http://", "https://")):
                raise ValueError(f"{value!r} is not an http(s) URL prefix")
        return values

    @field_validator("statuses")
    @classmethod
    def _status(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        out = tuple(v.strip().lower() for v in values)
        for value in out:
            if not _STATUS.match(value):
                raise ValueError(f"{value!r} is not a status code (200) or class (2xx)")
        return out

    @property
    def active(self) -> bool:
        return bool(self.hosts or self.prefixes or self.mimes or self.statuses)

    def allows(self, url: str, canonical: str, mime: str, status: int) -> bool:
        if self.hosts and not self._host_ok(url):
            return False
        if self.prefixes and not any(
            url.startswith(p) or canonical.startswith(p) for p in self.prefixes
        ):
            return False
        if self.mimes and not any(
            mime == m or (m.endswith("/*") and mime.startswith(m[:-1])) for m in self.mimes
        ):
            return False
        code = f"{status:03d}"
        return not self.statuses or any(
            s == code or (s.endswith("xx") and code[0] == s[0]) for s in self.statuses
        )

    def _host_ok(self, url: str) -> bool:
        try:
            parts = urlsplit(url)
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        for want in self.hosts:
            name, sep, want_port = want.rpartition(":") if want.count(":") == 1 else (want, "", "")
            if sep and (port is None or str(port) != want_port):
                continue
            if host == name or host.endswith("." + name):
                return True
        return False


# --- what a record gives -------------------------------------------------------------------


class Capture(NamedTuple):
    """An indexable record: what its CDXJ line says (a NamedTuple: built once per record)."""

    url: str
    key: str
    timestamp: str
    mime: str
    status: int
    digest: str
    revisit: bool
    truncated: bool
    block_length: int


_CONTENT_TYPE = re.compile(rb"\r\ncontent-type:[ \t]*([^\r\n;]*)", re.IGNORECASE)
_STATUS_LINE = re.compile(rb"HTTP/\d(?:\.\d)? +(\d{3})(?: |\r|$)")
_NOT_DIGIT = re.compile(r"\D")
_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f-\U0010ffff]*')  # JSON-safe as it is


def classify(head: RecordHead) -> Capture | str:
    """The capture a record gives, or why it gives none (the `skipped` key)."""
    kind = head.type
    if kind in ("warcinfo", "metadata", "request"):
        return kind
    if kind not in ("response", "revisit", "resource"):
        return f"type:{kind or 'none'}"
    url = head.header("WARC-Target-URI").strip().removeprefix("<").removesuffix(">")
    scheme = url.split(":", 1)[0].lower()
    if scheme == "dns":
        return "dns"
    if scheme not in ("http", "https"):
        return "non-http"
    try:
        key = surt(url)
    except (ValueError, DrarenaError):
        return "broken"
    if kind == "resource":
        status = 200
        mime = media_type(head.header("Content-Type"))
    else:
        # Only the status and the media type are needed: two regexes, not a header parse.
        line = _STATUS_LINE.match(head.http_head)
        if line is None:
            return "broken"
        status = int(line.group(1))
        found = _CONTENT_TYPE.search(head.http_head)
        mime = (
            "warc/revisit"
            if kind == "revisit"
            else (found.group(1).decode("latin-1").strip().lower() or "unk" if found else "unk")
        )
    digest = head.header("WARC-Payload-Digest") or head.entity_digest
    if not digest:
        return "revisit-unresolved"  # a revisit that names no payload cannot be resolved
    stamp = _NOT_DIGIT.sub("", head.header("WARC-Date"))[:14]
    return Capture(
        url,
        key,
        stamp,
        mime,
        status,
        digest,
        kind == "revisit",
        bool(head.header("WARC-Truncated")),
        head.block_length,
    )


def media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower() or "unk"


def cdxj_line(cap: Capture, filename: str, offset: int, length: int) -> str:
    """The line a drarena crawl writes for the same capture (writer.py's fields and order)."""
    if _PLAIN.fullmatch(cap.url + cap.mime + cap.digest + filename):  # nothing to escape
        return (
            f'{cap.key} {cap.timestamp} {{"url": "{cap.url}", "mime": "{cap.mime}", '
            f'"status": "{cap.status}", "digest": "{cap.digest}", "length": "{length}", '
            f'"offset": "{offset}", "filename": "{filename}"}}'
        )
    fields = {
        "url": cap.url,
        "mime": cap.mime,
        "status": str(cap.status),
        "digest": cap.digest,
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    }
    return f"{cap.key} {cap.timestamp} {json.dumps(fields, ensure_ascii=False)}"


def capture_counts(cap: Capture) -> Counts:
    """What one indexed capture adds to an import's counts (a revisit is a response too, and
    adds no bytes: its payload is another record's)."""
    return Counts(
        responses=1,
        revisits=int(cap.revisit),
        bytes=0 if cap.revisit else cap.block_length,
        statuses={str(cap.status): 1},
        pages=int(cap.status < 300),
        redirects=int(300 <= cap.status < 400),
        http_errors=int(cap.status >= 400),
        truncated=int(cap.truncated),
    )


def skipped(reason: str, count: int = 1) -> Counts:
    """Records not indexed, `count` of them, for `reason`."""
    return Counts(skipped={reason: count})
