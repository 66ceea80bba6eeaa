"""The CPU Examiner's serving speed: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) on llama.cpp
against the peer measured in the same run, SmolLM2-135M-Instruct on vLLM's CPU build.

Servers run one at a time (started, measured, stopped). For each: seconds to ready; prompt
tokens/s (a ~PROMPT-token prompt, one completion token; wall time, client side); generation
tokens/s (a short prompt, GEN completion tokens; the prompt's share of the wall time taken
out at the measured prompt rate); and the wall time of one real judge call
(drarena.examiner.judge.judge_answers, pairwise, one order, on a fixed task and two fixed
answers). The last lines are Qwen's figures as ratios of the peer's. The load average is
printed with each server: on a shared machine it decides the figures more than the model.

Usage: .venv/bin/python bench/bench_cpu_examiner.py [--threads 2,1] [--skip-peer]
(`make bench-cpu-examiner`; Qwen needs `make setup-qwen`, the peer `make setup-models`).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from drarena.agents.common import answer_tool, unwrap_text_calls
from drarena.errors import DrarenaError
from drarena.examiner.judge import AnswerForJudge, JudgeMode, JudgeOptions, judge_answers
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.models import serve
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, Sampling
from drarena.models.structured import complete_json

DOC = "https://docs.python.org/3/library/zipfile.html"
TASK = Task(
    question="How can a Python program add files to an existing ZIP archive and read one "
    "member back without extracting the whole archive?",
    word_limit_instruction="Answer in 50 to 150 words.",
    word_limit=(50, 150),
    checklist_depth=(
        ChecklistItem("Opens the archive with mode 'a' to append members", DOC),
        ChecklistItem("Reads one member with ZipFile.read or ZipFile.open", DOC),
    ),
    checklist_width=(
        ChecklistItem("Mentions the compression argument, e.g. ZIP_DEFLATED", DOC),
        ChecklistItem("Uses ZipFile as a context manager so it is closed", DOC),
    ),
    rationale="bench task",
)
GOOD = AnswerForJudge(
    report="Open the archive in append mode: `with zipfile.ZipFile('a.zip', 'a', "
    "compression=zipfile.ZIP_DEFLATED) as z: z.write('new.txt')` adds a member and closes "
    "the file on exit [1]. To read one member without extracting everything, "
    "`zipfile.ZipFile('a.zip').read('new.txt')` returns its bytes, or `open('new.txt')` "
    "gives a file-like object [1].\n\n[1]: " + DOC,
    cited=1,
    valid=1,
    fabricated=0,
)
POOR = AnswerForJudge(
    report="ZIP files are compressed archives. Python has modules for many formats and "
    "you can usually unzip the archive with a tool and zip it again afterwards.",
    cited=0,
    valid=0,
    fabricated=0,
)
FILLER = (
    "The zipfile module provides tools to create, read, write, append, and list a ZIP "
    "file. It supports decryption of encrypted files and several compression methods. "
)


@dataclass(frozen=True)
class Figures:
    label: str
    ready_s: float
    prompt_tps: float
    gen_tps: float
    judge_s: float
    load: float


def client(handle: serve.ServerHandle, max_tokens: int) -> ModelClient:
    role = ModelRole(
        model=handle.litellm_model,
        api_base=handle.api_base,
        sampling=Sampling(temperature=0.0, max_tokens=max_tokens, seed=0),
        timeout_s=1800,
    )
    return ModelClient(ModelsConfig(roles={"r": role}, concurrency=2))


async def measure(
    handle: serve.ServerHandle,
    prompt_tokens: int,
    gen_tokens: int,
    judge_call: bool,
    checks: bool = False,
) -> list[float]:
    one = client(handle, 1)
    await one.complete("r", [{"role": "user", "content": "Say OK."}])  # warm-up
    long_prompt = FILLER * max(1, prompt_tokens // 30)
    started = time.monotonic()
    done = await one.complete(
        "r", [{"role": "user", "content": f"{long_prompt}\nSummarise the text above."}]
    )
    prompt_tps = done.prompt_tokens / (time.monotonic() - started)
    gen = client(handle, gen_tokens)
    started = time.monotonic()
    done = await gen.complete(
        "r", [{"role": "user", "content": "List the Python standard library modules you know."}]
    )
    wall = time.monotonic() - started
    decode_s = max(wall - done.prompt_tokens / prompt_tps, 1e-6)
    gen_tps = done.completion_tokens / decode_s
    if checks:
        await protocol_checks(handle)
    if not judge_call:
        return [prompt_tps, gen_tps, math.nan]
    judge = client(handle, 512)
    started = time.monotonic()
    await judge_answers(
        judge, "r", TASK, GOOD, POOR, JudgeOptions(mode=JudgeMode.PAIRWISE, orders=1)
    )
    return [prompt_tps, gen_tps, time.monotonic() - started]


async def protocol_checks(handle: serve.ServerHandle) -> None:
    """What the Examiner and agents need: JSON under a schema, and a forced answer call
    (native, written as text and unwrapped, or missing)."""
    schema = {
        "type": "object",
        "properties": {"verdict": {"enum": ["A", "B"]}, "reason": {"maxLength": 80}},
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    }
    started = time.monotonic()
    try:
        value = await complete_json(
            client(handle, 60),
            "r",
            [{"role": "user", "content": "Capital of France? A: Lyon. B: Paris. JSON only."}],
            schema,
            name="pick",
        )
        print(f"  json_schema: valid {value[0]} ({time.monotonic() - started:.0f} s)", flush=True)
    except DrarenaError as exc:
        print(f"  json_schema: FAILED {str(exc)[:200]}", flush=True)
    started = time.monotonic()
    done = await client(handle, 120).complete(
        "r",
        [
            {"role": "system", "content": "Answer with the answer tool."},
            {"role": "user", "content": "What does zipfile do? Write 10 to 30 words."},
        ],
        tools=[answer_tool((10, 30))],
        tool_choice={"type": "function", "function": {"name": "answer"}},
    )
    unwrapped = unwrap_text_calls(done, ("answer",))
    form = (
        "native tool call"
        if done.tool_calls
        else "written as text, unwrapped"
        if unwrapped.tool_calls
        else f"no call (text {done.text[:120]!r})"
    )
    print(f"  forced answer call: {form} ({time.monotonic() - started:.0f} s)", flush=True)


def run_one(
    label: str,
    start: Callable[[], serve.ServerHandle],
    prompt_tokens: int,
    gen_tokens: int,
    judge_call: bool = True,
    checks: bool = False,
) -> Figures:
    started = time.monotonic()
    handle = start()
    ready = time.monotonic() - started
    try:
        prompt_tps, gen_tps, judge_s = asyncio.run(
            measure(handle, prompt_tokens, gen_tokens, judge_call, checks)
        )
    finally:
        handle.stop()
    figures = Figures(label, ready, prompt_tps, gen_tps, judge_s, os.getloadavg()[0])
    print(
        f"{label:<34} ready {ready:6.1f} s | prompt {prompt_tps:7.1f} tok/s | "
        f"gen {gen_tps:6.2f} tok/s | judge call {judge_s:7.1f} s | load {figures.load:.1f}",
        flush=True,
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", default="2", help="llama.cpp thread counts to measure")
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--gen-tokens", type=int, default=48)
    parser.add_argument("--skip-peer", action="store_true", help="no SmolLM2/vLLM run")
    parser.add_argument(
        "--vllm-model-dir",
        type=Path,
        default=None,
        help="also serve this HF folder with vLLM's CPU build: the 1.5B GGUF converted to "
        "bf16 (`.venv-vllm/bin/python scripts/vllm_convert_gguf.py GGUF DIR`), the other "
        "serving option for the same model",
    )
    parser.add_argument("--checks", action="store_true", help="json_schema + tool call check")
    parser.add_argument(
        "--no-judge", action="store_true", help="skip the judge call (minutes under load)"
    )
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}", flush=True)
    results: list[Figures] = []
    for threads in [int(t) for t in args.threads.split(",")]:
        results.append(
            run_one(
                f"qwen1.5b-cpu llama.cpp {threads} thr",
                lambda t=threads: serve.start_llamacpp_server("qwen1.5b-cpu", threads=t),  # type: ignore[misc]
                args.prompt_tokens,
                args.gen_tokens,
                not args.no_judge,
                args.checks,
            )
        )
    if args.vllm_model_dir is not None:
        results.append(
            run_one(
                "qwen1.5b bf16 vLLM CPU",
                lambda: serve.start_cpu_server(model_dir=args.vllm_model_dir),
                args.prompt_tokens,
                args.gen_tokens,
                not args.no_judge,
            )
        )
    if not args.skip_peer:
        peer = run_one(
            "smollm2-135m vLLM CPU (peer)",
            # DRARENA_MODEL_API_BASE: a SmolLM2 server already running is measured instead
            # (no second vLLM on a loaded machine; it is never stopped).
            lambda: (
                serve.external_server(os.environ["DRARENA_MODEL_API_BASE"])
                if os.environ.get("DRARENA_MODEL_API_BASE")
                else serve.start_cpu_server()
            ),
            args.prompt_tokens,
            args.gen_tokens,
            not args.no_judge,
        )
        for r in results:
            print(
                f"{r.label} / peer: prompt x{r.prompt_tps / peer.prompt_tps:.2f}, "
                f"gen x{r.gen_tps / peer.gen_tps:.2f}, judge call x{r.judge_s / peer.judge_s:.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
