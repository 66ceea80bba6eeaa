"""bench/bench_validity.py's ladder config: the agents a known-order bench plays."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import yaml

REPO = Path(__file__).resolve().parents[2]


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_validity", REPO / "bench" / "bench_validity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_validity", module)
    spec.loader.exec_module(module)
    return module


def test_ladder_takes_the_base_configs_agent_args_by_kind() -> None:
    bench = load_bench()
    base = yaml.safe_load((REPO / "configs" / "demo-qwen.yaml").read_text(encoding="utf-8"))
    config = bench.ladder_config(base, "full", "ladder", 2, {"kind": "evidence"})
    agents = {agent["name"]: agent for agent in config["agents"]}
    assert list(agents) == ["oracle", "react", "closed_book", "null"]
    # the demo's oracle and closed_book answer by parts; react keeps the ladder's own args
    assert agents["oracle"]["args"]["answer_parts"] is True
    assert agents["closed_book"]["args"]["answer_parts"] is True
    assert agents["react"]["args"] == bench.REACT["args"]
    assert config["swiss_rounds"] == 3
    assert config["match"]["judge"] == {"kind": "evidence"}
    # the base is not changed in place
    assert base["agents"][0]["name"] == "oracle"


def test_ladder_without_peers_keeps_its_own_args() -> None:
    bench = load_bench()
    config = bench.ladder_config({"agents": []}, "reduced", "ladder", 2, None)
    assert [agent["args"] for agent in config["agents"] if "args" in agent] == [
        {"context_chars": 4000}
    ]
    assert config["swiss_rounds"] == 3
