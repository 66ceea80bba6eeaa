"""Which config, model and set-up `make tournament` picks (issue 15: the 1.5B CPU Examiner is the
main job's default; SmolLM2 is the smoke model behind MODEL=smollm2; CONFIG or a GPU MODEL as
before). These read `make -n`'s plan: nothing is installed, served or played.
"""

from __future__ import annotations

import pytest
from make_plans import make_dry_run


def plan(*args: str) -> tuple[str, list[str]]:
    """(the drarena tournament command line, the set-up scripts) `make tournament ARGS` runs."""
    out = make_dry_run("tournament", *args, drop=("MODEL", "CONFIG", "OFFLINE"))
    commands = [line for line in out.splitlines() if "drarena tournament " in line]
    assert len(commands) == 1, out
    command = commands[0][commands[0].index("drarena tournament ") :].strip()
    scripts = [s for s in ("setup_qwen.sh", "setup_vllm.sh") if f"scripts/{s}" in out]
    return " ".join(command.split()), scripts


@pytest.mark.parametrize(
    ("args", "command", "scripts"),
    [
        ((), "drarena tournament configs/demo-qwen.yaml --model qwen1.5b-cpu", ["setup_qwen.sh"]),
        (
            ("OFFLINE=1",),
            "drarena tournament configs/demo-qwen.yaml --model qwen1.5b-cpu",
            ["setup_qwen.sh"],
        ),
        (("MODEL=smollm2",), "drarena tournament configs/demo.yaml", ["setup_vllm.sh"]),
        (("CONFIG=configs/demo.yaml",), "drarena tournament configs/demo.yaml", ["setup_vllm.sh"]),
        (
            ("MODEL=Qwen/Qwen3-8B",),
            "drarena tournament configs/demo.yaml --model Qwen/Qwen3-8B",
            [],
        ),
        (("OFFLINE=0",), "drarena tournament configs/live-demo.yaml --live", ["setup_vllm.sh"]),
    ],
)
def test_main_job_plan(args: tuple[str, ...], command: str, scripts: list[str]) -> None:
    assert plan(*args) == (command, scripts)
