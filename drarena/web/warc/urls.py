"""URL canonicalization, SURT keys and address checks shared by the crawler and the reader.

Why: the crawler deduplicates its frontier and the reader looks captures up by the same
canonical form, so `http://Host:80/a#x` and `http://host/a` are one page everywhere.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

from drarena.errors import DrarenaError

DEFAULT_PORTS = {"http": 80, "https": 443}
ALLOWED_SCHEMES = frozenset(DEFAULT_PORTS)

# RFC 3986 unreserved characters: percent-escapes of these are decoded; everything else that
# is not a delimiter is escaped, and escapes are upper-cased.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_PATH_SAFE = "/!$&'()*+,;=:@%"
_QUERY_SAFE = "/?!$&'()*+,;=:@%"
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _normalize_escapes(part: str, safe: str) -> str:
    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    fixed = _ESCAPE.sub(fix, part)
    # Escape anything outside the allowed set (spaces, non-ASCII), keeping existing escapes.
    return quote(fixed, safe=safe + _UNRESERVED)


def _host_port(parts: SplitResult) -> tuple[str, int | None]:
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad port in URL {parts.geturl()!r}") from exc
    host = (parts.hostname or "").rstrip(".")
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError as exc:
        raise ValueError(f"bad host in URL {parts.geturl()!r}") from exc
    return host.lower(), port


@functools.lru_cache(maxsize=1 << 16)
def canonicalize_url(url: str) -> str:
    """Canonical form: fragment dropped, scheme/host lower-cased, default port dropped,
    percent-encoding normalized, empty path -> '/'. Raises ValueError on an unparsable URL."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host, port = _host_port(parts)
    if scheme in DEFAULT_PORTS and port == DEFAULT_PORTS[scheme]:
        port = None
    netloc = f"[{host}]" if ":" in host else host
    if parts.username or parts.password:
        raise ValueError(f"URL with credentials is not allowed: {url!r}")
    if port is not None:
        netloc = f"{netloc}:{port}"
    path = _normalize_escapes(parts.path, _PATH_SAFE) or "/"
    query = _normalize_escapes(parts.query, _QUERY_SAFE)
    return urlunsplit((scheme, netloc, path, query, ""))


def other_scheme(url: str) -> str | None:
    """`url` under the other web scheme (https <-> http, a default port dropped), or None for
    one that is neither or cannot be parsed. Why: an agent often writes https:// for a page
    crawled over http:// (or the reverse); replay tools answer it, as drarena's proxy does,
    and the citation check and the judge read the same capture."""
    try:
        parts = urlsplit(url)
    except ValueError:  # `http://[::1`: no capture under either scheme
        return None
    swap = {"https": "http", "http": "https"}.get(parts.scheme.lower())
    if swap is None:
        return None
    netloc = parts.netloc
    default = {"http": ":80", "https": ":443"}[parts.scheme.lower()]
    if netloc.endswith(default):
        netloc = netloc[: -len(default)]
    return urlunsplit((swap, netloc, parts.path, parts.query, ""))


def url_host_port(url: str) -> str:
    """`host` or `host:port` (non-default port) of a canonical URL: the politeness key."""
    return urlsplit(url).netloc


def surt(url: str) -> str:
    """Sort-friendly SURT-style URL key for the snapshot's CDXJ: `org,python,docs)/path?query`.

    drarena's own key, close to but not pywb's: IP hosts stay as written (pywb reverses them)
    and trailing slashes stay; path and query are lower-cased and query arguments sorted. The
    WACZ export (wacz.py) re-keys lines to pywb's form, which is what replay tools look up."""
    canon = canonicalize_url(url)
    parts = urlsplit(canon)
    host, port = _host_port(parts)
    try:
        ipaddress.ip_address(host)
        key = host
    except ValueError:
        labels = host.split(".")
        if labels and labels[0] == "www":
            labels = labels[1:]
        key = ",".join(reversed(labels))
    if port is not None:
        key = f"{key}:{port}"
    path = parts.path.lower()
    query = "&".join(sorted(parts.query.lower().split("&"))) if parts.query else ""
    return f"{key}){path}" + (f"?{query}" if query else "")


def scheme_of(url: str) -> str | None:
    """The URL's scheme as written, or None for a string urlsplit refuses (a Location of
    `http://[oops/`): a server's bad redirect is that page's failure, never a crash."""
    try:
        return urlsplit(url).scheme
    except ValueError:
        return None


def is_public_address(address: str) -> bool:
    """False for private, loopback, link-local, reserved, multicast and unspecified addresses,
    and for any other not allocated for public networks (`is_global`: 100.64.0.0/10, the
    carrier-grade NAT range, where one cloud serves instance metadata at 100.100.100.200, is
    neither private nor global)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def safe_file_name(name: str, what: str = "file name") -> str:
    """A plain name that stays inside its folder (no separators, no '..', no hidden files)."""
    if not _SAFE_NAME.fullmatch(name) or ".." in name:  # ($ alone let "x\n" pass)
        raise DrarenaError(
            f"unsafe {what} {name[:130]!r}: only letters, digits, '.', '_', '-' allowed"
        )
    return name
