"""The real-agent tournament config (configs/agents/tournament.yaml) stays loadable as the
config schema moves, and every command it runs is a shipped adapter run from the agent's own
venv behind the frozen-web proxy. (The tournament itself is `make bench-agents`: slow.)"""

from __future__ import annotations

import ast
from pathlib import Path

from drarena.agents.external import CommandArgs
from drarena.config.tournament import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_real_agent_tournament_config_loads_with_proxied_command_agents() -> None:
    config = load_config(ROOT / "configs" / "agents" / "tournament.yaml")
    setup = (ROOT / "scripts" / "setup_agents.sh").read_text(encoding="utf-8")
    commands = [a for a in config.agents if a.kind == "command"]
    assert len(commands) >= 2 and any(a.kind != "command" for a in config.agents)
    for agent in commands:
        args = CommandArgs(**agent.args)
        assert args.web_proxy is True and args.model_role == "agent"
        assert isinstance(args.command, list)
        python, script = args.command
        assert python.startswith(".venv-agents/") and python.endswith("/bin/python")
        adapter = ROOT / script
        ast.parse(adapter.read_text(encoding="utf-8"))  # a real file, valid Python
        assert adapter.parent == ROOT / "configs" / "agents"
        # `make setup-agents` installs this venv: its name is a key of setup_agents.sh's table
        venv = python.split("/")[1]
        assert f"  [{venv}]=" in setup, f"{agent.name}: scripts/setup_agents.sh has no [{venv}]"
