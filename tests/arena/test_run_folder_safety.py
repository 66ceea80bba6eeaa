"""Run folders against hostile or mistaken input: `drarena replay --out`, `drarena rank` and a
tournament whose config is wrong. Each case is one line of error and nothing lost.

The run is real (a snapshot of a loopback site captured with the real LiveWeb, the real
tournament, report and replay); only the model is the scripted backend (control flow only).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from arena_live_site import frozen_site, scripted_models
from runconfig import scripted_config, scripted_options

from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.runs.execute import RunOptions, execute

STRENGTH = {"fact number": 3}


def config_data(tmp: Path, snapshot: Path, name: str = "demo") -> dict[str, Any]:
    return scripted_config(tmp, snapshot, name)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(snapshot, finished run folder): a frozen tournament played once per module."""
    tmp = tmp_path_factory.mktemp("made")
    snapshot = frozen_site(tmp / "frozen")
    config = parse_config(config_data(tmp, snapshot), "test")
    run = RunDir(tmp / "runs" / "demo")
    execute(
        config,
        run,
        scripted_options(scripted_models(STRENGTH)),
    )
    return snapshot, run.path


@pytest.fixture
def demo(made: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the finished run (each test may damage its own)."""
    copy = tmp_path / "runs" / "demo"
    shutil.copytree(made[1], copy)
    return copy


def contents(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("drarena: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


# --- drarena replay --out ------------------------------------------------------------------


def test_replay_keeps_a_folder_it_did_not_make(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    (scratch / "sub").mkdir(parents=True)
    (scratch / "notes.txt").write_text("keep\n")
    assert main(["run", "replay", str(demo), "--out", str(scratch)]) == 2
    one_line_error(capsys, str(scratch))
    assert (scratch / "notes.txt").read_text() == "keep\n" and (scratch / "sub").is_dir()


@pytest.mark.parametrize("where", ["same", "same-spelled-otherwise", "inside", "containing"])
def test_replay_refuses_the_source_run_as_target(
    demo: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = contents(demo.parent)
    out = {
        "same": demo,
        "same-spelled-otherwise": demo / ".." / "demo",
        "inside": demo / "matches",
        "containing": demo.parent,
    }[where]
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 2
    one_line_error(capsys, "run being replayed")
    assert contents(demo.parent) == before  # the run and its model cache untouched


def test_replay_marks_its_folder_and_replaces_only_its_own_files(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", str(demo), "--out", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
    header = json.loads((out / "run.json").read_text())
    assert Path(header["replay_of"]) == demo.resolve()
    (out / "notes.txt").write_text("mine\n")
    (out / "matches" / "stale.json.tmp").write_text("left by a killed replay")
    assert main(["replay", str(demo), "--out", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not (out / "matches" / "stale.json.tmp").exists()
    assert len((out / "timings.jsonl").read_text().splitlines()) == len(
        (demo / "timings.jsonl").read_text().splitlines()
    )  # replaced, not appended to


def test_replay_keeps_a_replay_of_another_run(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(demo, other)
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 0
    capsys.readouterr()
    before = contents(out)
    assert main(["run", "replay", str(other), "--out", str(out)]) == 2
    one_line_error(capsys, f"--out {out}", "replay_of", str(demo.resolve()))
    assert contents(out) == before  # demo's replay, still demo's


def test_replay_of_a_run_json_without_bound_roles_is_one_line(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_json(demo / "run.json", lambda h: h.pop("bound_roles"))
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 2
    one_line_error(capsys, str(demo / "run.json"), "bound_roles")
    assert not out.exists()


# --- drarena rank on damaged or foreign run folders ----------------------------------------


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _edit_log(demo: Path, change: Any) -> None:
    lines = [json.loads(line) for line in (demo / "matches.jsonl").read_text().splitlines()]
    change(lines[0])
    (demo / "matches.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


DAMAGE: dict[str, tuple[str, Any]] = {
    "run schema from the future": (
        "run.json",
        lambda d: _edit_json(d / "run.json", lambda h: h.update(run_schema_version=99)),
    ),
    "match schema from the future in run.json": (
        "run.json",
        lambda d: _edit_json(d / "run.json", lambda h: h.update(match_schema_version=99)),
    ),
    "match schema from the future in the log": (
        "matches.jsonl",
        lambda d: _edit_log(d, lambda m: m.update(schema_version=99)),
    ),
    "empty log": ("matches.jsonl", lambda d: (d / "matches.jsonl").write_bytes(b"")),
    "log not UTF-8": (
        "matches.jsonl",
        lambda d: (d / "matches.jsonl").write_bytes(
            b"\xff\xfe" + (d / "matches.jsonl").read_bytes()
        ),
    ),
    "log line not an object": ("matches.jsonl", lambda d: (d / "matches.jsonl").write_text("5\n")),
    "agent not in the config": (
        "matches.jsonl",
        lambda d: _edit_log(d, lambda m: m.update(a="ghost")),
    ),
    "run.json not an object": ("run.json", lambda d: (d / "run.json").write_text("[1, 2]\n")),
    "run.json not UTF-8": ("run.json", lambda d: (d / "run.json").write_bytes(b'{"\xff": 1}')),
    "run.json without a config": (
        "run.json",
        lambda d: _edit_json(d / "run.json", lambda h: h.pop("config")),
    ),
    "timings not UTF-8": ("timings.jsonl", lambda d: (d / "timings.jsonl").write_bytes(b"\xff\n")),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_rank_refuses_a_damaged_run_and_overwrites_nothing(
    demo: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rank", str(demo)]) == 0  # the intact run ranks
    capsys.readouterr()
    name, damage = DAMAGE[case]
    damage(demo)
    for output in ("leaderboard.md", "report.html"):  # a rewrite, even identical, shows
        with (demo / output).open("a") as out:
            out.write("\n<!-- the user's copy -->\n")
    before = contents(demo)
    assert main(["run", "rank", str(demo)]) == 2
    one_line_error(capsys, str(demo / name))
    assert contents(demo) == before


def test_newer_schemas_say_which_version_is_supported(demo: Path) -> None:
    _edit_json(demo / "run.json", lambda h: h.update(run_schema_version=99))
    with pytest.raises(DrarenaError, match=r"run_schema_version 99 .*supports \(1\)"):
        RunDir(demo).header()
    [match] = sorted((demo / "matches").glob("*.json"))
    _edit_json(match, lambda m: m.update(schema_version=99))
    with pytest.raises(DrarenaError, match=rf"{match.name}: .*schema_version 99 .*supports \(1\)"):
        RunDir(demo).finished()


def test_a_match_file_holding_another_match_is_one_line(demo: Path) -> None:
    """A match file renamed, or its match_id edited: the match the name says would be played
    again and that file written over; it is named instead."""
    [match] = sorted((demo / "matches").glob("*.json"))
    renamed = match.with_name("r0-x-vs-y-tree-000.json")
    match.rename(renamed)
    with pytest.raises(DrarenaError, match=rf"{renamed.name}: holds match '{match.stem}'"):
        RunDir(demo).finished()


# --- a wrong config writes nothing ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "bad", "field"),
    [
        ("closed_book", {"no_such_arg": 1}, "no_such_arg"),
        ("oracle", {"context_chars": 10}, "context_chars"),
        ("react", {"max_steps": 0}, "max_steps"),
        ("rag", {"k": "many"}, "args.k"),
    ],
)
def test_a_bad_agent_arg_writes_nothing_and_the_fixed_config_then_runs(
    made: tuple[Path, Path], tmp_path: Path, kind: str, bad: dict[str, Any], field: str
) -> None:
    data = config_data(tmp_path, made[0], name="fixme")
    data["agents"][1] = {"name": "second", "kind": kind, "args": bad}
    run = RunDir(tmp_path / "runs" / "fixme")
    with pytest.raises(DrarenaError) as caught:
        execute(
            parse_config(data, "test"),
            run,
            scripted_options(scripted_models(STRENGTH)),
        )
    assert not run.path.exists()  # no run.json claiming the folder for the wrong config
    assert re.search(rf"agents\.second.*{field}", str(caught.value))
    assert "\n" not in str(caught.value)
    data["agents"][1] = {"name": "second", "kind": "closed_book"}
    result = execute(
        parse_config(data, "test"),
        run,
        scripted_options(scripted_models(STRENGTH)),
    )
    assert len(result.log) == 1 and (run.path / "leaderboard.md").is_file()


def test_every_agent_kind_has_its_args_model_listed() -> None:
    from drarena.agents.registry import AGENT_ARGS, AGENTS

    assert set(AGENT_ARGS) == set(AGENTS.kinds())  # a kind missing here is checked only late


def test_add_agent_refuses_a_header_without_agents(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_json(demo / "run.json", lambda h: h["config"].pop("agents"))
    before = contents(demo)
    assert (
        main(["run", "add-agent", str(demo), "--name", "x", "--kind", "closed_book", "--no-serve"])
        == 2
    )
    one_line_error(capsys, str(demo / "run.json"), "agents")
    assert contents(demo) == before


# --- drarena run add-agent resumes ------------------------------------------------------------


def add_agent(
    monkeypatch: pytest.MonkeyPatch, run: Path, *flags: str, interrupt_at: int | None = None
) -> int:
    """`drarena run add-agent RUN --name newbie ...` with the scripted model backend (control
    flow only) in place of litellm."""
    import drarena.runs.execute as execute_module

    def scripted(config: Any, run: RunDir, options: RunOptions) -> Any:
        backend = scripted_models(STRENGTH, interrupt_at=interrupt_at)
        return execute(config, run, dataclasses.replace(options, backend=backend, prepare=False))

    monkeypatch.setattr(execute_module, "execute", scripted)
    argv = ["run", "add-agent", str(run), "--name", "newbie", "--kind", "closed_book"]
    return main([*argv, *(flags or ("--no-serve",))])


def test_an_interrupted_add_agent_resumes_with_the_same_command(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tmp_path / "whole"
    shutil.copytree(demo, whole)
    assert add_agent(monkeypatch, whole) == 0
    placed = [m for m in RunDir(whole).read_log() if "newbie" in (m.a, m.b)]
    assert [m.swiss_round for m in placed] == [1, 2]  # two placement rounds, one tree
    # Ctrl-C in the second placement match: run.json already lists newbie, the log holds
    # its first round
    assert add_agent(monkeypatch, demo, interrupt_at=8) == 130
    assert [a["name"] for a in json.loads((demo / "run.json").read_text())["config"]["agents"]][
        -1
    ] == "newbie"
    assert [m.match_id for m in RunDir(demo).read_log()][-1] == placed[0].match_id
    assert add_agent(monkeypatch, demo) == 0
    for name in ("matches.jsonl", "leaderboard.md", "leaderboard.json"):
        assert (demo / name).read_bytes() == (whole / name).read_bytes(), name
    assert add_agent(monkeypatch, demo) == 0  # a finished placement: the same files again
    assert (demo / "matches.jsonl").read_bytes() == (whole / "matches.jsonl").read_bytes()


def test_add_agent_under_a_taken_name_is_refused_and_writes_nothing(
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert add_agent(monkeypatch, demo) == 0
    capsys.readouterr()
    before = contents(demo)
    # the placed agent with other args, and an agent of the tournament itself
    assert add_agent(monkeypatch, demo, "--args", '{"max_repairs": 2}', "--no-serve") == 2
    one_line_error(capsys, "--name newbie", str(demo / "run.json"), "kind closed_book")
    argv = ["run", "add-agent", str(demo), "--name", "closed_book", "--kind", "closed_book"]
    assert main([*argv, "--no-serve"]) == 2
    one_line_error(capsys, "closed_book has already played")
    assert contents(demo) == before


# --- a tournament begins only in its own folder -----------------------------------------------


def scripted_execute(data: dict[str, Any], folder: Path) -> Any:
    """The tournament of config `data` in `folder`, on the scripted model backend."""
    return execute(
        parse_config(data, "test"),
        RunDir(folder),
        scripted_options(scripted_models(STRENGTH)),
    )


def test_a_tournament_refuses_a_folder_it_did_not_make(
    made: tuple[Path, Path], tmp_path: Path
) -> None:
    data = config_data(tmp_path, made[0], name="mine")
    folder = tmp_path / "runs" / "mine"
    folder.mkdir(parents=True)
    for name in ("report.html", "leaderboard.md", "matches.jsonl", "timings.jsonl"):
        (folder / name).write_text(f"the user's own {name}\n")
    before = contents(folder)
    with pytest.raises(DrarenaError) as caught:
        scripted_execute(data, folder)
    assert str(folder) in str(caught.value) and "\n" not in str(caught.value)
    assert contents(folder) == before and sorted(p.name for p in folder.iterdir()) == sorted(before)


def test_a_tournament_interrupted_before_its_run_json_resumes(
    made: tuple[Path, Path], tmp_path: Path
) -> None:
    config = parse_config(config_data(tmp_path, made[0], name="early"), "test")
    run = RunDir(tmp_path / "runs" / "early")

    def play(interrupt_at: int | None = None) -> Any:
        return execute(
            config,
            run,
            scripted_options(
                scripted_models(STRENGTH, interrupt_at=interrupt_at), examiner_check_pairs=1
            ),
        )

    with pytest.raises(KeyboardInterrupt):  # Ctrl-C in the examiner-check, before run.json
        play(interrupt_at=3)
    assert not run.header_path.exists() and run.cache_path.is_file()
    assert len(play().log) == 1 and run.header() is not None
    assert (run.path / "leaderboard.md").is_file()


# --- a match whose agent is not in the config -------------------------------------------------


def test_resume_refuses_a_match_file_of_an_agent_not_in_the_config(
    demo: Path,
) -> None:
    [match] = sorted((demo / "matches").glob("*.json"))
    _edit_json(match, lambda m: m.update(a="ghost"))
    data = json.loads((demo / "run.json").read_text())["config"]  # the same tournament
    before = contents(demo)
    with pytest.raises(DrarenaError) as caught:
        scripted_execute(data, demo)
    assert str(match) in str(caught.value) and "'ghost'" in str(caught.value)
    assert contents(demo) == before  # run.json not rewritten


def test_add_agent_refuses_a_log_with_an_agent_not_in_the_config(
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_log(demo, lambda m: m.update(b="ghost"))
    before = contents(demo)
    assert add_agent(monkeypatch, demo) == 2
    one_line_error(capsys, str(demo / "matches.jsonl"), "'ghost'")
    assert contents(demo) == before


# --- a run folder given as `.` ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "output"),
    [
        (["run", "replay", "."], "demo-replay/run.json"),
        (["run", "rejudge", ".", "--no-serve"], "demo-rejudge/rejudge.json"),
    ],
)
def test_a_run_given_as_dot_writes_its_default_output_beside_it(
    demo: Path, argv: list[str], output: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(demo)  # `drarena run replay .` from inside the run folder
    assert main(argv) == 0
    assert (demo.parent / output).is_file()


# --- a full disk (issue 38, item 9) ------------------------------------------------------------


@pytest.mark.parametrize("free_kib", [4, 12, 28])
def test_replay_onto_a_full_disk_is_one_line_and_leaves_no_tmp(
    demo: Path,
    free_kib: int,
    small_disk: Callable[[int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Regression: `run replay --out` on a full disk ended in an `OSError: [Errno 28]`
    traceback and left `*.tmp` files. With a few KiB left on the disk (each amount runs out
    in another file) it is now one line, and no temporary file is left; the source run is
    untouched."""
    before = contents(demo)
    out = small_disk(free_kib) / "replayed"
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # progress lines, then the error
    assert err[-1].startswith("drarena: error: ") and "no room left to write it" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert not list(out.rglob("*.tmp"))
    side = ("-shm", "-wal")  # SQLite's side files come and go with a reader's connection
    after = contents(demo)
    assert {k: v for k, v in after.items() if not k.endswith(side)} == {
        k: v for k, v in before.items() if not k.endswith(side)
    }


# --- two drarenas in one run folder (issue 38, item 8) ------------------------------------------


def _hold(folder: Path) -> Any:
    """Another process holding `folder` (a drarena playing into it), until its stdin closes."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from drarena.ledger.folder import run_lock\n"
        "with run_lock(Path(sys.argv[1])):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(folder), "drarena-tournament-of-the-test"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_second_tournament_in_a_held_run_folder_is_refused_naming_the_holder(
    made: tuple[Path, Path], demo: Path, tmp_path: Path
) -> None:
    """Regression: two tournaments of one config at once both ran (timings.jsonl doubled,
    run.json saying model_calls: 0). The second is now refused in one line naming the first,
    and touches nothing; once the first is gone the run resumes."""
    snapshot, first = made
    config = parse_config(config_data(first.parent.parent, snapshot), "test")  # the run's own
    holder = _hold(demo)
    try:
        before = contents(demo)
        with pytest.raises(DrarenaError) as err:
            execute(
                config,
                RunDir(demo),
                scripted_options(scripted_models(STRENGTH)),
            )
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{demo}: another drarena is running")
        assert f"pid {holder.pid} on " in message and "drarena-tournament-of-the-test" in message
        assert contents(demo) == before
    finally:
        holder.communicate("")
    result = execute(  # the holder is gone (its lock went with it): the run resumes
        config,
        RunDir(demo),
        scripted_options(scripted_models(STRENGTH)),
    )
    assert result.log and not (demo / "run.lock").exists()


def test_a_replay_into_a_held_folder_is_refused_and_deletes_nothing(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 0
    capsys.readouterr()
    before = contents(out)
    holder = _hold(out)
    try:
        assert main(["run", "replay", str(demo), "--out", str(out)]) == 2
        one_line_error(capsys, "another drarena is running in this run folder", str(holder.pid))
        assert {k: v for k, v in contents(out).items() if k != "run.lock"} == before
    finally:
        holder.communicate("")
    assert main(["run", "replay", str(demo), "--out", str(out)]) == 0
    assert not (out / "run.lock").exists()


def test_a_killed_holders_file_does_not_block_the_next_run(demo: Path, tmp_path: Path) -> None:
    """The lock is the kernel's (flock on the folder): a holder killed with SIGKILL leaves its
    run.lock, which the next run writes over; a fresh folder accepts such a leftover too."""
    from drarena.ledger.folder import check_new_run_folder, run_lock

    holder = _hold(demo)
    holder.kill()
    holder.wait()
    assert (demo / "run.lock").exists()
    with run_lock(demo):
        pass
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "run.lock").write_text("{}")
    check_new_run_folder(fresh)
