"""What a refused replay must leave behind: one line of error, and its folder as it was.

Shared by the replay tests of `run match` (test_single.py) and `examiner-check`
(test_checkcommands.py), whose folders hold a recorded roles.json.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from drarena.errors import DrarenaError


def refused_leaving_folder(folder: Path, call: Callable[[], object], match: str) -> None:
    """`call()` raises a one-line DrarenaError matching `match`, and every file in `folder`
    keeps its bytes (none added, none removed)."""
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(DrarenaError, match=match) as err:
        call()
    assert "\n" not in str(err.value)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
