"""A plugin installed as its own package registers an agent kind that plays a match.

examples/plugin is a real distribution (pyproject.toml with a `drarena.agents` entry point):
pip builds and installs it into a folder of its own, and a fresh interpreter with that folder
on its path finds the kind through importlib.metadata, as any installed plugin is found. The
match uses the scripted model backend for the Examiner (control flow only) and the plugin agent
on both sides of a hand-made tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PLAY = r"""
import asyncio, json, random, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/.."]
from arena_fakes import examiner, make_tree
from drarena.agents.registry import AGENTS, AgentContext, build_agent
from drarena.arena.match import MatchRunner, MatchSettings, match_seed
from drarena.corpus.treewalk import TreeWalker
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig

kinds = AGENTS.kinds()
context = AgentContext()
a = build_agent({"kind": "echo", "args": {"prefix": "A says"}}, context, name="echo-a")
b = build_agent({"kind": "drarena_echo_agent:build"}, context, name="echo-b")
tree, docs = make_tree()
client = ModelClient(ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
                     backend=examiner([{"v": "A_MUCH_BETTER", "f": "DEPTH"},
                                       {"v": "B_MUCH_BETTER", "f": "DEPTH"}]))
seed = match_seed(1, "echo-a", "echo-b", tree.id)
walker = TreeWalker(tree=tree, pages=docs, rng=random.Random(seed))
record = asyncio.run(MatchRunner("m1", 0, "echo-a", "echo-b", a, b, walker, client,
                                 MatchSettings(), seed).run())
first = record.rounds[0]
print(json.dumps({"kinds": kinds, "outcome": record.outcome.value,
                  "report_a": first.answer_a.report, "question": first.task.task.question}))
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pip install of a copy of the example (a build writes next to its sources, and tests
    never write into the repository)."""
    import shutil

    source = tmp_path_factory.mktemp("plugin-src") / "plugin"
    shutil.copytree(
        REPO / "examples" / "plugin",
        source,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
    )
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def run_python(code: str, plugin: Path | None, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(plugin) if plugin else "", env.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=300
    )


def test_installed_plugin_registers_a_kind_and_plays_a_match(plugin_path: Path) -> None:
    done = run_python(PLAY, plugin_path, str(REPO / "tests" / "arena"))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "echo" in result["kinds"] and "react" in result["kinds"]
    assert result["outcome"] == "A_WINS"
    assert result["report_a"] == f"A says {result['question']}"


def test_without_the_plugin_the_kind_is_unknown_in_one_line() -> None:
    code = (
        "from drarena.agents.registry import AGENTS\n"
        "try:\n    AGENTS.factory('echo')\nexcept ValueError as e:\n    print(e)\n"
    )
    done = run_python(code, None)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("unknown agent kind 'echo' (known: closed_book, command")


def test_a_plugin_cannot_shadow_a_built_in_kind(plugin_path: Path) -> None:
    code = (
        "from drarena.registry import Registry\n"
        "r = Registry('agent')\nr.register('echo', 'x:y')\n"
        "try:\n    r.register('echo', 'drarena_echo_agent:build', origin='plugin p')\n"
        "except ValueError as e:\n    print(e)\n"
    )
    done = run_python(code, plugin_path)
    assert (
        "agent kind 'echo' is already registered (by drarena; plugin p tried again)" in done.stdout
    ), done.stderr[-2000:]


def test_bad_plugin_args_are_one_line(plugin_path: Path) -> None:
    code = (
        "from drarena.agents.registry import AgentContext, build_agent\n"
        "from drarena.errors import DrarenaError\n"
        "try:\n    build_agent({'kind': 'echo', 'args': {'colour': 1}}, AgentContext())\n"
        "except DrarenaError as e:\n    print(e)\n"
    )
    done = run_python(code, plugin_path)
    assert "colour" in done.stdout and "Extra inputs are not permitted" in done.stdout, (
        done.stdout + done.stderr[-2000:]
    )


RETRIEVE = r"""
import json, sys
from pathlib import Path
from drarena.search.base import RETRIEVERS, build_retriever
retriever = build_retriever({"kind": "titles", "args": {"min_shared": 1}}, Path(sys.argv[1]),
                            Path(sys.argv[1]) / "no-index")
hits = retriever.search("argparse tutorial", 5)
page = retriever.open(hits[0].url, 0, 100)
print(json.dumps({"kinds": RETRIEVERS.kinds(), "traits": sorted(RETRIEVERS.traits("titles")),
                  "hits": [[h.docid, h.title, h.score, h.rank] for h in hits],
                  "page": [page.docid, len(page.text), page.next_offset]}))
