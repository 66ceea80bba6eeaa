"""Whole-file sha256s remembered by the file's stat, so an open does not read a big input again.

Why: a retriever checks every big file it reads against the sha256 its index manifest
recorded (docs.jsonl by require_fresh, once per index kind; passages.jsonl by check_passages;
offsets.npy by open_offsets): about 900 MB read and hashed per open at 100,000 pages, every
open, though the files had not been written since the last one.

How: after a file is hashed in full, its stat (size, mtime_ns, ctime_ns, inode, device) and
sha256 are recorded in STAMPS_FILE, a small JSON file in the snapshot's index folder
(index/<snapshot>/). A later check whose stat is exactly the recorded one takes the recorded
sha256; any difference, or no record, hashes the file in full as before (and records it).

Why the stat stands for the bytes: every write to a file sets its ctime to the clock's time
(the kernel does it; no call sets ctime to a chosen value, while `touch -d` or `cp -p` sets
mtime back), a file replaced by another (a rename over it, a new extraction) has another
inode, and a copy elsewhere has another inode or device. So an unchanged stat, ctime
included, means the file was not written since it was hashed: the rule git's index uses to
skip reading unchanged files.

Why "racy" files are not recorded (git's racy-clean problem): a file's ctime has the
granularity of the kernel's coarse clock (a few ms; 2 s on FAT), so a second same-size write
within the tick of the one before it leaves the stat unchanged. A stat is recorded only when
its ctime is at least RACY_NS older than the moment it was taken, so any later write gets a
later ctime; a file written just before it was hashed is hashed again at the next check
(and recorded then). A stat that changed while the file was hashed is not recorded either.

The stamp file is a cache: a missing, damaged, oversized or unreadable one is ignored (every
file hashed) and rewritten; one drarena cannot write (an index folder received read-only)
leaves every check as it was, a full hash. Two processes writing it at once may lose one's
record: that file is hashed again next time. A link is stat'ed through to its file, as it is
read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from drarena import digests
from drarena.errors import DrarenaError
from drarena.files import read_bounded, write_atomic

STAMPS_FILE = "verified-files.json"
STAMPS_FORMAT = 1
RACY_NS = 2_000_000_000  # a ctime this close to when the stat was taken is not recorded
MAX_STAMPS_BYTES = 1 << 20  # a few hundred bytes a file; far above any index folder's need
MAX_STAMPS = 256  # files recorded, the newest kept (an index folder has a handful)
STAT_FIELDS = ("size", "mtime_ns", "ctime_ns", "ino", "dev")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def verified_sha256(path: Path, folder: Path | None) -> str:
    """The sha256 (bare hex) of the file at `path`: the one recorded in folder's STAMPS_FILE
    when its stat is unchanged, else hashed in full (and recorded). folder None: always
    hashed. A file that cannot be read raises as drarena.digests.file_sha256 does."""
    if folder is None:
        return _hash(path)
    try:
        before = os.stat(path)
    except (OSError, ValueError):
        return _hash(path)  # missing, unreadable, a bad name: its error, as before
    if not stat.S_ISREG(before.st_mode):
        return _hash(path)  # a FIFO or device: refused or read as before, never recorded
    key = os.path.abspath(path)
    stamps = read_stamps(folder)
    recorded = stamps.get(key)
    if recorded is not None and recorded[:5] == _stat_of(before):
        return str(recorded[5])
    taken = time.time_ns()
    digest = _hash(path)
    with contextlib.suppress(OSError):
        after = os.stat(path)
        if _stat_of(after) == _stat_of(before) and before.st_ctime_ns + RACY_NS <= taken:
            stamps.pop(key, None)
            stamps[key] = [*_stat_of(before), digest]
            _write(folder, stamps)
    return digest


def _hash(path: Path) -> str:
    return digests.file_sha256(path).removeprefix("sha256:")


def _stat_of(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def read_stamps(folder: Path) -> dict[str, list[Any]]:
    """The records of folder's STAMPS_FILE, path -> [size, mtime_ns, ctime_ns, inode,
    device, sha256]; {} for a file that is missing, unreadable or not one this code wrote."""
    path = folder / STAMPS_FILE
    try:
        data = json.loads(read_bounded(path, MAX_STAMPS_BYTES).decode("utf-8"))
    except (DrarenaError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("format") != STAMPS_FORMAT:
        return {}
    files = data.get("files")
    if not isinstance(files, dict):
        return {}
    stamps: dict[str, list[Any]] = {}
    for name, entry in files.items():
        if isinstance(entry, dict) and _valid(entry):
            stamps[name] = [*(entry[f] for f in STAT_FIELDS), entry["sha256"]]
    return stamps


def _valid(entry: dict[str, Any]) -> bool:
    numbers = all(type(entry.get(f)) is int for f in STAT_FIELDS)
    digest = entry.get("sha256")
    return numbers and isinstance(digest, str) and _HEX64.fullmatch(digest) is not None


def _write(folder: Path, stamps: dict[str, list[Any]]) -> None:
    """The records written whole (temporary file, rename); a folder that cannot take it
    (missing, read-only, a full disk) is left as it is."""
    if not folder.is_dir():
        return
    kept = list(stamps.items())[-MAX_STAMPS:]
    files = {
        name: {**dict(zip(STAT_FIELDS, entry[:5], strict=True)), "sha256": entry[5]}
        for name, entry in kept
    }
    text = json.dumps({"format": STAMPS_FORMAT, "files": files}, indent=1)  # oldest first
    with contextlib.suppress(OSError, DrarenaError):
        write_atomic(folder / STAMPS_FILE, text + "\n")
