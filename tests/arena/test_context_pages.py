"""What the evidence judge reads of a cited page (`RunContext.page_text`): the snapshot page
by its URL, a redirect alias, a non-canonical spelling, or the other scheme (the page the
proxy served for it and the citation check counts valid), and nothing for a page the
snapshot lacks."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from drarena.corpus.records import Doc
from drarena.models.config import ModelsConfig
from drarena.runs.context import RunContext
from drarena.runs.webmode import FrozenMode


def doc(url: str, contents: str, aliases: tuple[str, ...] = ()) -> Doc:
    return Doc(
        id=url,
        url=url,
        title="t",
        contents=contents,
        record_id="r",
        payload_digest="p",
        aliases=aliases,
    )


def context() -> RunContext:
    config: Any = SimpleNamespace(offline=True)
    client: Any = None  # page_text reads no model
    ctx = RunContext(
        config, ModelsConfig(roles={}), client, {}, FrozenMode(config), None, replaying=False
    )
    pages = [
        doc("http://127.0.0.1:8765/howto/curses.html", "curses page"),
        doc("https://secure.test/a", "secure page", aliases=("http://old.test/a",)),
    ]
    ctx.__dict__["pages"] = {p.id: p for p in pages}  # the cached property, as loaded
    return ctx


def test_a_cited_page_is_found_under_any_spelling_the_proxy_serves() -> None:
    ctx = context()
    assert ctx.page_text("http://127.0.0.1:8765/howto/curses.html") == "curses page"
    assert ctx.page_text("https://127.0.0.1:8765/howto/curses.html") == "curses page"
    assert ctx.page_text("HTTP://127.0.0.1:8765/howto/curses.html#intro") == "curses page"
    assert ctx.page_text("http://secure.test/a") == "secure page"
    assert ctx.page_text("https://old.test/a") == "secure page"  # an alias, other scheme


def test_a_page_the_snapshot_lacks_reads_as_none() -> None:
    ctx = context()
    assert ctx.page_text("https://127.0.0.1:8765/howto/made-up.html") is None
    assert ctx.page_text("http://[::1") is None
    assert ctx.page_text("doc-123") is None
