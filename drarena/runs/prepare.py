"""The prepare stage: a snapshot's derived files built before a run opens.

A frozen run reads the snapshot's page text and links (extraction), its Information Trees and,
for the retrievers its agents use, the snapshot's indexes; each is built here when missing or
stale, and left as it is when current (an index stage says "up to date"). Live runs search the
live web: their trees still come from the snapshot, but no index is built.

Why a stage of its own, before open_run: opening a run binds models, opens caches and builds
agents, and must not also be what rebuilds files on disk. A replay skips this stage: it reads
the bytes the recorded run read (webmode.check_replay_inputs checks them), never new ones; so
does a drift-run, which asks a finished run's questions again. The commands that play new
matches (`drarena tournament`, `run add-agent`, `run match`, `examiner-check`) call it after
the config is checked (context.check_config) and before open_run.
"""

from __future__ import annotations

import sys

from drarena.config.tournament import TournamentConfig
from drarena.errors import DrarenaError
from drarena.runs.webmode import WebMode, web_mode


def prepare(config: TournamentConfig, web: WebMode | None = None) -> None:
    """Extract, grow trees and (frozen runs) index the snapshot of `config` where they are
    missing or stale; each step does nothing when it is up to date. `web`: the run's, which
    says which indexes its agents read (default: chosen from `config`)."""
    from drarena.corpus.extract import extract_snapshot
    from drarena.corpus.trees import TreeParams, build_snapshot_trees

    snapshot = config.snapshot
    if not (snapshot / "manifest.json").is_file():
        raise DrarenaError(
            f"{snapshot}: not a snapshot (no manifest.json); make one with `make snapshot`"
        )
    extract_snapshot(snapshot)
    build_snapshot_trees(  # 10 whatever the count, so the trees do not change with it
        snapshot,
        TreeParams(count=config.trees.built(), seed=config.trees.seed),
        at_least=config.trees.count or 1,
    )
    traits = (web or web_mode(config)).index_traits()
    if traits:
        from drarena.search.base import INDEX_DENSE
        from drarena.search.build import build_indexes

        for stage in build_indexes(
            snapshot,
            config.index_root,
            dense=INDEX_DENSE in traits,
            dense_per_doc=config.index.dense_per_doc,
        ):
            what = f"built in {stage.seconds:.1f} s" if stage.built else "up to date"
            print(
                f"{stage.stage:9} {stage.path}  {stage.count} passages  {what}",
                file=sys.stderr,
                flush=True,
            )
