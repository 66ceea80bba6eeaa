"""Session fixtures of the drift tests: an extracted copy of the committed snapshot, its
drifted copy, and a run folder over it."""

from __future__ import annotations

from pathlib import Path

import pytest
from drift_fixture import DriftWorld, copy_extracted, write_drifted, write_run

from drarena.web.warc.snapshot import Snapshot


@pytest.fixture(scope="session")
def drift_world(tmp_path_factory: pytest.TempPathFactory, pydocs_extracted: Path) -> DriftWorld:
    root = tmp_path_factory.mktemp("drift")
    snapshot = copy_extracted(root / "pydocs", extracted=pydocs_extracted)
    drifted = write_drifted(root / "pydocs-drifted")
    with Snapshot.open(snapshot) as snap:
        fingerprint = snap.fingerprint
    return DriftWorld(snapshot, drifted, write_run(root / "run", fingerprint), fingerprint)
