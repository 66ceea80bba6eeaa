"""A tournament on the CPU model, then `drarena run replay` of it: both times in one run.

The replay answers every model call from the run's cache and every search/open from its tool
record, so it needs no model server, no JVM and no encoder; this prints how long each took,
the ratio (issue 19's target: 200x), how many modules the replay process imported (scipy only
when some game was decisive; no heavy module expected) and the load average before and after.

Usage:
  .venv/bin/python bench/bench_replay.py                       # configs/demo.yaml
  .venv/bin/python bench/bench_replay.py --config tests/arena/fixtures/recorded-run.yaml \\
      --fixture tests/arena/fixtures/recorded-run              # (re)make the committed run

It works in --workdir (default /tmp/drarena-bench-replay) on a copy of the committed snapshot
at snapshots/pydocs, so the run header holds only relative paths (snapshot, index_root,
runs_root) and replays from any clone's root. Inputs (extraction, trees, indexes) are built
before the clock starts; the model server is started once, outside both timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FIXTURE_FILES = (
    "run.json",
    "matches.jsonl",
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "llm-cache.sqlite",
)
HEAVY = ("jnius", "pyserini", "torch", "sentence_transformers", "faiss", "vllm", "litellm")
PROBE = (
    "import json, sys, time\n"
    "from drarena.cli import main\n"
    "t = time.perf_counter()\n"
    "rc = main(['run', 'replay', sys.argv[1], '--out', sys.argv[2]])\n"
    "print(json.dumps({'rc': rc, 'seconds': time.perf_counter() - t, 'heavy': "
    f"[m for m in {HEAVY!r} if m in sys.modules], 'modules': len(sys.modules), "
    "'scipy': 'scipy' in sys.modules}))\n"
)


def prepare(workdir: Path, config: dict) -> Path:
    """The snapshot copy with extraction, trees and indexes, as `drarena tournament` builds
    them (so the tournament's own timing is play only)."""
    from drarena.config.tournament import parse_config
    from drarena.runs.prepare import prepare as prepare_stage

    snapshot = workdir / "snapshots" / "pydocs"
    if not (snapshot / "manifest.json").is_file():
        snapshot.mkdir(parents=True)
        for path in (REPO / "snapshots" / "pydocs").iterdir():
            if path.name in ("manifest.json", "index.cdxj") or path.name.endswith(".warc.gz"):
                shutil.copy2(path, snapshot / path.name)
    os.chdir(workdir)
    started = time.perf_counter()
    prepare_stage(parse_config(config, "bench config"))
    print(f"inputs (extract, trees, indexes): {time.perf_counter() - started:.1f} s")
    return snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "demo.yaml")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/drarena-bench-replay"))
    parser.add_argument(
        "--fixture",
        type=Path,
        default=None,
        help="copy the finished run here (cache compacted) for the tests",
    )
    args = parser.parse_args()
    fixture = None if args.fixture is None else args.fixture.resolve()  # before any chdir
    config = yaml.safe_load(args.config.resolve().read_text(encoding="utf-8"))
    config.update(snapshot="snapshots/pydocs", index_root="index", runs_root="runs")
    workdir = args.workdir.resolve()
    run = workdir / "runs" / config["name"]
    if (run / "run.json").is_file():
        shutil.rmtree(run)  # a run this bench made in its workdir: every run starts fresh
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    prepare(workdir, config)

    from drarena.models.serve import model_server

    bin_dir = Path(sys.executable).parent
    # Python's default: bytecode cached on first import, as in a user's clone (a sandbox that
    # sets PYTHONDONTWRITEBYTECODE would make the replay compile drarena again, ~0.3 s)
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    load_before = os.getloadavg()
    with model_server() as server:
        env = {**base_env, "DRARENA_MODEL_API_BASE": server.api_base}
        started = time.perf_counter()
        played = subprocess.run(
            [str(bin_dir / "drarena"), "tournament", "config.yaml", "--no-serve"],
            cwd=workdir,
            env=env,
            text=True,
            capture_output=True,
        )
        run_s = time.perf_counter() - started
    if played.returncode != 0:
        print(played.stdout + played.stderr)
        return 1
    print(played.stdout.strip())

    from drarena.models.cache import compact

    compact(run / "llm-cache.sqlite")  # one file, no WAL: what a copy of the run carries
    env = {k: v for k, v in base_env.items() if k != "DRARENA_MODEL_API_BASE"}
    out = workdir / "runs" / f"{config['name']}-replay"
    if (out / "run.json").is_file():
        shutil.rmtree(out)  # the replay this bench made last time
    started = time.perf_counter()
    replayed = subprocess.run(
        [sys.executable, "-c", PROBE, str(run), str(out)],
        cwd=workdir,
        env=env,
        text=True,
        capture_output=True,
    )
    replay_s = time.perf_counter() - started
    if replayed.returncode != 0:
        print(replayed.stdout + replayed.stderr)
        return 1
    lines = replayed.stdout.strip().splitlines()
    probe = json.loads(lines[-1])
    print("\n".join(lines[:-1]))
    header = json.loads((run / "run.json").read_text(encoding="utf-8"))
    import sqlite3

    with sqlite3.connect(run / "llm-cache.sqlite") as db:
        (calls,) = db.execute("SELECT COUNT(*) FROM calls").fetchone()
        (tools,) = db.execute("SELECT COUNT(*) FROM tools").fetchone()
    print(
        f"\nrun:    {run_s:.1f} s ({header['model_calls']} model calls; {calls} cached "
        f"calls, {tools} recorded tool results)"
    )
    print(
        f"replay: {replay_s:.2f} s wall for the command ({probe['seconds']:.2f} s inside "
        f"`drarena run replay`, Python's start excluded); {probe['modules']} modules "
        f"imported, scipy {'among them' if probe['scipy'] else 'not'}; heavy modules: "
        f"{probe['heavy'] or 'none'}"
    )
    load = os.getloadavg()
    print(
        f"ratio:  {run_s / replay_s:.0f}x (command), {run_s / probe['seconds']:.0f}x "
        f"(inside); load average (1, 5, 15 min) {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f} before the run, {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        "after the replay"
    )
    if probe["rc"] != 0:
        print("replay: NOT identical")
        return 1
    if fixture is not None:
        dest = fixture
        dest.mkdir(parents=True, exist_ok=True)  # only the fixture's own files are replaced
        for name in FIXTURE_FILES:
            shutil.copy2(run / name, dest / name)
        compact(dest / "llm-cache.sqlite")  # the replay reopened it in WAL mode
        size = sum(p.stat().st_size for p in dest.iterdir())
        print(f"fixture: {dest} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
