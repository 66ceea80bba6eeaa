"""Live-mode tournament control flow: wiring, header, capture, offline replay, preflight,
resume. Real parts except the model: a loopback website with a SearXNG-format search
endpoint, the real LiveWeb (fetch, capture, replay), live retriever, extractor and tree
walker; the Examiner and the agents' model are the scripted backend (control flow only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from arena_live_site import LiveSiteForTests, freeze, live_web_settings, scripted_models
from loopback_servers import free_port
from runconfig import scripted_options

from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.records import MatchRecord
from drarena.runs.execute import execute, replay
from drarena.web.warc.snapshot import Snapshot

NOW = datetime(2026, 11, 29, 15, 0, 0, tzinfo=UTC)


@pytest.fixture
def site() -> Iterator[LiveSiteForTests]:
    server = LiveSiteForTests().start()
    try:
        yield server
    finally:
        server.stop()


def config_data(
    tmp: Path, snapshot: Path, provider: dict[str, Any], trees: int = 1
) -> dict[str, Any]:
    role = {"model": "openai/scripted-for-tests", "sampling": {"max_tokens": 64}}
    return {
        "name": "live",
        "snapshot": str(snapshot),
        "index_root": str(tmp / "index"),
        "runs_root": str(tmp / "runs"),
        "seed": 1,
        "swiss_rounds": 1,
        "concurrency": 1,
        "trees": {"count": trees},
        "match": {"max_rounds": 1},
        "rating": {"resamples": 20},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "rag", "kind": "rag", "args": {"retriever": {"kind": "bm25"}, "k": 2}},
            {"name": "closed_book", "kind": "closed_book"},
        ],
        "live": {
            "provider": provider,
            "web": live_web_settings(),
            "capture_root": str(tmp / "captures"),
        },
    }


def searxng(site: LiveSiteForTests) -> dict[str, Any]:
    return {"kind": "searxng", "args": {"url": site.base, "max_pages": 1}}


def test_live_run_searches_reads_today_captures_and_replays_offline(
    site: LiveSiteForTests, tmp_path: Path
) -> None:
    snapshot = freeze(site, tmp_path / "frozen")
    for node in ("r", "c1", "c2", "c3", "c4"):  # the web today differs from the snapshot
        site.edit(node, f"EDITED TODAY: page {node} now says something else. " * 12)
    config = parse_config(config_data(tmp_path, snapshot, searxng(site)), "test").as_live()
    run = RunDir(tmp_path / "runs" / "live")
    backend = scripted_models()
    result = execute(
        config,
        run,
        scripted_options(backend, now=lambda: NOW),
    )
    assert result.model_calls > 0 and len(result.log) == 1

    header = run.header()
    assert header is not None and header.mode == "live"
    live = header.live
    assert live is not None
    assert live.provider.as_json() == searxng(site) and live.replayed is False
    [capture] = live.captures
    folder = Path(capture.path)
    assert folder == tmp_path / "captures" / "live-live-20261129T150000Z"
    assert capture.status == "finished"
    with Snapshot.open(folder) as snap:
        assert capture.fingerprint == snap.fingerprint
        urls = snap.urls()
    # the agents' search went to the provider and the Examiner's pages were read live,
    # all into the capture
    assert any("/search?" in u and "format=json" in u for u in urls)
    assert site.url("r") in urls and site.url("c1") in urls
    task_prompts = [
        r["messages"][0]["content"]
        for r in backend.requests
        if (r.get("response_format") or {}).get("json_schema", {}).get("name") == "task"
    ]
    assert task_prompts and all("EDITED TODAY" in p for p in task_prompts)
    [match] = [
        MatchRecord.from_json(line)
        for line in (run.path / "matches.jsonl").read_text().splitlines()
    ]
    rnd = match.rounds[0]
    assert not rnd.void_reason and rnd.judgment is not None
    rag = rnd.answer_a if match.a == "rag" else rnd.answer_b
    assert rag is not None
    searched = rag.trajectory.tool_events()[0]
    assert searched.name == "search" and searched.urls[:2] == (site.url("c1"), site.url("c2"))
    assert rag.check.checked is False  # live citations are counted, not checked

    # offline replay: the site is gone, no model is reachable; same bytes out
    site.stop()
    replayed, differ = replay(run, RunDir(tmp_path / "replay"))
    assert differ == [] and replayed.model_calls == 0
    again = RunDir(tmp_path / "replay").header()
    assert again is not None and again.live is not None and again.live.replayed is True
    assert again.live.captures[0].fingerprint == capture.fingerprint


def test_live_tree_expansion_crawls_into_the_capture(
    site: LiveSiteForTests, tmp_path: Path
) -> None:
    # the frozen tree holds the root and one child: width 2 needs a sibling it lacks
    snapshot = freeze(site, tmp_path / "frozen", keep={"r", "c1"})
    config = parse_config(config_data(tmp_path, snapshot, searxng(site)), "test").as_live()
    run = RunDir(tmp_path / "runs" / "live")
    backend = scripted_models()
    execute(
        config,
        run,
        scripted_options(backend, now=lambda: NOW),
    )
    [match] = run.finished().values()
    rnd = match.rounds[0]
    assert not rnd.void_reason, rnd.void_reason
    assert rnd.target_urls[0] == site.url("c1") and len(rnd.target_urls) == 2
    sibling = rnd.target_urls[1]
    assert sibling in {site.url(n) for n in ("c2", "c3", "c4")}  # found live under the root
    header = run.header()
    assert header is not None
    assert header.live is not None
    with Snapshot.open(Path(header.live.captures[0].path)) as snap:
        # c4 is neither a search hit nor in the frozen tree: only expansion fetched it
        assert {sibling, site.url("c4")} <= set(snap.urls())
    site.stop()
    _, differ = replay(run, RunDir(tmp_path / "replay"))  # expands the same, offline
    assert differ == []


def test_replay_of_a_live_run_without_its_capture_is_one_line(
    site: LiveSiteForTests, tmp_path: Path
) -> None:
    snapshot = freeze(site, tmp_path / "frozen")
    config = parse_config(config_data(tmp_path, snapshot, searxng(site)), "test").as_live()
    run = RunDir(tmp_path / "runs" / "live")
    execute(
        config,
        run,
        scripted_options(scripted_models(), now=lambda: NOW),
    )
    header = run.header()
    assert header is not None
    import shutil

    assert header.live is not None
    shutil.rmtree(header.live.captures[0].path)
    with pytest.raises(DrarenaError, match="capture snapshot missing or unfinished"):
        replay(run, RunDir(tmp_path / "replay"))


def test_interrupted_live_run_keeps_its_capture_and_resumes_into_a_new_one(
    site: LiveSiteForTests, tmp_path: Path
) -> None:
    snapshot = freeze(site, tmp_path / "frozen", ("t1", "t2"))
    config = parse_config(config_data(tmp_path, snapshot, searxng(site), trees=2), "test").as_live()
    run = RunDir(tmp_path / "runs" / "live")
    # match 1 takes 5 calls (task, two answers, two judgments): Ctrl-C inside match 2
    with pytest.raises(KeyboardInterrupt):
        execute(
            config,
            run,
            scripted_options(scripted_models(interrupt_at=7), now=lambda: NOW),
        )
    header = run.header()
    assert header is not None
    assert header.live is not None
    [first] = header.live.captures
    assert first.status == "finished" and first.fingerprint
    assert len(run.finished()) == 1

    later = datetime(2026, 11, 29, 15, 5, 0, tzinfo=UTC)
    execute(
        config,
        run,
        scripted_options(scripted_models(), now=lambda: later),
    )
    header = run.header()
    assert header is not None
    assert header.live is not None
    paths = [c.path for c in header.live.captures]
    assert paths == [first.path, str(tmp_path / "captures" / "live-live-20261129T150500Z")]
    assert all(c.status == "finished" for c in header.live.captures)
    assert len(run.finished()) == 2

    site.stop()
    replayed, differ = replay(run, RunDir(tmp_path / "replay"))
    assert differ == [] and replayed.model_calls == 0


def write_config(tmp: Path, data: dict[str, Any], offline: bool = True) -> Path:
    path = tmp / "live.yaml"
    path.write_text(yaml.safe_dump({**data, "offline": offline}))
    return path


def test_preflight_unreachable_provider_is_one_line_before_anything(
    site: LiveSiteForTests, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = freeze(site, tmp_path / "frozen")
    dead = {"kind": "searxng", "args": {"url": f"http://127.0.0.1:{free_port()}"}}
    path = write_config(tmp_path, config_data(tmp_path, snapshot, dead))
    assert main(["tournament", str(path), "--live", "--no-serve"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert (
        err.startswith(
            "drarena: error: live.provider: search provider searxng at http://127.0.0.1:"
        )
        and "unreachable" in err
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path / "captures").exists()


def test_preflight_missing_api_key_is_one_line(
    site: LiveSiteForTests,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = freeze(site, tmp_path / "frozen")
    monkeypatch.delenv("DRARENA_TEST_BRAVE_KEY", raising=False)
    brave = {"kind": "brave", "args": {"api_key_env": "DRARENA_TEST_BRAVE_KEY"}}
    path = write_config(tmp_path, config_data(tmp_path, snapshot, brave), offline=False)
    assert main(["tournament", str(path), "--no-serve"]) == 2  # offline: false, no --live
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "DRARENA_TEST_BRAVE_KEY is not set" in err
    assert not (tmp_path / "runs").exists()


def test_bad_live_settings_name_the_field(tmp_path: Path) -> None:
    data = config_data(tmp_path, tmp_path, {"kind": "searxng", "args": {}})
    data["live"]["bogus"] = 1
    with pytest.raises(DrarenaError, match=r"live\.bogus: Extra inputs are not permitted"):
        parse_config(data, "test")
    from drarena.runs.live import web_settings

    data["live"].pop("bogus")
    data["live"]["web"] = {"timeout_s": -1}
    config = parse_config(data, "test")
    assert config.live is not None
    with pytest.raises(DrarenaError, match=r"live\.web\.timeout_s: Input should be greater"):
        web_settings(config.live)


def test_live_demo_config_is_valid(repo_root: Path) -> None:
    from drarena.config.tournament import load_config
    from drarena.runs.live import web_settings
    from drarena.runs.session import check_components

    config = load_config(repo_root / "configs" / "live-demo.yaml")
    check_components(config)
    assert not config.offline and config.live is not None
    web_settings(config.live)
    assert json.dumps(config.live.provider.model_dump())  # serializable into the header


def test_header_lists_every_part_even_one_killed_before_closing(tmp_path: Path) -> None:
    from drarena.config.tournament import LiveSettings
    from drarena.runs.live import LiveSession, finish_block, header_block

    live = LiveSettings.model_validate({})
    killed = {"path": str(tmp_path / "a"), "fingerprint": None, "status": "in progress"}
    block = header_block(live, [killed], tmp_path / "b")
    assert [c["status"] for c in block["captures"]] == ["unfinished", "in progress"]
    done = finish_block(block, {"path": str(tmp_path / "b"), "fingerprint": "f"})
    assert [(c["path"], c["status"]) for c in done["captures"]] == [
        (str(tmp_path / "a"), "unfinished"),
        (str(tmp_path / "b"), "finished"),
    ]
    with pytest.raises(DrarenaError, match="a: capture snapshot missing or unfinished"):
        LiveSession(live, capture_to=None, replay_from=[tmp_path / "a"])
