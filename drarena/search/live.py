"""The seam for live-web search: registered now, so configs can name it, built by live mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from drarena.errors import DrarenaError


def build(snapshot_dir: Path, index_root: Path, **args: Any) -> NoReturn:
    raise DrarenaError(
        "retriever 'live' searches the live web and arrives with live mode; on the frozen web "
        "use bm25, dense or hybrid"
    )
