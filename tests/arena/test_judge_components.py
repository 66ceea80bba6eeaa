"""Judges and task generators as components: `match.judge` and `match.taskgen` as
{kind, args}, their defaults for new configs and for stored ones, one-line errors, and a
match judged by the evidence judge end to end (scripted agents and task model: control
flow; the judge itself is the real code)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, examiner_step, make_tree

from drarena.arena.match import MatchRunner, match_seed
from drarena.config.tournament import legacy_match, parse_config
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner.judges import JUDGES, build_judge
from drarena.examiner.taskgens import TASKGENS
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.runs.session import page_terms


def config(**match: object) -> dict[str, Any]:
    return {
        "name": "t",
        "snapshot": "snapshots/pydocs",
        "models": {"roles": {"examiner": {"model": "openai/x"}}},
        "agents": [{"name": "a", "kind": "closed_book"}, {"name": "b", "kind": "closed_book"}],
        "match": match,
    }


def test_registries_list_the_built_in_kinds() -> None:
    assert {"pairwise", "pointwise", "both", "evidence", "hybrid"} <= set(JUDGES.kinds())
    assert {"llm", "extractive"} <= set(TASKGENS.kinds())


def test_a_new_config_gets_the_hybrid_judge_and_grounded_tasks() -> None:
    """Whenever an LLM judge is configured (the flat keys), it decides and the evidence
    judge grades alongside; run.json records the resolved spec with every threshold."""
    m = parse_config(config(judge_mode="pointwise"), "c").match
    spec = m.judge_spec()
    assert spec.kind == "hybrid"
    assert spec.args["llm"] == {
        "kind": "pointwise",
        "args": {"prompt": "drarena", "orders": 2, "sees_checklist": True},
    }
    assert spec.args["evidence"]["recall_min"] > 0
    assert m.taskgen_spec().model_dump() == {
        "kind": "llm",
        "args": {"prompt": "taskgen", "ground": True},
    }
    assert m.template_specs() == {"taskgen": "taskgen", "pointwise": "pointwise"}


def test_an_evidence_config_calls_no_judge_model() -> None:
    m = parse_config(config(judge={"kind": "evidence", "args": {"recall_min": 0.4}}), "c").match
    judge = m.judging()
    assert (judge.spec.kind, judge.uses_model, judge.spec.args["recall_min"]) == (
        "evidence",
        False,
        0.4,
    )
    assert m.template_specs() == {"taskgen": "taskgen"}  # no judge prompt is used


def test_a_stored_config_without_judge_replays_with_its_own_llm_judge() -> None:
    """A run.json written before judges were components has the flat keys only: its judge
    is that LLM judge alone and its tasks were not grounded."""
    stored = config(judge_mode="pairwise", judge_prompt="checklist-first", taskgen_role="t")
    m = parse_config(legacy_match(stored), "run.json").match
    assert m.judge_spec().model_dump() == {
        "kind": "pairwise",
        "args": {"prompt": "checklist-first", "orders": 2, "sees_checklist": True},
    }
    assert m.taskgen_spec().args["ground"] is False


def test_a_resolved_config_parses_to_itself() -> None:
    """What run.json stores (the dump, judge and flat keys both) parses back unchanged."""
    first = parse_config(config(judge_mode="both", judge_orders=1), "c")
    again = parse_config(first.model_dump(mode="json"), "run.json")
    assert again == first


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ({"judge": {"kind": "majority"}}, r"match\.judge: .*unknown judge kind 'majority'"),
        ({"judge": {"kind": "evidence", "args": {"recall_min": 2}}}, r"args\.recall_min"),
        (
            {"judge": {"kind": "hybrid", "args": {"llm": {"kind": "evidence"}}}},
            r"args\.llm\.kind 'evidence' is not an LLM judge",
        ),
        (
            {"judge": {"kind": "evidence"}, "judge_mode": "pointwise"},
            r"match\.judge_mode is 'pointwise' but match\.judge \(evidence\) says 'pairwise'",
        ),
        (
            {"judge": {"kind": "evidence"}, "judges": ["x", "y"]},
            r"needs a judge that calls a model",
        ),
        (
            {"taskgen": {"kind": "extractive", "args": {"nope": 1}}},
            r"taskgen extractive: args\.nope",
        ),
    ],
)
def test_bad_judging_is_one_line_naming_the_field(match: dict[str, Any], message: str) -> None:
    with pytest.raises(DrarenaError, match=message) as err:
        parse_config(config(**match), "c")
    assert "\n" not in str(err.value)


def test_a_plugin_judge_by_import_path_is_built() -> None:
    judge = build_judge({"kind": "drarena.examiner.judges:build_evidence"})
    assert judge.spec.kind == "evidence"


def test_a_match_judged_by_evidence_plays_and_records_the_grades() -> None:
    """The evidence judge in a real MatchRunner: no judge call reaches the model (the
    scripted backend would fail on one: it holds task replies only); the round's record
    holds both answers' item grades and the verdict derived from them."""
    tree, docs = make_tree()
    settings = parse_config(
        config(judge={"kind": "evidence"}, max_rounds=2, gap_to_stop=9), "c"
    ).match
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=ScriptedBackendForTests([examiner_step([])] * 2),
    )
    first = docs["c1"].contents.split(".")[0]
    a = ScriptedAgentForTests("a", report=f"{first}. It is so.")
    b = ScriptedAgentForTests("b", report="I don't know.")
    seed = match_seed(1, "a", "b", tree.id)
    terms = page_terms(docs.values())
    runner = MatchRunner(
        "m",
        0,
        "a",
        "b",
        a,
        b,
        TreeWalker(tree=tree, pages=docs, rng=random.Random(seed)),
        client,
        settings,
        seed,
        terms=lambda: terms,
    )
    record = asyncio.run(runner.run())
    assert client.model_calls == 2  # the two tasks; no judge call
    played = [r for r in record.rounds if r.judgment is not None]
    assert played, [r.void_reason for r in record.rounds]
    for r in played:
        assert r.judgment is not None and r.judgment.evidence is not None
        assert r.judgment.ab is None and r.judgment.ba is None
        assert r.judgment.reconciled == r.judgment.evidence.derived
        items = r.task.task.checklist_depth if r.task.task else ()
        assert all(i.evidence and i.support is not None for i in items)  # grounded
