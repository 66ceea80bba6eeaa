"""An example live search provider: `jsonlines` asks an HTTP API that answers one JSON object
per line, `{"url": ..., "title": ..., "text": ...}`.

The provider contract (drarena.live.providers.SearchProvider): `spec()` for run headers (no
secrets), `request(query, page, with_secrets=...)` builds the HTTP request that drarena's live
web sends and records, `parse(body)` turns the answer into results (a malformed answer is one
line), `http_error(status)` explains a non-200 answer.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.live.providers import ApiRequest, ProviderResult
from drarena.registry import parse_args


class JsonLinesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="search endpoint; the query goes in ?q=, the page in &page=")
    max_pages: int = Field(1, ge=1, le=5)


class JsonLinesProvider:
    name = "jsonlines"

    def __init__(self, args: JsonLinesArgs) -> None:
        self.args = args
        self.max_pages = args.max_pages

    def spec(self) -> dict[str, Any]:
        return {"kind": "jsonlines", "args": self.args.model_dump(mode="json")}

    def request(self, query: str, page: int, *, with_secrets: bool) -> ApiRequest:
        return ApiRequest(f"{self.args.url}?{urlencode({'q': query, 'page': page})}")

    def parse(self, body: bytes) -> list[ProviderResult]:
        out = []
        for n, line in enumerate(body.decode("utf-8", "replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                out.append(
                    ProviderResult(
                        str(item["url"]), str(item.get("title", "")), str(item.get("text", ""))
                    )
                )
            except (ValueError, KeyError, TypeError):
                raise DrarenaError(
                    f"jsonlines at {self.args.url}: line {n} is not a result object"
                ) from None
        return out

    def http_error(self, status: int) -> str:
        return f"jsonlines at {self.args.url}: HTTP {status}"


def build(**args: Any) -> JsonLinesProvider:
    return JsonLinesProvider(parse_args(JsonLinesArgs, args, "search provider jsonlines"))
