"""Retriever kind `live`: a live search provider for `search`, the live web for `open`.

Why behind the Retriever protocol: an agent researches the live web with the very tools it
uses on the frozen one. Hits keep the provider's order (rank 1 first; score 1/rank, so the
protocol's score-then-docid order is exactly that order, with no ties); a URL the provider
repeats keeps its first place. The docid of a live hit is its canonical URL, which `open`
accepts like any other URL. Every search answer and opened page goes through one `LiveWeb`,
so a tournament records them all into its capture and a replay answers the same.
`snapshot_dir` and `index_root` are accepted for the registry's signature and not used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.live.providers import DEFAULT_SEARXNG_URL, SearchProvider, build_provider
from drarena.live.web import LiveWeb, LiveWebSettings
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.base import check_k, parse_args, snippet
from drarena.search.docstore import (
    DEFAULT_PAGE_CHARS,
    MAX_PAGE_CHARS,
    PageText,
    clean_query,
    page_end,
)
from drarena.web.warc.urls import canonicalize_url


class LiveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(kind="searxng", args={"url": DEFAULT_SEARXNG_URL}),
        description="search provider {kind, args}: searxng or brave",
    )
    settings: LiveWebSettings = Field(
        default_factory=lambda: LiveWebSettings(),
        description="fetch settings of the private live web (ignored when one is passed)",
    )
    replay_from: Path | None = Field(
        None, description="answer from this capture snapshot instead of the network"
    )


class LiveRetriever:
    """Search through a provider, read pages from the live web (or its replay)."""

    def __init__(self, provider: SearchProvider, web: LiveWeb, *, owns_web: bool = False) -> None:
        self.provider = provider
        self.web = web
        self.name = "live"
        self._owns_web = owns_web
        web.record_provider(provider.spec())

    def spec(self) -> dict[str, Any]:
        return {"kind": "live", "args": {"provider": self.provider.spec()}}

    def search(self, query: str, k: int = 10) -> list[Hit]:
        text = clean_query(query)
        check_k(k)
        found: dict[str, tuple[str, str, str]] = {}
        for page in range(1, self.provider.max_pages + 1):
            request = self.provider.request(text, page, with_secrets=self.web.live)
            response = self.web.fetch_api(request.url, dict(request.headers), secret=request.secret)
            if response.status != 200:
                raise DrarenaError(self.provider.http_error(response.status))
            new = 0
            for result in self.provider.parse(response.body):
                try:
                    docid = canonicalize_url(result.url)
                except ValueError:
                    continue
                if docid not in found:
                    found[docid] = (result.url, result.title, result.snippet)
                    new += 1
            if len(found) >= k or new == 0:
                break
        return [
            Hit(
                docid=docid,
                url=url,
                title=title,
                snippet=snippet(text_),
                score=1.0 / rank,
                rank=rank,
            )
            for rank, (docid, (url, title, text_)) in enumerate(list(found.items())[:k], 1)
        ]

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        target = str(url_or_docid).strip()
        if not target.lower().startswith(("http://", "https://")):
            raise DrarenaError(
                f"live open needs a URL (a live hit's docid is its URL), got {target[:80]!r}"
            )
        if not 1 <= max_chars <= MAX_PAGE_CHARS:
            raise DrarenaError(f"max_chars {max_chars} outside 1..{MAX_PAGE_CHARS}")
        page = self.web.page(target)
        text = page.text
        total = len(text)
        if not 0 <= offset <= total:
            raise DrarenaError(f"offset {offset} outside page {page.url} (0..{total})")
        end = page_end(text, offset, max_chars)
        return PageText(
            page.url,
            page.url,
            page.title,
            text[offset:end],
            offset,
            end if end < total else None,
            total,
        )

    def close(self) -> None:
        """Close the private live web (a shared one is closed by its owner)."""
        if self._owns_web:
            self.web.close()


def build(
    snapshot_dir: Path, index_root: Path, *, web: LiveWeb | None = None, **args: Any
) -> LiveRetriever:
    """Without `web`: a private live web that records nothing (or replays `replay_from`)."""
    parsed = parse_args(LiveArgs, args, "live")
    provider = build_provider(parsed.provider)
    if web is not None:
        return LiveRetriever(provider, web)
    private = LiveWeb(parsed.settings, replay_from=parsed.replay_from)
    return LiveRetriever(provider, private, owns_web=True)
