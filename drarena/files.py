"""Reading a file drarena did not write itself, bounded.

Why one function: a run folder's records, drift.json and a crawl's seeds file may be damaged
or not drarena's at all, and a 10 GB file (or a FIFO that never ends) must cost at most the
limit to refuse. Read, not stat()ed: a FIFO or a growing file has no size to trust.
"""

from __future__ import annotations

from pathlib import Path

from drarena.errors import DrarenaError


def read_bounded(path: Path, limit: int, too_large: str = "") -> bytes:
    """A file's bytes, at most `limit` of them read: a larger file, or one that cannot be
    read, is one line naming it (`too_large` says what to do about a larger one)."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise DrarenaError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        why = too_large or "damaged, or not drarena's"
        raise DrarenaError(f"{path}: larger than {limit} bytes ({why})")
    return data
