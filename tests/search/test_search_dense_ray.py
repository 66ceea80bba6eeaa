"""Dense encoding on Ray (`drarena search index --engine ray`): a pool of Ray actors, each
loading the real encoder once, gives the index the vectors one process gives, byte for byte
(the same chunks in the same order, one encoding thread each, on this CPU). Both builds run
as the CLI in processes of their own (tests/rayprocess.py says why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rayprocess import needs_ray, run_python

INDEX = """
import sys
from drarena.cli import main

snapshot, root, *extra = sys.argv[1:]
argv = ["search", "index", snapshot, "--index-root", root, "--dense-per-doc", "1"]
sys.exit(main([*argv, "--encode-threads", "1", *extra]))
"""


def _dense(root: Path) -> Path:
    (docid,) = root.rglob("docid")
    return docid.parent


@pytest.mark.slow
@needs_ray
def test_ray_actors_encode_the_same_vectors_as_one_process(
    pydocs_extracted: Path, tmp_path: Path
) -> None:
    run_python(INDEX, str(pydocs_extracted), str(tmp_path / "local"))
    out = run_python(
        INDEX, str(pydocs_extracted), str(tmp_path / "ray"), "--engine", "ray", "--workers", "2"
    )
    local, ray = _dense(tmp_path / "local"), _dense(tmp_path / "ray")
    assert "dense: encoding on Ray, 2 actor(s) on CPUs" in out.stderr
    assert (local / "docid").read_bytes() == (ray / "docid").read_bytes()
    assert (local / "index").read_bytes() == (ray / "index").read_bytes()
    passages = len((local / "docid").read_text().splitlines())
    assert passages == json.loads((ray / "manifest.json").read_text())["passage_count"] > 100
