"""fetch_once with connect_to: the connection goes to the mapped address, the URL stays."""

from __future__ import annotations

from aiohttp import web

from drarena.web.crawling.fetch import (
    FetchPolicy,
    HostGate,
    connect_target,
    fetch_once,
    make_session,
)
from drarena.web.warc.writer import Exchange


def test_connect_target_maps_only_the_named_origin() -> None:
    policy = FetchPolicy("t", 5.0, 1000, True, (("site.test:80", "127.0.0.1:9999"),))
    assert connect_target("http://site.test/a?b=1", policy) == (
        "http://127.0.0.1:9999/a?b=1",
        {"Host": "site.test"},
    )
    assert connect_target("http://other.test/a", policy) == ("http://other.test/a", {})
    assert connect_target("http://site.test:8080/a", policy) == ("http://site.test:8080/a", {})


async def test_fetch_connects_to_mirror_but_records_original_url() -> None:
    seen: list[str] = []

    async def page(request: web.Request) -> web.Response:
        seen.append(request.headers["Host"])
        return web.Response(text="<p>mirror</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/doc.html", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    policy = FetchPolicy(
        "drarena-test", 5.0, 1 << 20, True, (("site.test:8765", f"127.0.0.1:{port}"),)
    )
    try:
        async with make_session(policy, 4) as session:
            result = await fetch_once(
                session, "http://site.test:8765/doc.html", policy, HostGate(1, 0.0)
            )
    finally:
        await runner.cleanup()
    assert isinstance(result, Exchange), result
    assert result.url == "http://site.test:8765/doc.html"
    assert result.status == 200 and b"mirror" in result.entity
    assert seen == ["site.test:8765"]
