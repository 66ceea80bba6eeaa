"""File digests as every stage writes them into its manifest: 'sha256:<hex>'."""

from __future__ import annotations

import hashlib
from pathlib import Path

from drarena.files import open_input


def file_sha256(path: Path) -> str:
    """Streamed, so a large WARC or index file never sits in memory whole."""
    digest = hashlib.sha256()
    with open_input(Path(path)) as fh:  # a device or FIFO in its place: one line, no hang
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()
