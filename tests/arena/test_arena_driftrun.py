"""`drarena drift-run`: the comparison math on hand-checked examples (pure), and the whole
command on a loopback website whose pages changed since the frozen run (real LiveWeb,
capture and replay; the model is the scripted backend: control flow only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from arena_live_site import LiveSiteForTests, freeze, live_web_settings, scripted_models
from runconfig import scripted_config, scripted_options
from test_arena_live import NOW, config_data

from drarena.config.tournament import parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.runs.driftcompare import Change, agent_moves, change, rank_correlation
from drarena.runs.driftrun import REPORT_JSON, DriftOptions, drift_run
from drarena.runs.execute import execute


@pytest.mark.parametrize(
    ("frozen", "live", "expected"),
    [
        ("a", "a", Change.SAME),
        ("tie", "tie", Change.SAME),
        ("a", "b", Change.FLIPPED),
        ("b", "a", Change.FLIPPED),
        ("tie", "b", Change.TIE_TO_WIN),
        ("a", "tie", Change.WIN_TO_TIE),
        (None, "a", Change.VOID),
        ("b", None, Change.VOID),
    ],
)
def test_round_change_table(frozen: str | None, live: str | None, expected: Change) -> None:
    assert change(frozen, live) == expected


def test_rank_correlation_hand_checked() -> None:
    frozen = {"a": 1600.0, "b": 1550.0, "c": 1500.0, "d": 1450.0}
    live = {"a": 1550.0, "b": 1600.0, "c": 1500.0, "d": 1450.0}  # a and b swap
    # rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 2 / 60 = 0.8
    # tau = (concordant - discordant) / pairs = (5 - 1) / 6
    assert rank_correlation(frozen, live) == (0.8, round(4 / 6, 6))
    reverse = {k: -v for k, v in frozen.items()}
    assert rank_correlation(frozen, reverse) == (-1.0, -1.0)
    flat = dict.fromkeys(frozen, 1500.0)  # undefined, not a made-up number
    assert rank_correlation(frozen, flat) == (None, None)
    assert rank_correlation({"a": 1.0}, {"a": 2.0}) == (None, None)


def row(agent: str, rank: int, rating: float) -> LeaderboardRow:
    return LeaderboardRow(
        rank, agent, rating, rating - 50, rating + 50, 3, 1, 1, 1, 0, 1.0, 1, {}, 3, 0, 0, 0, 10.0
    )


def test_agent_moves_positions_ranks_and_ratings() -> None:
    frozen = [row("a", 1, 1600.0), row("b", 1, 1550.0), row("c", 3, 1400.0)]
    live = [row("c", 1, 1620.0), row("a", 2, 1500.0), row("b", 2, 1480.0)]
    moves = {m.agent: m for m in agent_moves(frozen, live)}
    assert (moves["c"].frozen_position, moves["c"].live_position, moves["c"].position_delta) == (
        3,
        1,
        2,
    )
    assert (moves["c"].rank_delta, moves["c"].rating_delta) == (2, 220.0)
    assert (moves["a"].position_delta, moves["a"].rank_delta, moves["a"].rating_delta) == (
        -1,
        -1,
        -100.0,
    )
    assert (moves["b"].position_delta, moves["b"].rank_delta) == (-1, -1)


@pytest.fixture
def site() -> Iterator[LiveSiteForTests]:
    server = LiveSiteForTests().start()
    try:
        yield server
    finally:
        server.stop()


# the oracle's answer is strong when built on the pages as frozen, weak on the edited ones;
# closed_book sees no pages and stays in between
STRENGTH = {"EDITED": 1, "fact number": 3}


def test_drift_run_flips_when_the_pages_changed_and_replays(
    site: LiveSiteForTests, tmp_path: Path
) -> None:
    snapshot = freeze(site, tmp_path / "frozen")
    config = parse_config(scripted_config(tmp_path, snapshot, "frozen"), "test")
    run = RunDir(tmp_path / "runs" / "frozen")
    frozen = execute(
        config,
        run,
        scripted_options(scripted_models(STRENGTH)),
    )
    [match] = frozen.log
    assert match.score.points_a != match.score.points_b  # decided on the frozen web

    for node in ("c1", "c2", "c3", "c4"):
        site.edit(node, f"EDITED: page {node} was rewritten since the snapshot. " * 12)
    out = tmp_path / "drift"
    with pytest.raises(DrarenaError, match="no finished drift-run to replay"):
        drift_run(run.path, out, DriftOptions(replay=True))
    provider = {"kind": "searxng", "args": {"url": site.base}}
    result = drift_run(
        run.path,
        out,
        DriftOptions(
            provider=provider,
            web=live_web_settings(),
            serve=False,
            now=lambda: NOW,
            backend=scripted_models(STRENGTH),
        ),
    )
    report = result.report
    assert report.summary.rounds == report.summary.compared == 1
    assert report.summary.counts["flipped"] == 1 and report.summary.agreement == 0.0
    assert [m.change for m in report.matches] == [Change.FLIPPED]
    assert (report.summary.spearman, report.summary.kendall) == (-1.0, -1.0)
    assert report.summary.moved == ("closed_book", "oracle")
    assert report.rounds[0].question == match.rounds[0].task.task.question  # type: ignore
    saved = json.loads((out / REPORT_JSON).read_text())
    assert saved["schema_version"] == 1 and saved["summary"]["counts"]["flipped"] == 1
    assert "| oracle |" in (out / "drift-run.md").read_text()
    header = json.loads((out / "drift-run-header.json").read_text())
    [capture] = header["live"]["captures"]
    assert capture["fingerprint"] and Path(capture["path"]).parent == out
    assert header["model_calls"] == result.model_calls > 0

    with pytest.raises(DrarenaError, match="exists: replay it with --replay"):
        drift_run(
            run.path, out, DriftOptions(provider=provider, web=live_web_settings(), serve=False)
        )

    site.stop()  # the replay needs neither the web nor a model
    again = drift_run(run.path, out, DriftOptions(replay=True, serve=False))
    assert again.identical is True and again.model_calls == 0


def test_a_drift_run_header_over_the_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay reads drift-run-header.json from --out (maybe shared or damaged): it was
    decoded whole, however large; now one over MAX_HEADER_BYTES is one line naming it."""
    import drarena.runs.driftrun as driftrun

    header = tmp_path / driftrun.HEADER
    header.write_text('{"live_settings": {}, "padding": "' + "x" * 100 + '"}', encoding="utf-8")
    assert driftrun._read_json(header) is not None
    monkeypatch.setattr(driftrun, "MAX_HEADER_BYTES", 64)
    with pytest.raises(DrarenaError, match=r"drift-run-header\.json: larger than 64 bytes") as err:
        driftrun._read_json(header)
    assert "\n" not in str(err.value)
    assert driftrun._read_json(tmp_path / "absent.json") is None  # as before: no drift-run


