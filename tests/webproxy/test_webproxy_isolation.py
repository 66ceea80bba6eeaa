"""Proof of isolation: an unmodified command agent in a frozen run reaches nothing but the
frozen web. Inside its network namespace a public address fails at once, a name lookup
fails, and the only way out is the proxy: a URL not in the snapshot gets the marked 404 page,
a search through the emulated SearXNG API is answered from the snapshot's BM25 index, a page
it found is served as captured; the round's trajectory lists every request and counts zero
outside connections. The agent is a small Python script using only the standard library and
the environment drarena gives it (HTTPS_PROXY, SSL_CERT_FILE, DRARENA_SEARXNG_URL)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from webproxy_helpers import mitmdump_missing

from drarena.agents import sandbox
from drarena.agents.base import Conversation
from drarena.agents.citations import SnapshotUrlChecker
from drarena.agents.external import build_command
from drarena.agents.registry import AgentContext
from drarena.models.guard import NetworkGuard

NETNS = sandbox.probe()
MISSING = mitmdump_missing()
pytestmark = [
    pytest.mark.skipif(not NETNS.available, reason=f"no network namespace here: {NETNS.reason}"),
    pytest.mark.skipif(bool(MISSING), reason=f"no mitmproxy here: {MISSING}"),
]

AGENT = r"""
import errno, json, os, socket, sys, urllib.error, urllib.parse, urllib.request
request = json.load(sys.stdin)
out = {"netns": os.readlink("/proc/self/ns/net")}
s = socket.socket()
s.settimeout(20)
try:
    s.connect(("192.0.2.1", 80))  # TEST-NET-1, directly
    out["public"] = "connected"
except OSError as exc:
    out["public"] = errno.errorcode.get(exc.errno, str(exc))
try:
    socket.getaddrinfo("www.python.org", 443)
    out["dns"] = "resolved"
except OSError:
    out["dns"] = "failed"
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
status, headers, body = get("https://www.python.org/not-in-the-snapshot")
out["missing"] = [status, headers.get("X-Drarena-Not-In-Snapshot"), b"Not in the snapshot" in body]
query = urllib.parse.urlencode({"q": "asyncio event loop", "format": "json"})
status, _, body = get(os.environ["DRARENA_SEARXNG_URL"] + "/search?" + query)
results = json.loads(body)["results"]
out["search"] = [status, len(results)]
first = results[0]["url"]
status, _, body = get(first)
out["page"] = [status, first, len(body)]
ca = ("CERT_FILE", "CA_BUNDLE", "CA_CERTS")
out["env"] = sorted(k for k in os.environ if "PROXY" in k.upper() or k.endswith(ca))
print(json.dumps({"report": "Read it [1].\n\n" + json.dumps(out), "citations": [first]}))
"""


async def test_command_agent_reaches_only_the_frozen_web(
    pydocs_indexed: tuple[Path, Path],
) -> None:
    snapshot, index_root = pydocs_indexed
    checker = SnapshotUrlChecker(snapshot)
    context = AgentContext(snapshot_dir=snapshot, index_root=index_root, url_checker=checker)
    agent = build_command(context=context, name="probe", command=[sys.executable, "-c", AGENT])
    try:
        with NetworkGuard():
            answer = await agent.answer(Conversation("what is asyncio?"), (1, 400))
    finally:
        checker.close()
    assert answer.error is None, answer.error
    seen = json.loads(answer.report.split("\n\n", 1)[1])
    assert seen["netns"] != os.readlink("/proc/self/ns/net")
    assert seen["public"] == "ENETUNREACH"  # directly: no route at all
    assert seen["dns"] == "failed"  # through DNS: no resolver reachable
    assert seen["missing"] == [404, "1", True]  # through the proxy: the marked 404 page
    assert seen["search"][0] == 200 and seen["search"][1] > 0
    status, first, size = seen["page"]
    assert status == 200 and size > 0
    assert {"HTTPS_PROXY", "https_proxy", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"} <= set(seen["env"])

    # the trajectory: every request the agent made, and zero outside connections
    web = [t for t in answer.trajectory.tool_events() if t.name.startswith("web_")]
    fetched = [(t.name, json.loads(t.arguments).get("url"), t.error) for t in web]
    assert ("web_fetch", "https://www.python.org/not-in-the-snapshot", "not in snapshot") in fetched
    assert ("web_fetch", first, None) in fetched
    searches = [t for t in web if t.name == "web_search"]
    assert [json.loads(t.arguments)["query"] for t in searches] == ["asyncio event loop"]
    assert first in searches[0].urls
    note = next(s.note for s in answer.trajectory.steps if s.note.startswith("frozen web proxy"))
    assert "outside connections 0" in note
    assert "0 cited URL(s) never fetched" in note
    assert [c.url for c in answer.citations] == [first] and answer.check.valid == 1
