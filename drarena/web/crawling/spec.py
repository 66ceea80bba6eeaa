"""Crawl specs (corpus/<name>.yaml): what to freeze, how politely, within which budgets.

Why a typed model: a typo in a spec (`max_page: 300`) must fail loudly before a crawl starts,
not silently crawl with defaults. Unknown keys are rejected and every error names the file and
the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from drarena.errors import DrarenaError, one_line
from drarena.files import read_bounded
from drarena.web.warc.urls import ALLOWED_SCHEMES, canonicalize_url, url_host_port
from drarena.web.warc.warcfile import MAX_BODY_BYTES
from drarena.yamlfile import load_yaml_mapping

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
# Debian policy 5.6.1: lower case letters, digits, + - . ; at least two characters, starting
# with a letter or digit. No version (=1.0), path (./x.deb) or option (-o...) gets through.
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")  # matched whole (fullmatch)
MAX_DELAY_S = 60.0  # per_host_delay_s: a politer crawl than one page a minute is a stopped one
MAX_TIMEOUT_S = 600.0  # timeout_s: ten minutes for one response is already a hang


def check_debian_package(name: str) -> str:
    """`name` if it is a Debian binary package name (as apt-get takes it after `--`)."""
    if len(name) > 128 or not DEBIAN_PACKAGE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a Debian package name (lower-case letters, digits, "
            "'+', '-', '.'; no version, path or option)"
        )
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Strict):
    """Which URLs the crawl may follow. Empty `hosts` means the seeds' hosts."""

    hosts: tuple[str, ...] = Field(
        default=(), description="allowed `host` or `host:port`; a bare host matches any port"
    )
    prefixes: tuple[str, ...] = Field(
        default=(), description="if set, a URL must start with one of these (canonical form)"
    )
    include: tuple[str, ...] = Field(
        default=(), description="if set, a URL must match one of these regexes (re.search)"
    )
    exclude: tuple[str, ...] = Field(
        default=(), description="a URL matching any of these regexes is skipped"
    )

    @field_validator("include", "exclude")
    @classmethod
    def _regexes_compile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"bad regex {pattern!r}: {exc}") from None
        return value

    @field_validator("prefixes")
    @classmethod
    def _canonical_prefixes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_http_url(p) for p in value)

    @field_validator("hosts")
    @classmethod
    def _lower_hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.strip().lower() for h in value)


class LocalSite(_Strict):
    """A folder served on loopback during the crawl (`make snapshot` on a fresh machine)."""

    root: Path = Field(description="folder to serve")
    host: str = Field(default="127.0.0.1", description="loopback address to bind")
    port: int = Field(default=8765, ge=1, le=65535, description="port the seeds point at")
    apt_package: str | None = Field(
        default=None, description="Debian package that provides `root` (installed on request)"
    )

    @field_validator("apt_package")
    @classmethod
    def _package_name(cls, value: str | None) -> str | None:
        return None if value is None else check_debian_package(value)

    @field_validator("host")
    @classmethod
    def _loopback(cls, value: str) -> str:
        if value not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError("local_site.host must be a loopback address")
        return value


