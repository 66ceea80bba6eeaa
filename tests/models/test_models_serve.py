"""Server manager lifecycle with a stand-in process (the real vLLM one is the live fixture)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.models.serve import (
    cpu_command,
    cpu_env,
    external_server,
    free_port,
    gpu_command,
    model_server,
    served_models,
    start_server,
)

# An OpenAI-style /v1/models endpoint, standing in for vLLM to test start/wait/stop.
STAND_IN = """
import http.server, json, sys, time
time.sleep(0.5)  # not ready at once
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": "stand-in"}]}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_start_waits_until_ready_and_stop_ends_the_process(tmp_path: Path) -> None:
    port = free_port()
    handle = start_server(
        [sys.executable, "-c", STAND_IN, str(port)],
        {},
        port,
        "stand-in",
        tmp_path / "server.log",
        ready_timeout_s=30,
    )
    process = handle.process
    assert process is not None and process.poll() is None
    assert served_models(handle.api_base) == ["stand-in"]
    handle.stop()
    assert process.poll() is not None and handle.process is None
    handle.stop()  # idempotent


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="checks the server through /proc")
def test_the_server_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """start_server's child gets SIGTERM from Linux when the process that started it dies
    (drarena.procs.die_with_parent; before, the prctl was looked up inside the child, and a
    parent that died before it left the server running)."""
    port = free_port()
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time, pathlib; from drarena.models.serve import start_server\n"
                f"h = start_server([sys.executable, '-c', {STAND_IN!r}, '{port}'], {{}}, {port}, "
                f"'stand-in', pathlib.Path({str(tmp_path / 's.log')!r}), 30)\n"
                "print(h.process.pid, flush=True); time.sleep(600)"
            ),
        ],
        stdout=subprocess.PIPE,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    # alive, and the parent's child, before the kill: the test cannot pass vacuously
    stat = Path(f"/proc/{child}/stat").read_text()
    assert int(stat.rsplit(")", 1)[1].split()[1]) == parent.pid
    parent.kill()  # SIGKILL: no cleanup code runs in the parent
    parent.wait()
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the server outlived its killed parent")


def test_a_server_that_dies_is_reported_with_its_log(tmp_path: Path) -> None:
    crash = "import sys; print('error: unknown flag --bogus'); sys.exit(3)"
    with pytest.raises(DrarenaError, match=r"exited with status 3 .*its last lines:$") as err:
        start_server([sys.executable, "-c", crash], {}, free_port(), "m", tmp_path / "s.log")
    assert "\n" not in str(err.value)  # the error's line; the log's lines come after it
    assert "unknown flag --bogus" in err.value.detail


def test_external_server_is_reused_and_never_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    owned = start_server(
        [sys.executable, "-c", STAND_IN, str(port)],
        {},
        port,
        "stand-in",
        tmp_path / "server.log",
        ready_timeout_s=30,
    )
    try:
        monkeypatch.setenv("DRARENA_MODEL_API_BASE", owned.api_base + "/")
        with model_server() as handle:
            assert (handle.api_base, handle.model, handle.process) == (
                owned.api_base,
                "stand-in",
                None,
            )
        assert owned.process is not None and owned.process.poll() is None  # still running
        monkeypatch.setenv("DRARENA_MODEL_NAME", "other")
        with pytest.raises(DrarenaError, match="DRARENA_MODEL_NAME=other: not served"):
            external_server(owned.api_base)
    finally:
        owned.stop()
    with pytest.raises(DrarenaError, match="no model server answers"):
        external_server(owned.api_base)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'[{"id": "m"}]', "did not answer"),
        (b'{"data": [{"name": "m"}]}', "did not answer"),
        (b'{"data": "m"}', "did not answer"),
        (b"[" * 100_000, "nested too deeply"),
        (b" " * (2 << 20), "more than 1048576 bytes"),
        (b"not json", "Expecting value"),
    ],
)
def test_a_models_list_of_the_wrong_shape_is_one_line(body: bytes, expected: str) -> None:
    """Any endpoint can answer /models (a user's --api-base or DRARENA_MODEL_API_BASE): its
    body is read capped and checked, and a bad one is one line naming the endpoint."""
    import http.server
    import threading

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api_base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with pytest.raises(ValueError, match=expected):
            served_models(api_base)
        with pytest.raises(DrarenaError, match=f"DRARENA_MODEL_API_BASE={api_base}: no model"):
            external_server(api_base)
    finally:
        server.shutdown()
        server.server_close()


def test_command_lines_follow_the_tested_recipe() -> None:
    cpu = cpu_command(Path("/v/bin/python"), Path("/m"), 8000)
    assert cpu[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    for flag in ("--enforce-eager", "--enable-auto-tool-choice", "parameter", "127.0.0.1"):
        assert flag in cpu
    # seeded sampling at temperature > 0 kills the CPU engine on a chunked prompt: no chunks,
    # and one step's token budget covers the whole context
    assert "--no-enable-chunked-prefill" in cpu
    budget = cpu[cpu.index("--max-num-batched-tokens") + 1]
    assert budget == cpu[cpu.index("--max-model-len") + 1]
    # compact JSON under a schema: a small model cannot pad a verdict with newlines
    outputs = json.loads(cpu[cpu.index("--structured-outputs-config") + 1])
    assert outputs == {"backend": "xgrammar", "disable_any_whitespace": True}
    # an engine step slower than vLLM's default 300 s must not stop the server (busy CPUs)
    assert int(cpu_env(2)["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"]) >= 1800
    gpu = gpu_command("Qwen/Qwen3-8B", 8001)
    assert gpu[1:3] == ["serve", "Qwen/Qwen3-8B"] and "--reasoning-parser" in gpu
    assert gpu[gpu.index("--tool-call-parser") + 1] == "hermes"


def test_a_failed_servers_log_is_shown_by_its_last_lines(tmp_path: Path) -> None:
    """_log_tail read the whole log to keep 15 lines; it now reads its end (files.read_tail),
    and the lines are the whole log's last ones."""
    import drarena.models.serve as serve

    log = tmp_path / "server.log"
    log.write_bytes(b"".join(b"INFO line %d of the server log\n" % i for i in range(200_000)))
    whole = log.read_text(encoding="utf-8").splitlines()
    assert serve._log_tail(log) == "\n".join(whole[-15:])
    assert serve._log_tail(log, 1) == "INFO line 199999 of the server log"
    assert serve._log_tail(tmp_path / "missing.log") == serve._log_tail(None) == ""
