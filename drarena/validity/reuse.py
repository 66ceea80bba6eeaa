"""A tournament's examiner-check: run once per Examiner, reused by later runs (thin I/O).

Why reuse: the figures depend only on the Examiner's model and sampling, the prompts, the
snapshot's trees and the check's settings; a second tournament with the same ones (another
set of agents, a resumed run) reads the stored report instead of judging the pairs again.
The key hashes exactly those inputs; the store is a folder of <key>.json files beside the
runs, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError
from drarena.files import read_bounded
from drarena.quoting import shown
from drarena.validity.check import SCHEMA_VERSION, figure_parts, mode_figures, summary

STORE_DIR = "examiner-checks"
# A stored report is a few KB (4.3 KB for the demo's one task, about 4 KB a task more): a
# larger file is not one drarena wrote, and is run again rather than read into memory.
MAX_STORED_BYTES = 16 << 20


def check_key(parts: Mapping[str, Any]) -> str:
    """sha256 of the check's inputs (sorted JSON), with the report's schema version."""
    text = json.dumps({"schema_version": SCHEMA_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def reuse_or_run(
    store: Path, key: str, run: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    """The stored report for `key`, or `run()`'s, stored; and whether it was reused. A
    stored file that is not a report of this schema is run again (and replaced)."""
    path = store / f"{key}.json"
    try:
        stored = json.loads(read_bounded(path, MAX_STORED_BYTES))
        if _usable(stored):
            return stored, True
    except (DrarenaError, OSError, ValueError, RecursionError):
        pass
    report = run()
    store.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=store, prefix=f".{key}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return report, False


def _usable(stored: Any) -> bool:
    """A stored report of this schema with the parts a run reads (tasks; results, each with
    its figures): a file cut short or edited by hand is run again, never a KeyError."""
    if not isinstance(stored, dict) or stored.get("schema_version") != SCHEMA_VERSION:
        return False
    results = stored.get("results")
    return (
        isinstance(stored.get("tasks"), list)
        and isinstance(results, dict)
        and all(
            isinstance(r, dict)
            and isinstance(r.get("figures"), dict)
            and all(
                figure_parts(f) is not None or (isinstance(f, dict) and f.get("value") is None)
                for f in r["figures"].values()
            )
            for r in results.values()
        )
    )


def header_block(report: Mapping[str, Any], key: str, reused: bool) -> dict[str, Any]:
    """What run.json keeps: the figures and verdict per mode, the key, reused or not."""
    return {**summary(report), "key": key, "reused": reused, "tasks": len(report["tasks"])}


def header_lines(block: Mapping[str, Any]) -> list[str]:
    """The lines printed above the leaderboard; the last one a warning when it cannot rank."""
    lines = []
    for mode, f in mode_figures(block).items():
        lines.append(
            f"Examiner check ({shown(str(mode), 40)}, {shown(str(block.get('tasks', '?')), 20)} "
            "task(s)"
            f"{', reused' if block.get('reused') else ''}): "
            + ", ".join(
                f"{label} {_short(f.get(k))}"
                for k, label in (
                    ("accuracy", "accuracy"),
                    ("position_consistency", "consistency"),
                    ("length_bias", "length bias"),
                    ("tie_rate_equal", "ties on equal"),
                    ("injection_success", "injection"),
                )
            )
        )
    if not block.get("can_rank", False):
        # the verdict line starts with "cannot rank: ..." itself; say it once
        reason = str(block.get("verdict", "")).removeprefix("cannot rank: ")
        lines.append(f"WARNING: the Examiner cannot rank: {shown(reason, 1000)}")
    else:  # say what the interval supports, not only warn when it does not
        lines.append(f"Examiner check: {shown(str(block.get('verdict', 'can rank')), 1000)}")
    return lines


def _short(f: Mapping[str, Any] | None) -> str:
    parts = figure_parts(f)
    if parts is None:
        return "n/a"
    value, low, high, n = parts
    count = f" (n={n})" if isinstance(n, int) and not isinstance(n, bool) else ""
    return f"{value:.2f} [{low:.2f}, {high:.2f}]{count}"
