#!/usr/bin/env bash
# Creates the venv and installs drarena with everything it needs, at the exact versions of the
# lock for this Python (locks/venv-py3.X.txt, as pip constraints) when there is one. Idempotent:
# make calls it only when pyproject.toml, the lock or this script changed (the Makefile's stamp).
#
# PYTHON: the interpreter (default python3.11, else python3); Python 3.11 to 3.13 are supported.
# VENV:   where (default .venv for 3.11 or when PYTHON is not given, .venv-py3.X for another
#         interpreter), so that interpreters never share a venv; the Makefile passes both.
# LOCK:   the constraints file (default locks/venv-py$PYVER.txt; LOCK=none installs the newest
#         versions pyproject.toml allows, which is how `make lock` refreshes the lock).
# TORCH:  where torch may come from when no CPU build of it is reachable (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.13.0
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
PYVER=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) \
  || { echo "setup: cannot run $PYTHON (set PYTHON=python3.11, python3.12 or python3.13)" >&2; exit 1; }
case "$PYVER" in
  3.11|3.12|3.13) ;;
  *) echo "setup: drarena needs Python 3.11 to 3.13 ($PYTHON is $PYVER: older ones lack what" \
          "drarena uses, e.g. datetime.UTC; 3.14 is untested, pyserini 1.6.0's stack has no" \
          "3.14 lock here)" >&2; exit 1 ;;
esac
VENV=${VENV:-.venv}
LOCK=${LOCK:-locks/venv-py$PYVER.txt}

if [ -x "$VENV/bin/python" ]; then
  have=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$have" = "$PYVER" ] || { echo "setup: $VENV holds Python $have, not $PYVER: give" \
    "VENV=.venv-py$PYVER (the Makefile does for PYTHON=...), or remove $VENV yourself" >&2; exit 1; }
else
  echo "setup: creating $VENV (Python $PYVER)"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade pip

# torch: its CPU build first, asked for by name (+cpu), because any other torch on PyPI is a
# CUDA build that pulls ~2.5 GB of nvidia-* packages (~5.5 GB in the venv). On this kind of
# machine the CPU wheel is a local file for Python 3.11 (pip's find-links); elsewhere it comes
# from PyTorch's CPU index. PyPI itself has no CPU build for Linux x86_64, so a Python whose
# CPU wheel cannot be reached stops here with one line, unless TORCH=pypi accepts the CUDA build
# (it runs on the CPU all the same; drarena never uses CUDA from this venv).
if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  "${PIP[@]}" install -q "torch==$TORCH_VERSION+cpu" 2>/dev/null \
    || "${PIP[@]}" install -q --timeout 20 --retries 1 "torch==$TORCH_VERSION+cpu" \
         --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
    || { [ "${TORCH:-}" = pypi ] && echo "setup: TORCH=pypi: PyPI's torch $TORCH_VERSION" \
           "(a CUDA build, ~2.5 GB of downloads)" && "${PIP[@]}" install -q "torch==$TORCH_VERSION"; } \
    || { echo "setup: no CPU build of torch $TORCH_VERSION for Python $PYVER is reachable (PyPI has" \
              "only CUDA builds for Linux x86_64 and download.pytorch.org/whl/cpu did not answer):" \
              "reach that index, or give TORCH=pypi to accept the CUDA build (~5.5 GB)" >&2; exit 1; }
fi

if [ "$LOCK" != none ] && [ -f "$LOCK" ] && ! "${PIP[@]}" install -q -c "$LOCK" -e '.[dev]'; then
  # pyproject.toml asks for what the lock rules out (a dependency was added or raised since
  # the lock was written): install unlocked, say so, and record no lock in run.json.
  echo "setup: $LOCK conflicts with pyproject.toml (see pip's words above): installing" \
       "unlocked; \`make lock\` writes a new lock once the tests pass" >&2
  LOCK=unlocked
fi
if [ "$LOCK" != none ] && [ "$LOCK" != unlocked ] && [ -f "$LOCK" ]; then
  lock_note="locked by $LOCK"
  sha=$(sha256sum "$LOCK" | cut -d' ' -f1)
  printf 'sha256:%s %s\n' "$sha" "$LOCK" > "$VENV/.drarena-lock"
else
  [ "$LOCK" = none ] || [ "$LOCK" = unlocked ] || echo "setup: no lock for Python $PYVER" \
    "($LOCK): the newest versions allowed; \`make lock PYTHON=$PYTHON\` writes one once the" \
    "tests pass"
  if [ "$LOCK" = none ]; then
    # A refresh: the newest versions pyproject.toml allows, torch kept at its pinned build.
    pin=$(mktemp); echo "torch==$TORCH_VERSION" > "$pin"
    "${PIP[@]}" install -q --upgrade --upgrade-strategy eager -c "$pin" -e '.[dev]'
    rm -f "$pin"
  else
    "${PIP[@]}" install -q -e '.[dev]'
  fi
  lock_note="unlocked"
  rm -f "$VENV/.drarena-lock"
fi
echo "setup: $VENV ready ($("$VENV/bin/python" -c 'import drarena, sys; print("drarena", drarena.__version__, "on Python", sys.version.split()[0])'), $lock_note)"
