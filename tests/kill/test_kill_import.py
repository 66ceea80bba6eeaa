"""SIGKILL during `drarena snapshot import` (two archives, gzip and plain; two of the trials
with `--jobs 2`, i.e. worker processes too), 10 trials at seeded random moments; after each,
the user re-runs the command.

Checked: every re-run finishes or refuses in one line; the snapshot it leaves passes
`drarena verify` and indexes the same captures as an uninterrupted import; no staging folder
is left behind; the input files are byte-for-byte unchanged (an import hard-links them, so a
write into the snapshot would be a write into the user's file).
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pytest
from kill_trials import REPO, TRIALS, drarena, kill_at, run, timed

from drarena.web.warc.manifest import load_manifest

pytestmark = pytest.mark.slow


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _captures(folder: Path) -> tuple[bytes, str]:
    """The index bytes and the fingerprint of the WARC files: equal only for the same
    captures of the same bytes."""
    return (folder / "index.cdxj").read_bytes(), load_manifest(folder).fingerprint


def test_sigkill_during_an_import(tmp_path: Path) -> None:
    src = tmp_path / "archives"
    src.mkdir()
    warc = REPO / "snapshots" / "pydocs" / "pydocs-00000.warc.gz"
    shutil.copyfile(warc, src / "a.warc.gz")
    (src / "b.warc").write_bytes(gzip.decompress(warc.read_bytes()))
    before = {p.name: _sha(p) for p in src.iterdir()}

    def command(out: Path, jobs: int = 1) -> list[str]:
        return drarena(
            "snapshot", "import", "killed", src, "--out", out, "--jobs", str(jobs), "--no-progress"
        )

    def staging(out: Path) -> Path:
        return out.with_name(f".{out.name}.importing")

    ref = tmp_path / "ref"
    done, span = timed(command(ref), lambda: staging(ref).exists())
    done.check()
    assert done.returncode == 0
    reference = _captures(ref)
    outcomes = []
    for trial in range(TRIALS):
        out = tmp_path / f"trial{trial}"
        jobs = 2 if trial < 2 else 1  # two trials with worker processes (slow to start)
        delay = kill_at(
            command(out, jobs), trial, span * 0.95, lambda out=out: staging(out).exists()
        )
        left = sorted(p.name for p in staging(out).glob("*")) if staging(out).exists() else []
        state = (
            "snapshot complete"
            if (out / "manifest.json").is_file()
            else f"staging folder with {len(left)} file(s)"
            if staging(out).exists()
            else "nothing written"
        )
        again = run(command(out, jobs))
        again.check()
        assert again.returncode == 0, again.stderr
        verify = run(drarena("verify", out))
        assert verify.returncode == 0, verify.stderr
        assert _captures(out) == reference
        assert not staging(out).exists()
        assert {p.name: _sha(p) for p in src.iterdir()} == before
        outcomes.append(
            f"import trial {trial} (--jobs {jobs}): killed {delay:.2f} s into the "
            f"import ({state}); "
            "re-run finished; verify ok, same captures, inputs unchanged"
        )
    print("\n" + "\n".join(outcomes))
