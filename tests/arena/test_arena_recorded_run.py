"""The committed recorded run replays byte-identically, on any machine, from its record alone.

tests/arena/fixtures/recorded-run/ was played on the CPU model (bench/bench_replay.py, config
tests/arena/fixtures/recorded-run.yaml): four agents, one on BM25 (Lucene through the JVM) and
one on dense retrieval (a torch encoder, whose float scores differ between AVX2, AVX-512 and
AMX kernels). A replay answers every model call from llm-cache.sqlite and every search and
open from the tool record in the same file: no model server, no JVM, no encoder, so the
replayed log and leaderboard are the recorded bytes whatever CPU runs it. No model server is
started here.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.runs.execute import replay

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "recorded-run"
COMPARED = ("matches.jsonl", "leaderboard.md", "leaderboard.csv", "leaderboard.json")
HEAVY = ("jnius", "pyserini", "torch", "sentence_transformers", "faiss", "vllm", "litellm")
PROBE = (
    "import json, sys\n"
    "from drarena.cli import main\n"
    "rc = main(['replay', sys.argv[1], '--out', sys.argv[2]])\n"
    f"print(json.dumps({{'rc': rc, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
)


@pytest.fixture
def clone(pydocs_extracted: Path, tmp_path: Path) -> Path:
    """A folder laid out like another clone's root: snapshots/pydocs (with docs and trees
    built here by drarena) and a copy of the committed run under runs/."""
    root = tmp_path / "clone"
    (root / "snapshots").mkdir(parents=True)
    (root / "snapshots" / "pydocs").symlink_to(pydocs_extracted)
    shutil.copytree(FIXTURE, root / "runs" / "recorded-run")
    return root


def test_the_fixture_is_small_and_pins_no_absolute_path() -> None:
    size = sum(p.stat().st_size for p in FIXTURE.iterdir())
    assert size < 3_000_000, size
    assert not [p.name for p in FIXTURE.iterdir() if p.name.endswith(("-wal", "-shm"))]
    header = json.loads((FIXTURE / "run.json").read_text(encoding="utf-8"))
    config = header["config"]
    assert (config["snapshot"], config["index_root"], config["runs_root"]) == (
        "snapshots/pydocs",
        "index",
        "runs",
    )
    assert header["tool_record"]["table"] == "tools" and header["model_calls"] > 0
    assert {a["args"].get("retriever", {}).get("kind") for a in config["agents"]} >= {
        "bm25",
        "dense",
    }
    with sqlite3.connect(f"file:{FIXTURE / 'llm-cache.sqlite'}?mode=ro", uri=True) as db:
        (calls,) = db.execute("SELECT COUNT(*) FROM calls").fetchone()
        (tools,) = db.execute("SELECT COUNT(*) FROM tools").fetchone()
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
    assert calls > 0 and tools > 0 and mode == "delete"  # the file alone is the whole cache


@pytest.mark.slow  # the snapshot built by drarena (pydocs_extracted)
def test_replay_is_byte_identical_with_no_model_jvm_or_encoder(clone: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DRARENA_MODEL_API_BASE"}
    out = clone / "runs" / "replayed"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "runs/recorded-run", str(out)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe == {"rc": 0, "heavy": []}, done.stdout
    assert "with 0 model calls" in done.stdout and "identical" in done.stdout
    for name in COMPARED:
        assert (out / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    replayed = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert replayed["model_calls"] == 0
    # the dense agent's searches were answered from the record, with the recorded scores
    log = [json.loads(line) for line in (FIXTURE / "matches.jsonl").read_text().splitlines()]
    searched = [
        t
        for m in log
        for r in m["rounds"]
        for side in ("answer_a", "answer_b")
        if r[side] and r[side]["agent"] == "react-dense"
        for s in r[side]["trajectory"]["steps"]
        for t in s["tools"]
        if t["name"] == "search" and t["docids"]
    ]
    assert searched


def edit_header(run: Path, **changes: object) -> None:
    path = run / "run.json"
    header = json.loads(path.read_text(encoding="utf-8"))
    header.update(changes)
    path.write_text(json.dumps(header), encoding="utf-8")


@pytest.mark.slow  # the snapshot built by drarena (pydocs_extracted)
def test_replay_refuses_other_inputs_with_one_line(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(clone)
    run = clone / "runs" / "recorded-run"
    header = json.loads((run / "run.json").read_text(encoding="utf-8"))
    [tree] = header["trees"]
    edit_header(run, trees={tree: "sha256:" + "0" * 64})
    with pytest.raises(
        DrarenaError,
        match=rf"tree .*{tree}\.json is not the tree the run "
        r"played; run `drarena snapshot trees snapshots/pydocs",
    ):
        replay(RunDir(run), RunDir(clone / "out1"))
    edit_header(run, trees=header["trees"], snapshot_fingerprint="sha256:other")
    with pytest.raises(DrarenaError, match=r"has fingerprint .* the run used sha256:other"):
        replay(RunDir(run), RunDir(clone / "out2"))
    edit_header(
        run,
        snapshot_fingerprint=header["snapshot_fingerprint"],
        derived_digests={"docs.jsonl": "sha256:" + "1" * 64},
    )
    with pytest.raises(DrarenaError, match=r"docs\.jsonl is not the file the run read"):
        replay(RunDir(run), RunDir(clone / "out3"))
    assert not (clone / "out1").exists() and not (clone / "out3").exists()
    monkeypatch.chdir(clone / "runs")  # the relative snapshot path is not here
    with pytest.raises(DrarenaError, match="snapshot snapshots/pydocs is not here"):
        replay(RunDir(run), RunDir(clone / "out4"))


@pytest.mark.slow  # the snapshot built by drarena (pydocs_extracted)
def test_a_tool_result_missing_from_the_record_is_one_line(
    clone: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(clone)
    monkeypatch.delenv("DRARENA_MODEL_API_BASE", raising=False)
    run = clone / "runs" / "recorded-run"
    with sqlite3.connect(run / "llm-cache.sqlite") as db:
        db.execute(
            "DELETE FROM tools WHERE key = (SELECT key FROM tools WHERE request LIKE "
            '\'%"op":"search"%\' ORDER BY key LIMIT 1)'
        )
    assert main(["replay", "runs/recorded-run", "--out", "runs/missing"]) != 0
    err = capsys.readouterr().err.strip().splitlines()  # progress lines, then the error
    assert err[-1].startswith(
        "drarena: error: replay: the run's tool record has no search for retriever"
    ), err[-3:]
    assert not [line for line in err if line.startswith("Traceback")]


@pytest.mark.slow  # the snapshot built by drarena (pydocs_extracted)
def test_rejudge_with_the_evidence_judge_reads_the_snapshot_and_calls_no_model(
    clone: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`drarena run rejudge RUN --judge evidence`: the recorded (LLM-judged) run's rounds
    graded by code against the run's own snapshot, no model call, the run only read."""
    from drarena.config.tournament import parse_config
    from drarena.runs.rejudge import judgeable, round_grounding

    monkeypatch.chdir(clone)
    monkeypatch.delenv("DRARENA_MODEL_API_BASE", raising=False)
    run = Path("runs/recorded-run")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main(["run", "rejudge", str(run), "--judge", "evidence", "--write", "runs/ev"]) == 0
    assert "(--judge: no model call)" in capsys.readouterr().out
    report = json.loads(Path("runs/ev/rejudge.json").read_text(encoding="utf-8"))
    log = RunDir(run).read_log()
    judgeable_rounds = sum(judgeable(r) for m in log for r in m.rounds)
    assert report["judge"]["kind"] == "evidence" and report["model_calls"] == 0
    assert report["rounds_rejudged"] == judgeable_rounds > 0
    assert report["rounds_new_judge_failed"] == 0
    rescored = RunDir(Path("runs/ev")).read_log()
    graded = [r.judgment for m in rescored for r in m.rounds if r.judgment is not None]
    assert graded and all(j.evidence is not None for j in graded)
    assert Path("runs/ev/leaderboard.md").is_file()
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    # each round is graded against its target pages' text from the snapshot
    header = json.loads((run / "run.json").read_text(encoding="utf-8"))
    ground = round_grounding(parse_config(header["config"], "run.json"))
    m = next(m for m in log if any(judgeable(r) for r in m.rounds))
    r = next(r for r in m.rounds if judgeable(r))
    pages = ground(m, r).pages
    assert set(r.target_urls) <= set(pages) and all(pages.values())
    # a judge that calls a model is chosen with --model/--role, not --judge
    assert main(["run", "rejudge", str(run), "--judge", "pairwise", "--out", "runs/x"]) != 0
    err = capsys.readouterr().err
    assert "--judge pairwise: calls a model" in err and len(err.strip().splitlines()) == 1