"""


def test_installed_plugin_retriever_searches_the_snapshot(
    plugin_path: Path, pydocs_extracted: Path
) -> None:
    done = run_python(RETRIEVE, plugin_path, str(pydocs_extracted))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "titles" in result["kinds"] and result["traits"] == []  # no index to build
    hits = result["hits"]
    assert hits and all("argparse" in t.lower() or "tutorial" in t.lower() for _, t, _, _ in hits)
    assert [h[3] for h in hits] == list(range(1, len(hits) + 1))
    assert [h[2] for h in hits] == sorted((h[2] for h in hits), reverse=True)
    assert result["page"][0] == hits[0][0] and result["page"][1] == 100


PROVIDE = r"""
import json
from drarena.live.providers import PROVIDERS, build_provider
from drarena.errors import DrarenaError
p = build_provider({"kind": "jsonlines", "args": {"url": "http://127.0.0.1:9/s"}})
req = p.request("frozen web", 2, with_secrets=False)
results = p.parse(b'{"url": "http://a.example/x", "title": "X", "text": "t"}\n\n')
try:
    p.parse(b"not json")
    bad = None
except DrarenaError as e:
    bad = str(e)
print(json.dumps({"kinds": PROVIDERS.kinds(), "url": req.url, "spec": p.spec(),
                  "results": [[r.url, r.title] for r in results], "bad": bad}))
"""


def test_installed_plugin_search_provider_builds_requests_and_parses(plugin_path: Path) -> None:
    done = run_python(PROVIDE, plugin_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "jsonlines" in result["kinds"] and "searxng" in result["kinds"]
    assert result["url"] == "http://127.0.0.1:9/s?q=frozen+web&page=2"
    assert result["spec"] == {
        "kind": "jsonlines",
        "args": {"url": "http://127.0.0.1:9/s", "max_pages": 1},
    }
    assert result["results"] == [["http://a.example/x", "X"]]
    assert result["bad"] == "jsonlines at http://127.0.0.1:9/s: line 1 is not a result object"


JUDGE = r"""
import asyncio, json
from drarena.config.tournament import parse_config
from drarena.examiner.judge import AnswerForJudge
from drarena.examiner.judges import JUDGES, JudgeCall
from drarena.examiner.taskcheck import ChecklistItem, Task
config = parse_config({"name": "t", "snapshot": "s",
                       "models": {"roles": {"examiner": {"model": "openai/x"}}},
                       "agents": [{"name": "a", "kind": "null"}, {"name": "b", "kind": "null"}],
                       "match": {"judge": {"kind": "cited", "args": {"margin": 1}}}}, "c")
judge = config.match.judging()
task = Task("q?", "Answer.", (10, 20), (ChecklistItem("i", "http://x/"),), (), "r")
one = AnswerForJudge("a", 2, 2, 0)
none = AnswerForJudge("b", 1, 0, 1)
got = asyncio.run(judge.judge(JudgeCall(), task, one, none))
print(json.dumps({"kinds": JUDGES.kinds(), "spec": config.match.judge_spec().model_dump(),
                  "verdict": got.reconciled.verdict.value,
                  "prompts": config.match.template_specs()}))
"""


def test_installed_plugin_judge_is_a_config_kind(plugin_path: Path) -> None:
    """A judging rule as a plugin: its entry point makes `match.judge: {kind: cited}` a
    config kind, validated, resolved into run.json's spec, and judging a pair."""
    done = run_python(JUDGE, plugin_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "cited" in result["kinds"] and "evidence" in result["kinds"]
    assert result["spec"] == {"kind": "cited", "args": {"margin": 1}}
    assert result["verdict"] == "A_MUCH_BETTER"
    assert result["prompts"] == {"taskgen": "taskgen"}


SECTION = r"""
import json, shutil, sys
from pathlib import Path
from drarena.cli import main
from drarena.report.section import SECTIONS, page_order
run = Path(sys.argv[2]) / "run"
shutil.copytree(sys.argv[1], run)
assert main(["run", "rank", str(run)]) == 0
page = (run / "report.html").read_text(encoding="utf-8")
order = page_order()
print(json.dumps({"kinds": SECTIONS.kinds(), "order": order,
                  "at": [page.find(h) for h in ("Agreement with", "Answer lengths (words)",
                                                 "Void matches (")],
                  }))
"""


def test_installed_plugin_report_section_shows_in_report_html(
    plugin_path: Path, tmp_path: Path
) -> None:
    """A report section as a plugin: its entry point adds it to every report, after the
    built-in analyses and before the void matches, with its figures computed from the run."""
    fixture = REPO / "tests" / "arena" / "fixtures" / "recorded-run"
    done = run_python(SECTION, plugin_path, str(fixture), str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "answer_lengths" in result["kinds"] and "leaderboard" in result["kinds"]
    order = result["order"]
    assert order.index("comparison") < order.index("answer_lengths") < order.index("void")
    no_comparison, lengths, void = result["at"]
    assert no_comparison == -1 and 0 < lengths < void
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    table = page[lengths : page.index("</table>", lengths)]
    assert table.count("<tr><td>") == 4  # the recorded run's four agents


def test_without_a_section_plugin_the_page_has_the_built_in_sections_alone() -> None:
    code = "from drarena.report.section import page_order\nprint(','.join(page_order()))\n"
    done = run_python(code, None)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "examiner_check,leaderboard,ratings,pairwise,failures,analyses,style,panel,"
        "second_opinion,human_audit,comparison,void,failed,research,timing,matches,drift"
    )