def _http_url(value: str) -> str:
    scheme = value.split(":", 1)[0].lower()
    if scheme not in ALLOWED_SCHEMES:
        raise ValueError(f"{value!r}: only http and https URLs are allowed")
    try:
        return canonicalize_url(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


class CrawlSpec(_Strict):
    """One crawl: seeds, scope and budgets. Defaults are polite for the open web."""

    name: Annotated[str, Field(pattern=NAME_PATTERN, description="snapshot name (folder/files)")]
    seeds: tuple[str, ...] = Field(min_length=1, description="start URLs (depth 0)")
    scope: Scope = Field(default_factory=Scope, description="which links to follow")
    max_pages: int = Field(default=300, ge=1, description="page fetches (redirect chains = 1)")
    max_depth: int = Field(default=3, ge=0, description="link hops from a seed")
    per_host_delay_s: float = Field(
        default=1.0,
        ge=0,
        le=MAX_DELAY_S,
        allow_inf_nan=False,
        description="pause between requests (at most 60 s)",
    )
    per_host_concurrency: int = Field(default=2, ge=1, le=64, description="parallel requests")
    concurrency: int = Field(default=16, ge=1, le=256, description="pages in flight overall")
    max_bytes: int = Field(
        default=5_000_000,
        ge=1024,
        le=MAX_BODY_BYTES,
        description="body cap per response, and where decoding stops (at most 64 MiB)",
    )
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="per-request total timeout (at most 600 s)",
    )
    robots: bool = Field(default=True, description="obey robots.txt")
    user_agent: str = Field(default="drarena/0.1 (frozen-web crawler)", min_length=1)
    allow_private_addresses: bool = Field(
        default=False, description="allow private/loopback/link-local hosts (tests, local sites)"
    )
    max_redirects: int = Field(default=5, ge=0, le=30, description="hops per redirect chain")
    local_site: LocalSite | None = Field(
        default=None, description="serve a local folder on loopback while crawling"
    )

    @field_validator("seeds")
    @classmethod
    def _seeds_http(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_http_url(s) for s in value)

    def allowed_hosts(self) -> tuple[str, ...]:
        return self.scope.hosts or tuple(sorted({url_host_port(s) for s in self.seeds}))


def _field_path(loc: tuple[object, ...]) -> str:
    # a key with a line break or control character is shown escaped: the error stays one line
    return ".".join(str(p) if str(p).isprintable() else repr(p) for p in loc) or "(top level)"


def parse_spec(data: object, source: str) -> CrawlSpec:
    """Validate a mapping; the first error becomes one line naming the source and field."""
    if not isinstance(data, dict):
        raise DrarenaError(f"{source}: a crawl spec must be a mapping of fields")
    try:
        return CrawlSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = _field_path(tuple(err.get("loc", ())))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown key"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise DrarenaError(f"{source}: field {field}: {msg}{more}") from None


MAX_SEEDS_FILE_BYTES = 64 << 20  # a seeds file: about a million URLs
MAX_SEED_CHARS = 8192  # one URL; longer ones are refused by servers anyway


def read_seeds_file(path: Path) -> list[str]:
    """The start URLs of a seeds file: one per line, blank lines and `#` comments skipped,
    each checked and canonicalized like `seeds`. Read bounded (MAX_SEEDS_FILE_BYTES, a line
    MAX_SEED_CHARS); the first bad line is one error naming the file and line."""
    data = read_bounded(path, MAX_SEEDS_FILE_BYTES, "split the crawl")
    seeds: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise DrarenaError(f"{path}:{number}: not UTF-8") from None
        if not line or line.startswith("#"):
            continue
        if len(line) > MAX_SEED_CHARS:
            raise DrarenaError(f"{path}:{number}: a URL over {MAX_SEED_CHARS} characters")
        try:
            seeds.append(_http_url(line))
        except ValueError as exc:
            raise DrarenaError(f"{path}:{number}: {one_line(exc)}") from None
    return seeds


def load_spec(path: str | Path) -> CrawlSpec:
    """Read and validate corpus/<name>.yaml. Its `seeds_file` (relative to the spec's folder)
    adds the URLs of a text file to `seeds`: a YAML spec is capped at 100,000 values, and a
    long seed list reads better as a file. The spec as crawled (and recorded in the
    snapshot's manifest) holds the seeds themselves."""
    data = load_yaml_mapping(path, "crawl spec")
    if "seeds_file" in data:
        name = data.pop("seeds_file")
        if not isinstance(name, str) or not name or "\0" in name:
            raise DrarenaError(f"{path}: field seeds_file: must be a file name")
        seeds = data.get("seeds", [])
        if not isinstance(seeds, list):
            raise DrarenaError(f"{path}: field seeds: must be a list of URLs")
        data["seeds"] = [*seeds, *read_seeds_file(Path(path).parent / name)]
    return parse_spec(data, str(path))
