"""The CPU Examiner's setup pieces without the 1.1 GB model: joining and verifying a split
file (a small fake split), the llama.cpp server command, and MODEL=<name> dispatch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.models import serve
from drarena.models.gguf_parts import PartedFile, join_parts, main, verify_file


def fake_split(tmp_path: Path) -> tuple[list[Path], PartedFile]:
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 1000, b"tail"]
    parts = []
    for i, chunk in enumerate(chunks, 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        parts.append(path)
    whole = b"".join(chunks)
    return parts, PartedFile("fake.gguf", len(whole), hashlib.sha256(whole).hexdigest())


def test_parts_join_in_order_and_verify(tmp_path: Path) -> None:
    parts, expected = fake_split(tmp_path)
    dest = join_parts(parts, tmp_path / "out" / "fake.gguf", expected)
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert not (tmp_path / "out" / "fake.gguf.partial").exists()
    mtime = dest.stat().st_mtime_ns
    assert join_parts(parts, dest, expected) == dest and dest.stat().st_mtime_ns == mtime


def test_a_wrong_hash_keeps_nothing_and_says_so_in_one_line(tmp_path: Path) -> None:
    parts, expected = fake_split(tmp_path)
    swapped = [parts[1], parts[0], parts[2]]  # same size, wrong order
    dest = tmp_path / "fake.gguf"
    with pytest.raises(DrarenaError, match=r"fake.gguf: sha256 [0-9a-f]{64} does not match") as e:
        join_parts(swapped, dest, expected)
    assert "\n" not in str(e.value)
    assert not dest.exists() and not (tmp_path / "fake.gguf.partial").exists()


def test_wrong_size_missing_part_and_bad_existing_file(tmp_path: Path) -> None:
    parts, expected = fake_split(tmp_path)
    with pytest.raises(DrarenaError, match=r"the 2 parts hold .* expected"):
        join_parts(parts[:2], tmp_path / "a.gguf", expected)
    with pytest.raises(DrarenaError, match=r"part03\.bin\.gone: model part missing"):
        join_parts([*parts[:2], tmp_path / "part03.bin.gone"], tmp_path / "a.gguf", expected)
    existing = tmp_path / "b.gguf"
    existing.write_bytes(b"x" * expected.size)
    with pytest.raises(DrarenaError, match="does not match the pinned"):
        join_parts(parts, existing, expected)
    assert existing.read_bytes() == b"x" * expected.size  # not ours to delete
    with pytest.raises(DrarenaError, match="bytes, expected"):
        verify_file(parts[0], expected)


def test_module_command_prints_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts, _ = fake_split(tmp_path)  # not the pinned Qwen file
    assert main([str(tmp_path / "q.gguf"), *map(str, parts)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected 1117320768" in err


def test_llamacpp_command_serves_one_gguf_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRARENA_LLAMACPP_TOOL_CALLS", raising=False)
    command = serve.llamacpp_command(
        Path("/v/bin/python"), Path("/m/q.gguf"), 8002, "qwen", parallel=2, threads=2
    )
    assert command[0] == "/v/bin/python" and command[1].endswith("scripts/llamacpp_server.py")
    flags = dict(zip(command[2::2], command[3::2], strict=True))
    assert flags == {
        "--model": "/m/q.gguf",
        "--alias": "qwen",
        "--host": "127.0.0.1",
        "--port": "8002",
        "--ctx-per-slot": str(serve.CPU_MAX_MODEL_LEN),
        "--parallel": "2",
        "--threads": "2",
        "--tool-calls": "native",
    }
    assert (serve.REPO / "scripts" / "llamacpp_server.py").is_file()


def test_tool_call_relay_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRARENA_LLAMACPP_TOOL_CALLS", "relay")
    command = serve.llamacpp_command(Path("/p"), Path("/m.gguf"), 8002, "qwen", threads=1)
    assert command[-2:] == ["--tool-calls", "relay"]
    monkeypatch.setenv("DRARENA_LLAMACPP_TOOL_CALLS", "grammar")
    with pytest.raises(DrarenaError, match="DRARENA_LLAMACPP_TOOL_CALLS must be native or relay"):
        serve.llamacpp_command(Path("/p"), Path("/m.gguf"), 8002, "qwen", threads=1)


def test_default_threads_take_every_core_only_on_an_idle_machine() -> None:
    # idle 2-core machine (the main job after its set-up): both cores
    assert serve.default_threads(2, 0.0) == 2
    assert serve.default_threads(2, 0.4) == 2
    # busy (a test suite or another job beside it): all cores but one, never 0
    assert serve.default_threads(2, 0.5) == 1
    assert serve.default_threads(2, 20.0) == 1
    assert serve.default_threads(1, 0.0) == 1
    assert serve.default_threads(1, 5.0) == 1
    assert serve.default_threads(16, 0.1) == 16
    assert serve.default_threads(16, 3.0) == 15


def test_busy_cores_read_from_two_samples_of_proc_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    # 200 jiffies later: 50 user + 50 system + 100 idle, so half the time busy
    later = "cpu  150 0 150 900 0 0 0 0 0 0\ncpu0 1 2 3 4\n"
    monkeypatch.setattr(serve.time, "sleep", lambda s: stat.write_text(later))
    monkeypatch.setattr(serve.os, "cpu_count", lambda: 2)
    assert serve.busy_cores(0.0, stat) == pytest.approx(1.0)
    monkeypatch.setattr(serve.os, "getloadavg", lambda: (7.5, 0.0, 0.0))
    assert serve.busy_cores(0.0, tmp_path / "absent") == 7.5
    assert serve.busy_cores(0.01) >= 0.0  # this machine's own /proc/stat


def test_threads_default_from_cores_and_busy_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "usable_cores", lambda: 2)
    monkeypatch.setattr(serve, "busy_cores", lambda: 1.2)
    command = serve.llamacpp_command(Path("/p"), Path("/m.gguf"), 8002, "qwen")
    assert command[command.index("--threads") + 1] == "1"
    monkeypatch.setattr(serve, "busy_cores", lambda: 0.1)
    command = serve.llamacpp_command(Path("/p"), Path("/m.gguf"), 8002, "qwen")
    assert command[command.index("--threads") + 1] == "2"
    assert serve.usable_cores() >= 1


def test_named_model_without_setup_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRARENA_QWEN_GGUF", str(tmp_path / "absent.gguf"))
    with pytest.raises(DrarenaError, match=r"model qwen1.5b-cpu: .* run `make setup-qwen`"):
        serve.start_model("qwen1.5b-cpu")


def test_other_models_still_go_to_vllm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(serve, "has_gpu", lambda: False)
    seen: list[Path | None] = []

    def fake_cpu(port: int | None = None, *, model_dir: Path | None = None) -> None:
        seen.append(model_dir)

    monkeypatch.setattr(serve, "start_cpu_server", fake_cpu)
    serve.start_model(str(tmp_path))
    assert seen == [tmp_path]
