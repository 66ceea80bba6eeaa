"""Live search providers: SearXNG (self-hosted, the default) and the Brave Search API.

Why pure providers: a provider only builds request URLs and parses answers; the request goes
through `LiveWeb.fetch_api`, so search answers land in the capture next to the pages and a
replay answers the same query from it. API keys come from the environment at request time
(a replay needs none), are sent as headers, and are never written to the WARC.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, field_validator

from drarena.errors import DrarenaError
from drarena.registry import ComponentSpec, Registry, RegistryError, parse_args

if TYPE_CHECKING:
    from drarena.live.web import LiveWeb

DEFAULT_SEARXNG_URL = "http://127.0.0.1:8888"
BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One provider request; `secret` names the headers whose values stay out of the WARC."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    secret: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class ProviderResult:
    """One result as the provider ranked it."""

    url: str
    title: str
    snippet: str


class SearchProvider(Protocol):
    name: str
    max_pages: int

    def spec(self) -> dict[str, Any]:
        """The resolved {kind, args}, without secrets, for run headers and capture specs."""
        ...

    def request(self, query: str, page: int, *, with_secrets: bool) -> ApiRequest:
        """The request for result page `page` (1-based)."""
        ...

    def parse(self, body: bytes) -> list[ProviderResult]:
        """Results of one answer, in the provider's order; a malformed answer is one line."""
        ...

    def http_error(self, status: int) -> str:
        """One line for a non-200 answer."""
        ...


