"""A judge panel (`match.judges`) in the match loop: every member judges every round, the
majority scores it and moves the walk, every member's judgment is in the record (which
round-trips), a member failing voids the round, and the config names a bad panel. Control
flow only: the scripted model backend and scripted agents (no real model)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, examiner_step, make_tree

from drarena.arena.match import MatchRunner, MatchSettings, match_seed
from drarena.config.tournament import parse_config
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner.panel import majority
from drarena.examiner.verdicts import Verdict
from drarena.ledger.records import MatchRecord
from drarena.models.backend import BackendReply
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.runs.session import check_components

PANEL = ("j1", "j2", "j3")


def panel_backend(verdicts: Mapping[str, str | None]) -> ScriptedBackendForTests:
    """Tasks as arena_fakes builds them (model openai/examiner); each judge role has its own
    model and gives the same verdict in the match's order every round (mapped to the shown
    order), or broken JSON for None (a judge failing for good)."""
    tasks = examiner_step([])

    def step(request: Mapping[str, Any]) -> BackendReply:
        if request["response_format"]["json_schema"]["name"] == "task":
            return tasks(request)
        verdict = verdicts[request["model"].split("/", 1)[1]]
        if verdict is None:
            return reply('{"verdict": [')
        prompt = request["messages"][0]["content"]
        found_n = re.search(r"CHECKLIST \((\d+) items", prompt)
        assert found_n is not None
        n = int(found_n.group(1))
        # the scripted agents' reports: "A report k" and "B report k"
        a_first = prompt.index("A report") < prompt.index("B report")
        shown = verdict if a_first else Verdict(verdict).swapped().value
        return reply(
            json.dumps(
                {
                    "checklist_a": [True] * n,
                    "checklist_b": [False] * n,
                    "reasoning": "r",
                    "tie_quality": "LOW" if verdict == "TIE" else "NA",
                    "loser_failure_type": "NONE" if verdict == "TIE" else "DEPTH",
                    "verdict": shown,
                }
            )
        )

    return ScriptedBackendForTests([step] * 400)


def runner(backend: ScriptedBackendForTests, **settings: Any) -> MatchRunner:
    tree, docs = make_tree()
    roles = {r: {"model": f"openai/{r}"} for r in ("examiner", *PANEL)}
    client = ModelClient(ModelsConfig(roles=roles), backend=backend)
    seed = match_seed(7, "A", "B", tree.id)
    return MatchRunner(
        "m1",
        1,
        "A",
        "B",
        ScriptedAgentForTests("A", "A report"),
        ScriptedAgentForTests("B", "B report"),
        TreeWalker(tree=tree, pages=docs, rng=random.Random(seed)),
        client,
        MatchSettings(**settings),
        seed,
    )


def judged_models(backend: ScriptedBackendForTests) -> list[str]:
    return [
        r["model"]
        for r in backend.requests
        if r["response_format"]["json_schema"]["name"] != "task"
    ]


async def test_the_panels_majority_scores_every_round() -> None:
    backend = panel_backend({"j1": "A_BETTER", "j2": "B_MUCH_BETTER", "j3": "A_BETTER"})
    record = await runner(backend, judges=PANEL, max_rounds=2, gap_to_stop=5).run()
    assert len(record.rounds) == 2
    for rd in record.rounds:
        assert not rd.void_reason and rd.judgment is not None
        panel = rd.judgment.panel
        assert panel is not None and tuple(m.role for m in panel) == PANEL
        assert rd.judgment.reconciled == majority([m.judgment.reconciled for m in panel])
        assert rd.judgment.reconciled.verdict == Verdict.A_BETTER
        assert all(len(m.judgment.orders()) == 2 for m in panel)  # the same options each
    assert (record.score.points_a, record.score.points_b) == (2, 0)  # A_BETTER twice
    # each member judged each round in both orders; the Examiner role judged nothing
    models = judged_models(backend)
    assert sorted(models) == sorted(f"openai/{j}" for j in PANEL for _ in range(4))
    assert MatchRecord.from_json(record.to_json()) == record


async def test_a_failing_member_voids_the_round() -> None:
    backend = panel_backend({"j1": "A_BETTER", "j2": None, "j3": "A_BETTER"})
    record = await runner(backend, judges=PANEL, max_rounds=1, max_void_rounds=0).run()
    rd = record.rounds[0]
    assert rd.judgment is None and rd.void_reason.startswith("judge failed: panel judge 'j2'")
    assert record.score.rounds_void == 1 and record.score.rounds_scored == 0
    models = judged_models(backend)
    assert models.count("openai/j1") == models.count("openai/j3") == 2  # ran to the end


async def test_without_a_panel_the_record_has_no_panel_key() -> None:
    backend = panel_backend({"examiner": "A_BETTER"})
    record = await runner(backend, max_rounds=1).run()
    assert set(judged_models(backend)) == {"openai/examiner"}  # judge_role, from the Examiner
    line = json.loads(record.to_json())
    assert "panel" not in line["rounds"][0]["judgment"]


def config(match: dict[str, Any], roles: tuple[str, ...] = PANEL) -> dict[str, Any]:
    return {
        "name": "t",
        "snapshot": "snapshots/pydocs",
        "models": {
            "roles": {
                "examiner": {"model": "served"},
                "agent": {"model": "served"},
                **{r: {"model": "served"} for r in roles},
            }
        },
        "agents": [{"name": "a", "kind": "oracle"}, {"name": "b", "kind": "oracle"}],
        "match": match,
    }


def test_a_panel_config_is_kept_as_written() -> None:
    parsed = parse_config(config({"judges": list(PANEL)}), "t.yaml")
    check_components(parsed)
    assert parsed.match.judges == PANEL
    assert parsed.model_dump(mode="json")["match"]["judges"] == list(PANEL)  # run.json
    assert parse_config(config({}), "t.yaml").match.judges is None
    # the derived judge role counts as a role
    check_components(parse_config(config({"judges": ["judge", "j1"]}), "t.yaml"))


@pytest.mark.parametrize(
    ("judges", "message"),
    [
        (["j1"], "t.yaml: match.judges: Value error, a judge panel needs at least 2"),
        (["j1", "j2", "j1"], "t.yaml: match.judges: Value error, judge roles must be distinct"),
        ("j1", "t.yaml: match.judges"),
    ],
)
def test_a_bad_panel_names_the_field(judges: Any, message: str) -> None:
    with pytest.raises(DrarenaError, match=re.escape(message)):
        parse_config(config({"judges": judges}), "t.yaml")


def test_a_panel_role_not_in_the_models_is_one_line() -> None:
    parsed = parse_config(config({"judges": ["j1", "j2", "critic"]}), "t.yaml")
    with pytest.raises(
        DrarenaError, match=re.escape("match.judges: no role 'critic' in models.roles")
    ):
        check_components(parsed)
