#!/usr/bin/env bash
# Debian's Chromium for the report's browser test (headless). Idempotent: nothing to do when
# /usr/bin/chromium exists. Needs root (or passwordless sudo) for apt-get; without it, says so
# and leaves the browser test to skip with that reason.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
  echo "setup_browser: chromium missing and no root to apt-get it; the report browser test will skip" >&2
  exit 0
fi
echo "setup_browser: installing Debian's chromium (headless report test)"
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq chromium >/dev/null