def plain(text: object) -> str:
    """Provider text without markup (Brave highlights matches with <strong>)."""
    if not isinstance(text, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def _json_object(body: bytes, who: str, hint: str = "") -> dict[str, Any]:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise DrarenaError(f"{who}: the answer is not JSON{hint}") from None
    except RecursionError:  # '[[[[...' past the decoder's recursion limit
        raise DrarenaError(f"{who}: the answer is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise DrarenaError(f"{who}: the answer is a JSON {type(data).__name__}, not an object")
    return data


def _results(
    items: object, who: str, url_key: str, title_key: str, snippet_key: str
) -> list[ProviderResult]:
    if not isinstance(items, list):
        raise DrarenaError(f"{who}: `results` is not a list")
    from drarena.live.web import check_url

    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        url = item.get(url_key)
        if not isinstance(url, str):
            continue
        try:  # one result that is no URL live mode can open (`http://[::1/x`, `ftp:`, no
            check_url(url)  # host: `https:///x`) is skipped, not the whole answer
        except DrarenaError:
            continue
        out.append(ProviderResult(url, plain(item.get(title_key)), plain(item.get(snippet_key))))
    return out


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _http_url(value: str) -> str:
    """An endpoint live mode can fetch, refused here rather than at the first search: what
    check_url takes (http(s), a host, its IDNA, a port in range, no credentials, no control
    characters: urlsplit drops a tab or newline, the messages naming the endpoint kept it)."""
    from drarena.live.web import check_url

    if not value.isprintable():
        raise ValueError(f"{value!r} is not an http(s) URL (it holds control characters)")
    try:
        check_url(value)
    except DrarenaError as exc:
        raise ValueError(str(exc)) from None
    return value.rstrip("/")


# -- SearXNG -----------------------------------------------------------------------------------


class SearxngArgs(_Args):
    url: str = Field(default=DEFAULT_SEARXNG_URL, description="base URL of the SearXNG instance")
    engines: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    language: str = ""
    safesearch: Literal[0, 1, 2] | None = None
    max_pages: int = Field(
        default=3, ge=1, le=10, description="result pages fetched at most per search"
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value).removesuffix("/search")


@dataclass(frozen=True)
class SearxngProvider:
    """SearXNG's JSON API: GET /search?q=..&format=json&pageno=N (format json must be enabled
    in the instance's settings.yml, `search.formats`)."""

    args: SearxngArgs
    name: str = "searxng"

    @property
    def max_pages(self) -> int:
        return self.args.max_pages

    def spec(self) -> dict[str, Any]:
        return {"kind": "searxng", "args": self.args.model_dump(mode="json")}

    def request(self, query: str, page: int, *, with_secrets: bool) -> ApiRequest:
        params: list[tuple[str, str]] = [("q", query), ("format", "json"), ("pageno", str(page))]
        if self.args.engines:
            params.append(("engines", ",".join(self.args.engines)))
        if self.args.categories:
            params.append(("categories", ",".join(self.args.categories)))
        if self.args.language:
            params.append(("language", self.args.language))
        if self.args.safesearch is not None:
            params.append(("safesearch", str(self.args.safesearch)))
        return ApiRequest(
            f"{self.args.url}/search?{urlencode(params)}", (("Accept", "application/json"),)
        )

    def parse(self, body: bytes) -> list[ProviderResult]:
        who = f"searxng at {self.args.url}"
        data = _json_object(body, who, " (is `json` in search.formats of its settings.yml?)")
        return _results(data.get("results"), who, "url", "title", "content")

    def http_error(self, status: int) -> str:
        hint = " (is `json` in search.formats of its settings.yml?)" if status == 403 else ""
        return f"searxng at {self.args.url}: HTTP {status} for a search{hint}"


def searxng(**args: Any) -> SearxngProvider:
    return SearxngProvider(parse_args(SearxngArgs, args, "search provider searxng"))


# -- Brave Search API --------------------------------------------------------------------------


class BraveArgs(_Args):
    api_key_env: str = Field(
        default="BRAVE_API_KEY",
        min_length=1,
        description="environment variable holding the API key",
    )
    endpoint: str = BRAVE_ENDPOINT
    count: int = Field(
        default=20, ge=1, le=20, description="results per request (Brave's maximum 20)"
    )
    country: str = ""
    search_lang: str = ""
    safesearch: Literal["off", "moderate", "strict"] | None = None
    max_pages: int = Field(default=3, ge=1, le=10)

    @field_validator("endpoint")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value)


@dataclass(frozen=True)
class BraveProvider:
    """Brave Search web results: GET endpoint?q=..&count=..&offset=N with the key in the
    X-Subscription-Token header; results in web.results[] (url, title, description)."""

    args: BraveArgs
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    name: str = "brave"

    @property
    def max_pages(self) -> int:
        return self.args.max_pages

    def spec(self) -> dict[str, Any]:
        return {"kind": "brave", "args": self.args.model_dump(mode="json")}

    def missing_key(self) -> str | None:
        if self.environ.get(self.args.api_key_env, "").strip():
            return None
        return (
            f"search provider brave: environment variable {self.args.api_key_env} is not "
            "set (the Brave Search API key)"
        )

    def request(self, query: str, page: int, *, with_secrets: bool) -> ApiRequest:
        params: list[tuple[str, str]] = [
            ("q", query),
            ("count", str(self.args.count)),
            ("offset", str(page - 1)),
        ]
        for name in ("country", "search_lang", "safesearch"):
            value = getattr(self.args, name)
            if value:
                params.append((name, str(value)))
        headers: tuple[tuple[str, str], ...] = (("Accept", "application/json"),)
        if with_secrets:
            problem = self.missing_key()
            if problem:
                raise DrarenaError(problem)
            key = self.environ[self.args.api_key_env].strip()
            headers = (*headers, ("X-Subscription-Token", key))
        return ApiRequest(
            f"{self.args.endpoint}?{urlencode(params)}",
            headers,
            frozenset({"x-subscription-token"}),
        )

    def parse(self, body: bytes) -> list[ProviderResult]:
        who = f"brave at {self.args.endpoint}"
        data = _json_object(body, who)
        web = data.get("web") or {}
        if not isinstance(web, dict):
            raise DrarenaError(f"{who}: `web` is not an object")
        return _results(web.get("results", []), who, "url", "title", "description")

    def http_error(self, status: int) -> str:
        hint = {
            401: "the key was rejected",
            403: "the key was rejected",
            422: "the key or a parameter was rejected",
            429: "rate limit or quota exceeded",
        }.get(status, "")
        key = f" (key from {self.args.api_key_env})" if status in (401, 403, 422) else ""
        return f"brave at {self.args.endpoint}: HTTP {status}" + (f": {hint}{key}" if hint else "")


def brave(**args: Any) -> BraveProvider:
    return BraveProvider(parse_args(BraveArgs, args, "search provider brave"))


PROVIDERS: Registry[SearchProvider] = Registry("search provider", group="drarena.search_providers")
PROVIDERS.register("searxng", "drarena.live.providers:searxng")
PROVIDERS.register("brave", "drarena.live.providers:brave")


def build_provider(spec: ComponentSpec | Mapping[str, Any]) -> SearchProvider:
    """A provider from its {kind, args}; config errors as one line."""
    try:
        parsed = (
            spec if isinstance(spec, ComponentSpec) else ComponentSpec.model_validate(dict(spec))
        )
        return PROVIDERS.build(parsed)
    except RegistryError as exc:
        raise DrarenaError(str(exc)) from None
    except ValueError as exc:  # pydantic's ValidationError of the {kind, args} shape
        raise DrarenaError(f"search provider: {str(exc).splitlines()[0]}") from None


def preflight(spec: ComponentSpec | Mapping[str, Any], web: LiveWeb) -> str | None:
    """None when the provider answers a probe search; else one line (missing key,
    unreachable, HTTP error, not JSON). Nothing is recorded; replay mode needs no network."""
    try:
        provider = build_provider(spec)
    except DrarenaError as exc:
        return str(exc)
    if not web.live:
        return None
    try:
        request = provider.request("drarena preflight", 1, with_secrets=True)
    except DrarenaError as exc:
        return str(exc)
    probe = web.probe(request.url, dict(request.headers))
    if probe.error:
        base = request.url.split("?", 1)[0]
        return f"search provider {provider.name} at {base} is unreachable: {probe.error}"
    if probe.status != 200:
        return provider.http_error(probe.status)
    try:
        provider.parse(probe.body)
    except DrarenaError as exc:
        return str(exc)
    return None
