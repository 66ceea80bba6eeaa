from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drarena.config.tournament import load_config, parse_config
from drarena.errors import DrarenaError
from drarena.runs.session import check_components

REPO = Path(__file__).resolve().parents[2]


def base() -> dict[str, Any]:
    return {
        "name": "t",
        "snapshot": "snapshots/pydocs",
        "models": {"roles": {"examiner": {"model": "served"}, "agent": {"model": "served"}}},
        "agents": [
            {"name": "a", "kind": "oracle"},
            {"name": "b", "kind": "rag", "args": {"retriever": {"kind": "bm25"}}},
        ],
    }


def test_demo_config_is_valid() -> None:
    config = load_config(REPO / "configs" / "demo.yaml")
    check_components(config)
    assert len(config.agents) == 5 and config.offline


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update(bogus=1), "bogus: Extra inputs are not permitted"),
        (lambda c: c["agents"].append({"name": "a", "kind": "oracle"}), "agent names must be"),
        (lambda c: c["agents"].pop(), "agents: "),
        (lambda c: c.update(match={"max_rounds": 0}), "match.max_rounds"),
        # not a role name: the field says so, not a TypeError while deriving roles from it
        (lambda c: c.update(match={"examiner_role": ["a", "b"]}), "match.examiner_role"),
        (lambda c: c.update(match={"examiner_role": {"x": 1}}), "match.examiner_role"),
        # numpy's bootstrap takes no negative seed: refused here, not after the last match
        (lambda c: c.update(rating={"seed": -1}), "rating.seed"),
    ],
)
def test_bad_configs_name_the_field(mutate, message: str) -> None:
    data = base()
    mutate(data)
    with pytest.raises(DrarenaError, match=message):
        parse_config(data, "t.yaml")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["agents"][0].update(kind="wizard"), "agents.a.kind: unknown agent kind"),
        (
            lambda c: c["agents"][1]["args"].update(retriever={"kind": "magic"}),
            "agents.b.args.retriever: unknown retriever kind 'magic'",
        ),
        (lambda c: c["agents"][0].update(args={"role": "critic"}), "agents.a.args.role: no role"),
        (lambda c: c["models"]["roles"].pop("examiner"), "match.examiner_role"),
    ],
)
def test_unknown_components_fail_before_anything_runs(mutate, message: str) -> None:
    data = base()
    mutate(data)
    with pytest.raises(DrarenaError, match=message):
        check_components(parse_config(data, "t.yaml"))


def test_missing_config_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match="no such tournament config"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("name: [")
    with pytest.raises(DrarenaError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")
