"""Fuzzing what reads a run folder drarena wrote earlier: `drarena run rank` (run.json,
matches.jsonl, timings.jsonl, comparison.json), `drarena run replay` (the source run and an
earlier replay's --out folder), `drarena run add-agent` (run.json, matches.jsonl) and a
resumed tournament (run.json, matches/<id>.json).

The seed is the committed recorded run (tests/arena/fixtures/recorded-run) made
self-consistent with a tiny snapshot built here (fingerprint, derived files, tree, prompt
hashes, config digest), so mutations reach past the first checks. No model is called: the
commands that would play matches stop at check_config (the first step of making the run: the
config checked, then the prepare stage and open_run, which load models, trees and indexes),
patched to raise _Reached.

Properties: each read either succeeds or is refused with a DrarenaError whose message is one
line naming the damaged file (and its line, for a JSONL line); never another exception. A
refused operation leaves every byte of the folders as it was; a successful one changes only
the files it writes (leaderboard.*, report.html) and, for a replay, deletes only the files a
replay writes from a folder an earlier replay of the same run made.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fuzz_inputs import mutated, text_mutated, tiny_snapshot
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.cli import main
from drarena.config.tournament import legacy_match, parse_config
from drarena.digests import file_sha256
from drarena.errors import DrarenaError
from drarena.examiner.templates import used_hashes
from drarena.files import write_atomic
from drarena.ledger.folder import REPLAY_FILES, RunDir
from drarena.ledger.records import AnswerTiming
from drarena.models.config import CacheMode
from drarena.runs.execute import RunOptions, execute, legacy_judging, replay
from drarena.runs.session import config_digest
from drarena.web.warc.snapshot import Snapshot

FIXTURE = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"
WRITTEN_BY_RANK = {"leaderboard.md", "leaderboard.csv", "leaderboard.json", "report.html"}
FOREIGN = ("notes.txt", "matches/keep.txt")  # someone else's files in an earlier replay's folder


class _Reached(Exception):
    """check_config was reached: every read of the run folder before it passed."""


def _stop(*_: Any, **__: Any) -> Any:
    raise _Reached


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        yield _seed(root)


def _seed(root: Path) -> Path:
    """root/seed: a finished run whose inputs (a tiny snapshot) a replay can check."""
    snap = tiny_snapshot(root / "snap")
    (snap / "docs.jsonl").write_text('{"url": "http://example.org/"}\n', encoding="utf-8")
    (snap / "links.jsonl").write_text("{}\n", encoding="utf-8")
    (snap / "trees").mkdir()
    (snap / "trees" / "tree-000.json").write_text("{}\n", encoding="utf-8")
    run = root / "seed"
    shutil.copytree(FIXTURE, run)
    header = json.loads((run / "run.json").read_text(encoding="utf-8"))
    header["config"]["snapshot"] = str(snap)
    config = parse_config(header["config"], "seed")
    with Snapshot.open(snap) as opened:
        header["snapshot_fingerprint"] = opened.fingerprint
    header["derived_digests"] = {n: file_sha256(snap / n) for n in ("docs.jsonl", "links.jsonl")}
    header["trees"] = {"tree-000": file_sha256(snap / "trees" / "tree-000.json")}
    replayed = parse_config(legacy_match(legacy_judging(header["config"])), "seed")
    header["prompt_hashes"] = used_hashes(replayed.match.template_specs())
    header["config_digest"] = config_digest(config)
    write_atomic(run / "run.json", _dump(header))
    folder = RunDir(run)
    log = folder.read_log()
    folder.create()
    timings = []
    for m in log:
        folder.save_match(m)  # what a resumed tournament reads
        for r in m.rounds:
            for answer in (r.answer_a, r.answer_b):
                if answer is not None:
                    timings.append(AnswerTiming(m.match_id, r.index, answer.agent, 1.5, 0.5))
    folder.append_timings(timings)
    (root / "against.csv").write_text("oracle,1\nreact-bm25,2\nreact-dense,3\n", encoding="utf-8")
    with _quiet():
        assert main(["run", "compare", str(run), "--against", str(root / "against.csv")]) == 0
        assert main(["run", "rank", str(run)]) == 0
    # an earlier replay of the seed run, holding files someone else put there
    out = root / "seed-out"
    out.mkdir()
    write_atomic(out / "run.json", _dump({**header, "replay_of": str(run.resolve())}))
    shutil.copy(run / "leaderboard.md", out / "leaderboard.md")
    (out / "matches").mkdir()
    shutil.copy(next((run / "matches").glob("*.json")), out / "matches")
    for name in FOREIGN:
        (out / name).write_text("not drarena's\n", encoding="utf-8")
    return root


@contextlib.contextmanager
def _quiet() -> Iterator[io.StringIO]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        yield err


def _case(work: Path, name: str, data: bytes) -> tuple[Path, Path]:
    """A fresh copy of the seed run and its earlier replay, `name` (a path inside the run,
    or out/<path> inside the replay's folder) replaced by `data`."""
    case = work / "case"
    shutil.rmtree(case, ignore_errors=True)
    run, out = case / "run", case / "out"
    shutil.copytree(work / "seed", run)
    shutil.copytree(work / "seed-out", out)
    # the earlier replay names this copy as its source
    header = json.loads((out / "run.json").read_text(encoding="utf-8"))
    write_atomic(out / "run.json", _dump({**header, "replay_of": str(run.resolve())}))
    target = out / name.removeprefix("out/") if name.startswith("out/") else run / name
    target.write_bytes(data)
    return run, out


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _check_message(msg: str, name: str) -> None:
    """One line, naming the damaged file (its line or the match, for a JSONL file)."""
    msg = msg.strip()
    assert "\n" not in msg, msg
    base = Path(name).name
    if "holds a run of another config" in msg:
        return  # a resume's config check: the folder is named, the header read fine
    assert base in msg, (base, msg)
    if base.endswith(".jsonl"):
        # its line, or the match
        assert re.search(re.escape(base) + r":\d+|match |no matches in the log", msg), msg


def _rank(run: Path, name: str) -> None:
    before = _files(run)
    with _quiet() as err:
        rc = main(["run", "rank", str(run), "--json"])
    after = _files(run)
    if rc == 2:
        text = err.getvalue().strip()
        assert text.startswith("drarena: error: "), text
        _check_message(text, name)
        assert after == before, "a refused rank changed the folder"
        return
    assert rc == 0, err.getvalue()
    assert set(before) <= set(after), "rank deleted a file"
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed <= WRITTEN_BY_RANK, changed


def _guarded(call: Callable[[], object], name: str, folders: list[Path]) -> bool:
    """Run `call` (stopped at check_config); True when it got there. A DrarenaError is one line
    naming `name` and leaves every folder as it was."""
    before = [_files(f) for f in folders]
    try:
        with mock.patch("drarena.runs.execute.check_config", _stop), _quiet():
            call()
    except _Reached:
        return True
    except DrarenaError as exc:
        _check_message(str(exc), name)
        assert [_files(f) for f in folders] == before, "a refused read changed a folder"
        return False
    raise AssertionError(f"{call} returned without reaching check_config")


def _replay(run: Path, out: Path, name: str) -> bool:
    out_before = _files(out)
    src_before = _files(run)
    reached = _guarded(
        lambda: _main_raising(["run", "replay", str(run), "--out", str(out)]), name, [run, out]
    )
    assert _files(run) == src_before, "a replay changed its source run"
    if reached:  # only a replay's own files went, someone else's are all there
        after = _files(out)
        for path, data in out_before.items():
            if path not in after:
                assert path in REPLAY_FILES or re.fullmatch(r"matches/[^/]+\.json", path), path
            else:
                assert after[path] == data, path
        for foreign in FOREIGN:
            assert foreign in after
    return reached


def _main_raising(args: list[str]) -> None:
    """main(args), its printed DrarenaError raised again (so _guarded sees the message)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(args)
    if rc == 2:
        text = err.getvalue().strip()
        assert text.startswith("drarena: error: "), text
        raise DrarenaError(text.removeprefix("drarena: error: "))
    raise AssertionError(f"main returned {rc} without reaching check_config")


def _add_agent(run: Path, name: str) -> bool:
    args = ["run", "add-agent", str(run), "--name", "newbie", "--kind", "closed_book"]
    return _guarded(lambda: _main_raising([*args, "--no-serve"]), name, [run])


def _resume(work: Path, run: Path, name: str) -> bool:
    """A resumed tournament: the config it was started with, the folder as it is now."""
    seed_header = json.loads((work / "seed" / "run.json").read_text(encoding="utf-8"))
    config = parse_config(seed_header["config"], "seed")
    return _guarded(
        lambda: execute(
            config, RunDir(run), RunOptions(serve=False, cache_mode=CacheMode.READ_WRITE)
        ),
        name,
        [run],
    )


def _match_file(work: Path) -> str:
    return "matches/" + sorted(p.name for p in (work / "seed" / "matches").glob("*.json"))[0]


def _read_all(work: Path, name: str, data: bytes) -> None:
    """Every reader of `name`, on a fresh copy each (a successful one writes files)."""
    if name.startswith("out/"):
        _replay(*_case(work, name, data), name)
        return
    readers: list[Callable[[Path, Path], object]] = []
    if name in ("run.json", "matches.jsonl", "timings.jsonl", "comparison.json"):
        readers.append(lambda run, _: _rank(run, name))
    if name == "run.json":
        readers.append(lambda run, out: _replay(run, out, name))
    if name in ("run.json", "matches.jsonl"):
        readers.append(lambda run, _: _add_agent(run, name))
    if name == "run.json" or name.startswith("matches/"):
        readers.append(lambda run, _: _resume(work, run, name))
    for read in readers:
        read(*_case(work, name, data))


def _targets(work: Path) -> list[str]:
    return [
        "run.json",
        "matches.jsonl",
        _match_file(work),
        "timings.jsonl",
        "comparison.json",
        "out/run.json",
    ]


def _seed_bytes(work: Path, name: str) -> bytes:
    if name.startswith("out/"):
        return (work / "seed-out" / name.removeprefix("out/")).read_bytes()
    return (work / "seed" / name).read_bytes()


@given(st.data())
def test_mutated_bytes(work: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(_targets(work)))
    seed = _seed_bytes(work, name)
    blob = data.draw(st.one_of(mutated(seed), text_mutated(seed.decode("utf-8"))))
    _read_all(work, name, blob)


# Field values a damaged or edited file may hold: wrong types, odd numbers, names.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["oracle", "closed_book", "react-bm25", "TIE", "A_WINS", "DEPTH", "../x", "", "nan"]
    ),
    st.lists(st.integers(-3, 3), max_size=2),
    st.dictionaries(st.sampled_from(["path", "captures", "kind", "a"]), st.none(), max_size=2),
)

_LIVE = st.one_of(
    _VALUES,
    st.fixed_dictionaries(
        {},
        optional={
            "captures": st.one_of(
                _VALUES,
                st.lists(
                    st.one_of(_VALUES, st.fixed_dictionaries({}, optional={"path": _VALUES})),
                    max_size=2,
                ),
            ),
            "replayed": st.booleans(),
        },
    ),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside a JSON value (lists by index)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*at, k)
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*at, i)
            yield from _paths(v, (*at, i))


def _edit(value: Any, path: tuple[Any, ...], new: Any, delete: bool) -> None:
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    if delete and isinstance(parent, dict):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = new


def _fuzz_fields(data: st.DataObject, value: Any) -> Any:
    paths = list(_paths(value))
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3)):
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier edit moved it
            _edit(value, path, data.draw(_VALUES), data.draw(st.booleans()))
    return value


@given(st.data())
@example(None)
def test_mutated_fields(work: Path, data: st.DataObject | None) -> None:
    """Each file stays well-formed JSON (one object a line for JSONL); its fields are fuzzed:
    wrong types, missing keys, values from elsewhere."""
    if data is None:  # the seed itself reads cleanly everywhere
        for name in _targets(work):
            _read_all(work, name, _seed_bytes(work, name))
        return
    name = data.draw(st.sampled_from(_targets(work)))
    text = _seed_bytes(work, name).decode("utf-8")
    if name.endswith(".jsonl"):
        lines = [json.loads(line) for line in text.splitlines()]
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = _fuzz_fields(data, lines[i])
        blob = "".join(json.dumps(v, sort_keys=True) + "\n" for v in lines)
    else:
        value = _fuzz_fields(data, json.loads(text))
        if name == "run.json" and data.draw(st.booleans()):  # a live run's header
            value["live"] = data.draw(_LIVE)
            if data.draw(st.booleans()):
                with contextlib.suppress(KeyError, TypeError):
                    value["config"]["offline"] = False
        blob = _dump(value)
    _read_all(work, name, blob.encode())


def test_the_seed_reads_cleanly(work: Path) -> None:
    """Unmutated, every reader gets through (so the fuzz tests reach what they fuzz)."""
    _rank(_case(work, "run.json", _seed_bytes(work, "run.json"))[0], "run.json")
    assert _replay(*_case(work, "run.json", _seed_bytes(work, "run.json")), "run.json")
    assert _add_agent(_case(work, "run.json", _seed_bytes(work, "run.json"))[0], "run.json")
    run, _ = _case(work, "run.json", _seed_bytes(work, "run.json"))
    assert _resume(work, run, "run.json")


# ---- regression tests: one per defect found ----------------------------------------------


def _seed_lines(work: Path) -> list[dict[str, Any]]:
    text = (work / "seed" / "matches.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_a_wrong_field_type_in_a_match_record_is_one_line(work: Path) -> None:
    first = {**_seed_lines(work)[0], "a": None}
    run, _ = _case(work, "matches.jsonl", (json.dumps(first) + "\n").encode())
    with pytest.raises(DrarenaError) as log_err:
        RunDir(run).read_log()
    (run / _match_file(work)).write_text(json.dumps(first), encoding="utf-8")
    with pytest.raises(DrarenaError) as file_err:
        RunDir(run).finished()
    assert "\n" not in str(log_err.value), str(log_err.value)
    assert "\n" not in str(file_err.value), str(file_err.value)


def test_add_agent_names_a_damaged_run_json(work: Path) -> None:
    header = json.loads((work / "seed" / "run.json").read_text(encoding="utf-8"))
    header["config"]["models"]["roles"]["agent"]["model"] = None
    run, _ = _case(work, "run.json", _dump(header).encode())
    args = ["run", "add-agent", str(run), "--name", "newbie", "--kind", "closed_book"]
    before = _files(run)
    with (
        pytest.raises(DrarenaError, match=r"run\.json: config: models\.roles\.agent\.model"),
        mock.patch("drarena.runs.execute.check_config", _stop),
        _quiet(),
    ):
        _main_raising([*args, "--no-serve"])
    assert _files(run) == before


@pytest.mark.parametrize(
    "live", [None, {"captures": [{}]}, {"captures": "ab"}, {"captures": [{"path": 1}]}, {}]
)
def test_replay_of_a_damaged_live_block_is_one_line(work: Path, live: Any) -> None:
    header = json.loads((work / "seed" / "run.json").read_text(encoding="utf-8"))
    header["config"]["offline"] = False
    header["live"] = live
    run, out = _case(work, "run.json", _dump(header).encode())
    before = _files(out)
    with (
        pytest.raises(DrarenaError, match=r"run\.json"),
        mock.patch("drarena.runs.execute.check_config", _stop),
        _quiet(),
    ):
        replay(RunDir(run), RunDir(out))
    assert _files(out) == before, "a refused replay deleted the earlier replay's files"


def test_a_line_that_is_not_utf8_is_named_by_its_line(work: Path) -> None:
    seed = _seed_bytes(work, "matches.jsonl")
    first, rest = seed.split(b"\n", 1)
    run, _ = _case(work, "matches.jsonl", first + b"\n" + b"\xff" + rest)
    with pytest.raises(DrarenaError, match=r"matches\.jsonl:2: "):
        RunDir(run).read_log()


def test_a_deeply_nested_match_line_is_one_line(work: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    _read_all(work, "matches.jsonl", (deep + "\n").encode())


def test_a_huge_match_line_is_not_read_whole(work: Path) -> None:
    """A line over the cap is refused having read only the cap's worth of it (the cap made
    1 MB here: the real one, MAX_RECORD_BYTES, is far above any real record)."""
    run, _ = _case(work, "matches.jsonl", b'{"a": "' + b"x" * 20_000_000 + b'"}\n')
    tracemalloc.start()
    try:
        with (
            mock.patch("drarena.ledger.folder.MAX_RECORD_BYTES", 1_000_000),
            pytest.raises(DrarenaError, match=r"matches\.jsonl:1: line longer than 1000000 "),
        ):
            RunDir(run).read_log()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, peak


def test_a_line_separator_inside_a_record_is_not_a_line_break(work: Path) -> None:
    """to_json writes U+2028 and U+0085 unescaped (ensure_ascii=False): matches.jsonl is split
    on newlines only, or such a record would be read as two broken lines."""
    run, _ = _case(work, "matches.jsonl", _seed_bytes(work, "matches.jsonl"))
    folder = RunDir(run)
    log = folder.read_log()
    odd = dataclasses.replace(log[0], void_reason="a\u2028b\x85c")
    folder.write_log([odd, *log[1:]])
    assert folder.read_log() == [odd, *log[1:]]
