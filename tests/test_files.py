"""drarena.files: bounded reads of files drarena did not write, and the end of a log.

Why: every reader of a snapshot, index or run folder that may be someone else's goes through
read_bounded, and every "show the server's log" through read_tail; a 10 GB file must cost
only the limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from drarena import files
from drarena.errors import DrarenaError
from drarena.files import read_bounded, read_tail


def test_read_bounded_reads_up_to_the_limit_and_refuses_past_it(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, 10) == b"x" * 10
    with pytest.raises(DrarenaError, match=r"f\.json: larger than 9 bytes \(split it\)$"):
        read_bounded(path, 9, "split it")


def test_read_bounded_names_the_file_and_its_kind(tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    with pytest.raises(DrarenaError, match=r"gone\.json: cannot read tree file \(No such file"):
        read_bounded(missing, 10, what="tree file")
    with pytest.raises(DrarenaError, match=r"^no trees here$"):
        read_bounded(missing, 10, missing="no trees here")
    with pytest.raises(DrarenaError, match=rf"{tmp_path.name}: cannot read \(Is a directory\)"):
        read_bounded(tmp_path, 10, missing="not used: the folder exists")


class CountingFile:
    """A file whose reads are counted: what showing a log's end costs."""

    def __init__(self, f: Any, counted: list[int]) -> None:
        self.f, self.counted = f, counted

    def __enter__(self) -> CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()

    def seek(self, *args: int) -> int:
        return int(self.f.seek(*args))

    def read(self, n: int = -1) -> Any:
        data = self.f.read(n)
        self.counted.append(len(data))
        return data


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted: list[int] = []
    real_open = Path.open

    def counting_open(path: Path, *args: Any, **kwargs: Any) -> CountingFile:
        return CountingFile(real_open(path, *args, **kwargs), counted)

    monkeypatch.setattr(Path, "open", counting_open)
    return counted


LOGS = {
    "plain": b"".join(b"INFO line %d of the server log\n" % i for i in range(5_000)),
    "multibyte": ("é€😀 said \u2028 something\r\n" * 5_000).encode(),
    "bad bytes": b"ok \xff\xfe\x80\x80 \xe2\x82 half \xf0\x9f\x98\n" * 5_000,
    "no newline at the end": b"a\nb\nc" * 30_000,
    "one long line": b"y" * 100_000,
    "short": b"one\ntwo\n",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("limit", [1, 5, 64, 1000, 1 << 20])
def test_read_tail_is_the_whole_texts_end_from_a_line(
    name: str, limit: int, tmp_path: Path
) -> None:
    """The tail is the end of what reading the whole file gives, starting at a line (or the
    whole file when it fits), and never more than `limit` bytes of it."""
    data = LOGS[name]
    log = tmp_path / "server.log"
    log.write_bytes(data)
    tail = read_tail(log, limit)
    if len(data) <= limit:
        assert tail == data.decode("utf-8", errors="replace")
        return
    window = data[-limit:]
    cut = window.find(b"\n")
    expected = window[cut + 1 :] if cut >= 0 else b""
    assert tail == expected.decode("utf-8", errors="replace")
    assert data.endswith(expected) and len(expected) <= limit
    # what it shows is a suffix of the whole file's lines: the last line is whole
    if expected:
        assert data.decode("utf-8", errors="replace").endswith(tail)


def test_read_tail_reads_only_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "server.log"
    with log.open("wb") as f:
        f.write(LOGS["plain"] * 100)  # ~17 MB
    counted = count_reads(monkeypatch)
    assert read_tail(log).endswith("INFO line 4999 of the server log\n")
    assert sum(counted) == files.TAIL_BYTES
    assert read_tail(tmp_path / "missing.log") == ""


def test_read_tail_of_something_unreadable_is_empty(tmp_path: Path) -> None:
    assert read_tail(tmp_path) == ""  # a folder
    if os.geteuid() != 0:  # root reads any file
        locked = tmp_path / "locked.log"
        locked.write_text("secret\n")
        locked.chmod(0)
        assert read_tail(locked) == ""


def test_read_bounded_allocates_what_the_file_holds_not_the_limit(tmp_path: Path) -> None:
    """Regression: f.read(limit + 1) allocated the whole limit before reading, so a 2 KB
    snapshot manifest read under its 1 GiB limit cost a 1 GiB allocation (tracemalloc)."""
    import tracemalloc

    small = tmp_path / "manifest.json"
    small.write_bytes(b"{}" * 1000)
    big = tmp_path / "big.bin"
    big.write_bytes(b"z" * (3 * files.READ_CHUNK + 5))
    tracemalloc.start()
    try:
        assert read_bounded(small, 1 << 30) == b"{}" * 1000
        small_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        assert read_bounded(big, 1 << 30) == b"z" * (3 * files.READ_CHUNK + 5)
        big_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert small_peak < files.READ_CHUNK + (64 << 10)
    assert big_peak < 3 * (3 * files.READ_CHUNK + 5)  # the chunks and their join
    with pytest.raises(DrarenaError, match="larger than"):
        read_bounded(big, 3 * files.READ_CHUNK)


def test_a_path_with_a_nul_is_one_line(tmp_path: Path) -> None:
    """Regression: open() raises ValueError ("embedded null byte") for such a path, which got
    past read_bounded as a traceback (a prompt file given as `--prompt 'a\\x00.txt'`)."""
    with pytest.raises(DrarenaError, match=r"a\\x00\.txt: cannot read \(embedded null byte\)"):
        read_bounded(tmp_path / "a\x00.txt", 10)


# --- writing into folders that may have come from elsewhere (issue 38, item 1) --------------


def test_temporary_names_are_unique_and_recognised() -> None:
    names = {files.temp_name("docs.jsonl") for _ in range(100)}
    assert len(names) == 100
    for name in names:
        assert name.startswith("docs.jsonl.") and name.endswith(".tmp")
        assert files.temp_target(name) == "docs.jsonl"
        assert files.is_temp_of("docs.jsonl", name)
        assert not files.is_temp_of("docs.json", name)
    assert files.temp_target("run.json.tmp") == "run.json"  # an older drarena's fixed name
    assert files.temp_target("run.json") is None
    assert files.temp_target(".tmp") is None


def test_write_atomic_never_follows_a_link_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    target = tmp_path / "out.json"
    (tmp_path / "out.json.tmp").symlink_to(victim)  # the fixed name drarena once used
    files.write_atomic(target, "new")
    assert victim.read_text() == "precious" and target.read_text() == "new"
    target.unlink()
    target.symlink_to(victim)  # a link at the target itself is replaced, not written through
    files.write_atomic(target, b"bytes")
    assert victim.read_text() == "precious" and target.read_bytes() == b"bytes"
    assert not target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "out.json.tmp", "victim"]


