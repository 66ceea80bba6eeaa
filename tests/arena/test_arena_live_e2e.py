"""Live mode end to end on the real parts: the CPU vLLM server, `drarena serve-search` as
the SearXNG-format provider, and the committed snapshot served by `drarena replay-snapshot`
as "the live web" (its own URLs, reached through connect_to). One live match through the
CLI records a capture snapshot; with both servers stopped, `drarena replay` re-executes the
run from the model cache and the capture: zero model calls, identical answers and verdicts.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from loopback_servers import replay_snapshot, serve_search, stop

from drarena.cli import main
from drarena.ledger.records import MatchRecord
from drarena.models.serve import ServerHandle
from drarena.web.warc.snapshot import Snapshot

pytestmark = [pytest.mark.model, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
ORIGIN = "127.0.0.1:8765"  # the committed snapshot's origin


@pytest.fixture
def servers(
    pydocs_indexed: tuple[Path, Path], tmp_path: Path
) -> Iterator[tuple[str, int, list[subprocess.Popen[str]]]]:
    """(SearXNG-format search URL, replay port, the two processes)."""
    snapshot, index_root = pydocs_indexed
    with (
        serve_search(snapshot, index_root, tmp_path / "serve-search.log") as (url, search),
        replay_snapshot(REPO / "snapshots" / "pydocs", f"http://{ORIGIN}") as (port, pages),
    ):
        yield url, port, [search, pages]


def test_live_match_captures_and_replays_offline(
    pydocs_indexed: tuple[Path, Path],
    servers: tuple[str, int, list[subprocess.Popen[str]]],
    model_server: ServerHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    snapshot, index_root = pydocs_indexed
    search_url, replay_port, procs = servers
    monkeypatch.setenv("DRARENA_MODEL_API_BASE", model_server.api_base)
    role = {"model": "served", "timeout_s": 900, "sampling": {"max_tokens": 256}}
    config = {
        "name": "live-e2e",
        "snapshot": str(snapshot),
        "index_root": str(index_root),
        "runs_root": str(tmp_path),
        "seed": 1,
        "swiss_rounds": 1,
        "concurrency": 1,
        "trees": {"count": 1},
        # SmolLM2's checklist items are never supported by their pages, so a grounded task
        # never comes and no agent would search: this test is about live capture, not grounding
        "match": {
            "max_rounds": 1,
            "page_budget_chars": 3000,
            "taskgen": {"kind": "llm", "args": {"ground": False}},
        },
        "rating": {"resamples": 100},
        "models": {"retry": {"max_attempts": 2}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {
                "name": "rag",
                "kind": "rag",
                "args": {"retriever": {"kind": "bm25"}, "k": 2, "context_chars": 1500},
            },
            {"name": "closed_book", "kind": "closed_book"},
        ],
        "live": {
            "provider": {"kind": "searxng", "args": {"url": search_url, "max_pages": 1}},
            "web": {
                "connect_to": {ORIGIN: f"127.0.0.1:{replay_port}"},
                "allow_private_addresses": True,
                "per_host_delay_s": 0.0,
            },
            "capture_root": str(tmp_path / "captures"),
        },
    }
    path = tmp_path / "live.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    # the Examiner pre-check (14 more judge calls on the CPU model) is left to tests/validity
    assert main(["tournament", str(path), "--live", "--no-examiner-check"]) == 0
    live_s = time.perf_counter() - started
    out = capsys.readouterr().out
    run = tmp_path / "live-e2e"
    header = json.loads((run / "run.json").read_text())
    assert header["mode"] == "live" and "mode: live, provider searxng" in out
    [capture] = header["live"]["captures"]
    folder = Path(capture["path"])
    assert folder.parent == tmp_path / "captures" and folder.name.startswith("live-e2e-live-")
    with Snapshot.open(folder) as snap:
        assert capture["fingerprint"] == snap.fingerprint and snap.verify().ok
        urls = snap.urls()
    assert f"capture: {folder} ({capture['fingerprint']})" in out
    assert any(u.startswith(search_url + "/search?") for u in urls)
    assert any(u.startswith(f"http://{ORIGIN}/") for u in urls)
    [match] = [
        MatchRecord.from_json(line) for line in (run / "matches.jsonl").read_text().splitlines()
    ]
    [rnd] = match.rounds
    if not rnd.void_reason:  # the CPU model may fail to write a task: then the round says so
        rag = rnd.answer_a if match.a == "rag" else rnd.answer_b
        assert rag is not None
        searched = rag.trajectory.tool_events()[0]
        assert searched.urls and all(u.startswith(f"http://{ORIGIN}/") for u in searched.urls)
    calls = header["model_calls"]
    size = sum(p.stat().st_size for p in folder.iterdir())
    with capsys.disabled():
        print(
            f"\nlive match: {live_s:.0f} s, {calls} model calls, capture {len(urls)} URLs, "
            f"{size / 1024:.0f} KiB; {match.outcome.value}"
            + (f" (void: {rnd.void_reason[:200]})" if rnd.void_reason else "")
        )

    # offline: no search server, no page server, no model
    for p in procs:
        stop(p)
    monkeypatch.delenv("DRARENA_MODEL_API_BASE")
    started = time.perf_counter()
    assert main(["replay", str(run)]) == 0
    out = capsys.readouterr().out
    assert "with 0 model calls" in out and "identical" in out
    replayed = tmp_path / "live-e2e-replay"
    assert (replayed / "matches.jsonl").read_bytes() == (run / "matches.jsonl").read_bytes()
    assert json.loads((replayed / "run.json").read_text())["model_calls"] == 0
    with capsys.disabled():
        print(f"offline replay: {time.perf_counter() - started:.1f} s, 0 model calls")
