"""A small real website on loopback for live-mode control-flow tests, and a frozen snapshot
of it made with the real LiveWeb, extractor and tree records.

The site serves HTML pages in the arena_fakes tree layout (root r, children c1..c4, ...),
and at /search a search engine answering in SearXNG's `format=json` shape (the provider
client cannot tell it from a SearXNG instance). `edit(node, text)` changes a page's text:
"the web today" differs from the frozen copy. Only the model is scripted in these tests.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from arena_fakes import LAYOUT, checklist_size, examiner_step, judge_json

from drarena.models.backend import BackendReply
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.models.types import ToolCall

SEARCH_HITS = ("c1", "c2", "c3")


def page_text(node: str) -> str:
    return " ".join(
        f"Page {node} about topic {node}, fact number {i} of the {node} section." for i in range(14)
    )


class LiveSiteForTests:
    """The site, served by aiohttp on 127.0.0.1 from a background thread."""

    def __init__(self) -> None:
        self.edits: dict[str, str] = {}
        self.requests: list[str] = []
        self.base = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def url(self, node: str) -> str:
        return f"{self.base}/{node}.html"

    def edit(self, node: str, text: str) -> None:
        self.edits[node] = text

    def _html(self, node: str) -> str:
        kids = [k for k, p in LAYOUT.items() if p == node]
        links = "".join(f'<li><a href="/{k}.html">Section {k}</a></li>' for k in kids)
        text = self.edits.get(node, page_text(node))
        paras = "".join(f"<p>{s.strip()}.</p>" for s in text.split(".") if s.strip())
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Title {node}"
            f"</title></head><body><article><h1>Title {node}</h1>{paras}<ul>{links}</ul>"
            "</article></body></html>"
        )

    def _app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.requests.append(request.path_qs)
            path = request.path.strip("/")
            if path == "search":
                if request.query.get("format") != "json":
                    return web.Response(status=403, text="format not enabled")
                page = int(request.query.get("pageno", "1"))
                results = (
                    []
                    if page > 1
                    else [
                        {
                            "url": self.url(n),
                            "title": f"Title {n}",
                            "content": page_text(n)[:120],
                            "engine": "site",
                        }
                        for n in SEARCH_HITS
                    ]
                )
                return web.json_response(
                    {
                        "query": request.query.get("q", ""),
                        "number_of_results": len(results),
                        "results": results,
                    }
                )
            node = path.removesuffix(".html")
            if path.endswith(".html") and node in LAYOUT:
                return web.Response(text=self._html(node), content_type="text/html")
            return web.Response(status=404, text="not found")

        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handle)
        return app

    def start(self) -> LiveSiteForTests:
        self._thread.start()

        async def up() -> str:
            self._runner = web.AppRunner(self._app())
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            port = self._runner.addresses[0][1]
            return f"http://127.0.0.1:{port}"

        self.base = asyncio.run_coroutine_threadsafe(up(), self._loop).result(30)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def live_web_settings() -> dict[str, Any]:
    return {"allow_private_addresses": True, "per_host_delay_s": 0.0, "timeout_s": 10.0}


def frozen_site(folder: Path) -> Path:
    """A fresh loopback site frozen into `folder` by `freeze`, the site stopped again: the
    snapshot most run tests play on."""
    site = LiveSiteForTests().start()
    try:
        return freeze(site, folder)
    finally:
        site.stop()


def freeze(
    site: LiveSiteForTests,
    folder: Path,
    tree_ids: tuple[str, ...] = ("t1",),
    keep: set[str] | None = None,
) -> Path:
    """The site as it is now, captured with the real LiveWeb into a snapshot, extracted,
    and one hand-shaped tree per id over its pages (the arena_fakes layout; only the nodes
    in `keep` when given)."""
    from drarena.corpus.extract import extract_snapshot, load_docs
    from drarena.corpus.records import Tree, TreeEdge
    from drarena.corpus.trees import make_node, tree_to_json
    from drarena.live.web import LiveWeb, LiveWebSettings

    with LiveWeb(
        LiveWebSettings.model_validate(live_web_settings()), capture_dir=folder, name="site"
    ) as live:
        for node in LAYOUT:
            live.page(site.url(node))
    extract_snapshot(folder, workers=1, progress=False)
    docs = {d.url: d for d in load_docs(folder)}
    ids = {node: docs[site.url(node)].id for node in LAYOUT}
    depth = {
        node: 0 if p is None else sum(node.count(c) for c in "cgh") for node, p in LAYOUT.items()
    }
    layout = {n: p for n, p in LAYOUT.items() if keep is None or n in keep}
    nodes = tuple(
        make_node(docs[site.url(n)], depth[n], None if p is None else ids[p])
        for n, p in layout.items()
    )
    edges = tuple(
        TreeEdge(ids[p], ids[n], f"Section {n}", "ctx", "subtopic")
        for n, p in layout.items()
        if p is not None
    )
    trees_dir = folder / "trees"
    trees_dir.mkdir()
    entries = []
    for tree_id in tree_ids:
        (trees_dir / f"{tree_id}.json").write_text(
            tree_to_json(Tree(tree_id, ids["r"], nodes, edges)), encoding="utf-8"
        )
        entries.append({"id": tree_id, "file": f"{tree_id}.json"})
    (trees_dir / "index.json").write_text(json.dumps({"trees": entries}), encoding="utf-8")
    return folder


def scripted_models(
    strength: Mapping[str, int] | None = None, interrupt_at: int | None = None
) -> ScriptedBackendForTests:
    """Examiner as arena_fakes (tasks from the prompt; verdicts from `strength=N` in the
    answers, stronger wins MUCH_BETTER); agents answer with an `answer` call whose report
    says `strength=N`, N from `strength` by the first key found in the agent's prompt
    (default 2): e.g. {"EDITED": 1} makes answers built on edited pages weaker.
    `interrupt_at`: the n-th call raises KeyboardInterrupt (a user's Ctrl-C)."""
    tasks = examiner_step([])
    calls = [0]

    def step(request: Mapping[str, Any]) -> BackendReply:
        calls[0] += 1
        if interrupt_at is not None and calls[0] == interrupt_at:
            raise KeyboardInterrupt
        fmt = request.get("response_format")
        prompt = "\n".join(str(m.get("content") or "") for m in request["messages"])
        if fmt and fmt["json_schema"]["name"] == "task":
            return tasks(request)
        if fmt:
            return verdict(prompt, request)
        n = next((v for k, v in (strength or {}).items() if k in prompt), 2)
        args = json.dumps({"report": f"Report strength={n} from the pages.", "citations": []})
        return reply(tool_calls=(ToolCall(id="a1", name="answer", arguments=args),))

    return ScriptedBackendForTests([step] * 1000)


def verdict(prompt: str, request: Mapping[str, Any]) -> BackendReply:
    import re

    found = [re.search(rf"BEGIN ANSWER {side}>>>.*?strength=(\d+)", prompt, re.S) for side in "AB"]
    a, b = (int(m.group(1)) if m else 0 for m in found)
    v = "TIE" if a == b else ("A_MUCH_BETTER" if a > b else "B_MUCH_BETTER")
    n = checklist_size(prompt)
    return reply(
        judge_json(
            request,
            {
                "checklist_a": [a > b] * n,
                "checklist_b": [b > a] * n,
                "reasoning": "r",
                "tie_quality": "HIGH",
                "loser_failure_type": "DEPTH",
                "verdict": v,
            },
        )
    )