def test_atomic_output_removes_its_file_when_the_block_fails(tmp_path: Path) -> None:
    target = tmp_path / "docs.jsonl"
    with pytest.raises(RuntimeError), files.atomic_output(target) as fh:
        fh.write("half")
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def _fill_up(path: Path, data: int) -> subprocess.CompletedProcess[str]:
    """write_atomic in a child whose files may not grow past 4 KiB (RLIMIT_FSIZE: what a full
    disk does to a write, without a small filesystem to fill)."""
    code = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from drarena.errors import DrarenaError\n"
        "from drarena.files import write_atomic\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        f"    write_atomic(Path(sys.argv[1]), 'x' * {data})\n"
        "except DrarenaError as exc:\n"
        "    print(exc)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False
    )


def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    target = tmp_path / "leaderboard.md"
    target.write_text("the old board\n")
    done = _fill_up(target, 100_000)
    assert done.returncode == 0 and done.stderr == ""
    line = done.stdout.strip()
    assert "leaderboard.md: no room left to write it (File too large)" in line
    assert "\n" not in line
    assert target.read_text() == "the old board\n"
    assert [p.name for p in tmp_path.iterdir()] == ["leaderboard.md"]


def test_open_append_refuses_links_and_what_is_not_a_regular_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link.jsonl").symlink_to(victim)
    with pytest.raises(DrarenaError, match=r"link\.jsonl: a link, not a file drarena wrote"):
        files.open_append(tmp_path / "link.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")  # opening it to write would wait for a reader
    with pytest.raises(DrarenaError, match=r"fifo\.jsonl: not a regular file"):
        files.open_append(tmp_path / "fifo.jsonl")
    with files.open_append(tmp_path / "ok.jsonl") as out:
        out.write("a\n")
    with files.open_append(tmp_path / "ok.jsonl") as out:
        out.write("b\n")
    assert (tmp_path / "ok.jsonl").read_text() == "a\nb\n" and victim.read_text() == "precious"


def test_open_replacing_replaces_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    log = tmp_path / "server.log"
    log.symlink_to(victim)
    with files.open_replacing(log) as out:
        out.write(b"started\n")
    assert victim.read_text() == "precious" and log.read_bytes() == b"started\n"
    assert not log.is_symlink()


def test_own_folder_refuses_a_link_and_a_file(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "matches").symlink_to(elsewhere)
    with pytest.raises(DrarenaError, match=r"matches: a link, not a folder drarena made"):
        files.own_folder(tmp_path / "matches")
    (tmp_path / "trees").write_text("")
    with pytest.raises(DrarenaError, match=r"trees: exists and is not a folder"):
        files.own_folder(tmp_path / "trees")
    assert files.own_folder(tmp_path / "a" / "b").is_dir()


def test_read_bounded_refuses_a_device_and_does_not_wait_on_a_fifo(tmp_path: Path) -> None:
    """What drarena reads may not be its file: a device is one line (a link to /dev/zero was
    read until memory ran out), and a FIFO no one writes reads as empty, not for ever."""
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(DrarenaError, match=r"zero: cannot read run header \(a device"):
        read_bounded(tmp_path / "zero", 1 << 30, what="run header")
    os.mkfifo(tmp_path / "fifo")
    assert read_bounded(tmp_path / "fifo", 10) == b""
    with pytest.raises(DrarenaError, match=r"cannot read \(Is a directory\)"):
        read_bounded(tmp_path, 10)
