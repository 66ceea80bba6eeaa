"""Which captures of an imported archive to keep: hosts, URL prefixes, MIME types, statuses.

Why a filter at import: a large archive (a Common Crawl segment, a site-wide Browsertrix crawl)
holds far more than a tournament needs; cutting it at import keeps the snapshot, its extraction
and its indexes small. Pure logic; the importer applies it record by record.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

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
        if self.prefixes and not any(url.startswith(p) or canonical.startswith(p)
                                     for p in self.prefixes):
            return False
        if self.mimes and not any(mime == m or (m.endswith("/*") and mime.startswith(m[:-1]))
                                  for m in self.mimes):
            return False
        code = f"{status:03d}"
        return not self.statuses or any(s == code or (s.endswith("xx") and code[0] == s[0])
                                        for s in self.statuses)

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