def test_drift_run_refuses_what_it_cannot_compare(site: LiveSiteForTests, tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match=r"no run\.json"):
        drift_run(tmp_path, tmp_path / "out", DriftOptions())
    snapshot = freeze(site, tmp_path / "frozen")
    data = config_data(tmp_path, snapshot, {"kind": "searxng", "args": {"url": site.base}})
    live_run = RunDir(tmp_path / "runs" / "live")
    execute(
        parse_config(data, "test").as_live(),
        live_run,
        scripted_options(scripted_models()),
    )
    with pytest.raises(DrarenaError, match="a live run; drift-run compares a frozen run"):
        drift_run(live_run.path, tmp_path / "out", DriftOptions(serve=False))


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("[]", "list indices must be integers"),
        ("{}", "no 'live_settings'"),
        ('{"live_settings": {"bogus": 1}}', "bogus: Extra inputs are not permitted"),
        ('{"live_settings": {}}', "no 'live'"),
        ('{"live_settings": {}, "live": {"captures": {}}}', "live.captures is not a list"),
        ('{"live_settings": {}, "live": {"captures": [{"path": 3}]}}', "live.captures is not"),
        ('{"live_settings": {}, "live": {"captures": []}}', "no 'bound_roles'"),
        ('{"live_settings": {}, "live": {"captures": []}, "bound_roles": 5}', "bound_roles is"),
    ],
)
def test_a_damaged_drift_run_header_is_one_line_on_replay(
    header: str, why: str, tmp_path: Path
) -> None:
    """Regression: a replay read the header's live_settings, live.captures and bound_roles
    unchecked, so a header edited by hand or cut short was a KeyError, TypeError or pydantic
    ValidationError traceback."""
    import drarena.runs.driftrun as driftrun

    (tmp_path / driftrun.HEADER).write_text(header, encoding="utf-8")
    (tmp_path / REPORT_JSON).write_text("{}", encoding="utf-8")
    with pytest.raises(DrarenaError, match=r"drift-run-header\.json: damaged \(") as err:
        driftrun._saved_or_new(tmp_path, True, None, None, None)  # type: ignore[arg-type]
    assert why in str(err.value) and "\n" not in str(err.value)
    good = '{"live_settings": {}, "live": {"captures": []}, "bound_roles": null}'
    (tmp_path / driftrun.HEADER).write_text(good, encoding="utf-8")
    saved, live = driftrun._saved_or_new(tmp_path, True, None, None, None)  # type: ignore[arg-type]
    assert saved is not None and live.capture_root == Path("snapshots")
