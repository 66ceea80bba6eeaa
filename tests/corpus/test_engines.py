"""`--engine ray` for import and extraction: the same bytes as the single-process path, and a
killed extraction resumes from the shards it finished (drarena.corpus.shards)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rayprocess import needs_ray, run_python

from drarena.corpus.extract import (
    DOCS_FILE,
    LINKS_FILE,
    MANIFEST_FILE,
    Job,
    extract_snapshot,
    full_content_type,
    run_extraction,
    select_pages,
)
from drarena.corpus.shards import ShardCache, local_mapper, run_sharded, shard_key
from drarena.errors import DrarenaError
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.synth import SynthSpec, write_web

SPEC = SynthSpec(pages=240, seed=3, shard_pages=60, site_pages=50)
PARAMS = {"extract_version": "test"}


def _jobs(tmp_path: Path) -> list[Job]:
    snap = tmp_path / "snap"
    import_archives(
        "synth", write_web(SPEC, tmp_path / "warc"), snap, ImportOptions(progress=False)
    )
    with Snapshot.open(snap) as opened:
        sel = select_pages(opened.iter_responses())
    return [(r.body, r.canonical_url, full_content_type(r), 1 << 20) for r in sel.pages]


class Killed(Exception):
    pass


def _dies_after(shards: int) -> Callable[[Any, Iterable[list[Job]]], Iterator[Any]]:
    def mapper(fn: Any, items: Iterable[list[Job]]) -> Iterator[Any]:
        for n, shard in enumerate(items):
            if n == shards:
                raise Killed
            yield fn(shard)

    return mapper


def test_a_killed_extraction_resumes_from_finished_shards(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    cache = ShardCache(tmp_path / "cache")
    with pytest.raises(Killed):
        run_sharded(jobs, _dies_after(3), PARAMS, cache, shard_pages=50, progress=False)
    assert len(list(cache.folder.glob("*.jsonl"))) == 3
    seen: list[int] = []

    def counting(fn: Any, items: Iterable[list[Job]]) -> Iterator[Any]:
        for shard in items:
            seen.append(len(shard))
            yield fn(shard)

    pages, reused = run_sharded(jobs, counting, PARAMS, cache, shard_pages=50, progress=False)
    assert reused == 3 and sum(seen) == len(jobs) - 150
    assert pages == run_extraction(jobs, 1, progress=False)  # the same results, in order
    # other parameters (another extractor version): nothing is reused
    _, reused = run_sharded(
        jobs, local_mapper, {"extract_version": "other"}, cache, 50, progress=False
    )
    assert reused == 0
    # a damaged shard file is extracted again, never trusted in part
    victim = cache.path(shard_key(PARAMS, jobs[:50]))
    victim.write_text(victim.read_text().splitlines()[0] + "\n")
    again, reused = run_sharded(jobs, local_mapper, PARAMS, cache, 50, progress=False)
    assert again == pages and reused == -(-len(jobs) // 50) - 1


def test_unknown_engine_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match="expected one of local, ray"):
        import_archives("x", [], tmp_path / "x", ImportOptions(engine="spark"))


CLOCK = datetime(2026, 1, 2, tzinfo=UTC)


# Each Ray part runs in a process of its own (tests/rayprocess.py says why): the child
# imports with --engine ray and extracts, with the same fixed clock as the local path here.
RAY_IMPORT_EXTRACT = """
import sys
from datetime import UTC, datetime
from pathlib import Path

from drarena.corpus.extract import extract_snapshot
from drarena.web.warc.importer import ImportOptions, import_archives

snap, address, warcs = Path(sys.argv[1]), sys.argv[2] or None, sys.argv[3:]
clock = datetime(2026, 1, 2, tzinfo=UTC)
options = ImportOptions(progress=False, jobs=2, engine="ray", address=address, clock=lambda: clock)
import_archives("synth", [Path(w) for w in warcs], snap, options)
extract_snapshot(snap, workers=2, progress=False, engine="ray", address=address)
"""

TWO_NODES = """
import subprocess, sys
from ray.cluster_utils import Cluster

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
try:
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    code, *args = sys.argv[1:]
    args[1] = cluster.address
    subprocess.run([sys.executable, "-c", code, *args], check=True)
finally:
    cluster.shutdown()
"""


def _local(warcs: list[Path], snap: Path) -> Path:
    import_archives("synth", warcs, snap, ImportOptions(progress=False, clock=lambda: CLOCK))
    extract_snapshot(snap, workers=1, progress=False)
    return snap


def _same_outputs(local: Path, ray: Path) -> None:
    for name in ("manifest.json", "index.cdxj", DOCS_FILE, LINKS_FILE, MANIFEST_FILE):
        assert (local / name).read_bytes() == (ray / name).read_bytes(), name


@pytest.mark.slow
@needs_ray
def test_ray_engine_writes_the_same_bytes(tmp_path: Path) -> None:
    warcs = write_web(SPEC, tmp_path / "warc")
    local = _local(warcs, tmp_path / "local")
    ray = tmp_path / "ray"
    run_python(RAY_IMPORT_EXTRACT, str(ray), "", *map(str, warcs))
    assert not (ray / ".extract-shards").exists()  # the shard cache is gone when done
    _same_outputs(local, ray)


@pytest.mark.slow
@needs_ray
def test_ray_engine_on_a_two_node_cluster_writes_the_same_bytes(tmp_path: Path) -> None:
    """A head and a worker node on loopback (ray.cluster_utils.Cluster starts both as `ray
    start` would), joined through --address: the same bytes as one process."""
    warcs = write_web(SPEC, tmp_path / "warc")
    local = _local(warcs, tmp_path / "local")
    remote = tmp_path / "cluster"
    run_python(TWO_NODES, RAY_IMPORT_EXTRACT, str(remote), "", *map(str, warcs))
    _same_outputs(local, remote)
