"""CLI: `drarena examiner-check SNAPSHOT`: can this Examiner rank? It builds the run context
as a tournament does and calls drarena.validity.check, so it lives in the runs room (above
validity), not in validity, which must not import the runs room.

The check itself (`CheckOptions`, `plan_check`, `run_planned`) is also what
`drarena.examiner_check` runs (drarena.api, which exports `CheckOptions`): the command only
turns its flags into options and prints."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command's imports stay light: `drarena --help` loads none of these
    from drarena.config.tournament import TournamentConfig
    from drarena.validity.check import CheckSettings, HumanPair

REPORT_FILE = "examiner-check.json"
ROLES_FILE = "roles.json"
# A replay reads roles.json from --out, a folder that may be shared or damaged: bounded. Why
# 64 MiB: it holds a model name and an endpoint per role (under 1 KB whatever the check), and
# 64 MiB is the project's bound for small files.
MAX_ROLES_BYTES = 64 << 20


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "examiner-check",
        help="measure the Examiner on answer pairs of known preference: can it rank?",
        description="Generate tasks from the snapshot's Information Trees, build answer pairs "
        "whose right verdict is known by construction (a reference answer against controlled "
        "degradations, and equal pairs), judge each in both orders with the real judging code, "
        "and report accuracy, position consistency, failure-type accuracy, length bias, tie "
        "rate, injection success and the questions' leak rate, with bootstrap 95% intervals, "
        "and a one-line verdict: can rank / cannot rank.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder, e.g. snapshots/pydocs")
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        help="take the models, match settings (page budget, judge prompt) and seed from this "
        "config, e.g. configs/demo.yaml on CPU",
    )
    p.add_argument(
        "--model",
        default=None,
        help="serve this model for the config's 'served' roles (as `tournament --model`), "
        "e.g. qwen1.5b-cpu",
    )
    p.add_argument("--pairs", type=int, default=3, help="tasks; each gives one pair per kind")
    p.add_argument("--seed", type=int, default=None, help="default: the config's seed, else 0")
    p.add_argument(
        "--judges",
        "--modes",
        dest="judges",
        default=None,
        help="judge kinds to compare on the same pairs, comma-separated: evidence, hybrid, "
        "pairwise, pointwise, both, or a plugin's (default: the config's judge; pairwise "
        "without --config). --modes is the older name",
    )
    p.add_argument(
        "--no-paraphrase",
        action="store_true",
        help="skip the paraphrased pair (it costs one task-model call a task)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="folder (default runs/examiner-check-<snapshot>)"
    )
    p.add_argument("--no-serve", action="store_true", help="use DRARENA_MODEL_API_BASE")
    p.add_argument(
        "--replay",
        action="store_true",
        help="re-run from the folder's model cache only (zero model calls) and check the "
        "JSON comes out identical",
    )
    p.add_argument("--index-root", type=Path, default=Path("index"))
    p.add_argument(
        "--labels",
        type=Path,
        default=None,
        metavar="RUN",
        help="also judge the rounds people labelled in RUN (`drarena run audit`) as "
        "known-answer pairs: the share of them the judge gives to the people's choice "
        "(docs/audit.md)",
    )
    p.set_defaults(func=cmd_examiner_check)


def default_config(snapshot: Path, index_root: Path, seed: int) -> Any:
    """A config for the check alone: the Examiner served, greedy (closed-book agents only
    because a config needs two; they are never asked)."""
    from drarena.config.tournament import parse_config

    return parse_config(
        {
            "name": f"examiner-check-{snapshot.name}"[:64],
            "snapshot": str(snapshot),
            "index_root": str(index_root),
            "seed": seed,
            "models": {
                "retry": {"max_attempts": 2},
                "roles": {
                    role: {
                        "model": "served",
                        "timeout_s": 600,
                        "sampling": {"temperature": 0.0, "max_tokens": 512, "seed": 0},
                    }
                    for role in ("examiner", "agent")
                },
            },
            "agents": [
                {"name": "closed_book-1", "kind": "closed_book"},
                {"name": "closed_book-2", "kind": "closed_book"},
            ],
        },
        "drarena examiner-check",
    )


def run_check(
    config: Any,
    out: Path,
    settings: Any,
    *,
    replay: bool = False,
    serve: bool = True,
    model: str | None = None,
    backend: Any = None,
    human: Any = (),
) -> tuple[dict[str, Any], int]:
    """Run (or replay) the check of `config`'s Examiner into `out`; returns the report and
    the number of model calls made. A replay binds the recorded models, answers every call
    from the folder's cache and writes nothing. `human`: labelled pairs to judge too
    (drarena.runs.humanpairs)."""
    from drarena.errors import DrarenaError
    from drarena.files import read_bounded, write_atomic
    from drarena.models.config import CacheMode
    from drarena.runs.context import OpenOptions, check_config, open_run
    from drarena.runs.examinercheck import check_run, progress
    from drarena.runs.execute import NoModelBackend
    from drarena.runs.prepare import prepare
    from drarena.runs.webmode import web_mode
    from drarena.validity.check import examiner_check

    cache = out / "llm-cache.sqlite"
    fixed = None
    if replay:
        roles_path = out / ROLES_FILE
        if not roles_path.is_file() or not (out / REPORT_FILE).is_file() or not cache.is_file():
            raise DrarenaError(
                f"{out}: nothing to replay (no {ROLES_FILE}, {REPORT_FILE} or cache)"
            )
        redo = "run the check again without --replay"
        raw = read_bounded(roles_path, MAX_ROLES_BYTES, f"damaged; {redo}")  # larger: one line
        try:
            fixed = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8, not JSON
            fixed = None
        if not isinstance(fixed, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("model"), str) and "api_base" in r
            for r in fixed.values()
        ):
            raise DrarenaError(
                f"{roles_path}: damaged (an object of roles, each with its model and api_base, "
                f"is what the check wrote); {redo}"
            )
        backend = backend or NoModelBackend()
    else:
        out.mkdir(parents=True, exist_ok=True)
    web = web_mode(config)  # chosen once: frozen, or live capturing nothing
    config = check_config(config, web=web)
    if not replay:  # a replay reads what the check read
        prepare(config, web)
    with open_run(
        config,
        OpenOptions(
            cache_path=cache,
            cache_mode=CacheMode.REPLAY if replay else CacheMode.READ_WRITE,
            serve=serve and not replay,
            model=model,
            fixed_roles=fixed,
            web=web,
            agent_names=set(),
            backend=backend,
        ),
    ) as ctx:
        with ctx.guard():
            report = asyncio.run(examiner_check(check_run(ctx), settings, progress, human))
        calls = ctx.client.model_calls
        bound = {k: {"model": r.model, "api_base": r.api_base} for k, r in ctx.bound.roles.items()}
    if not replay:
        write_atomic(out / REPORT_FILE, report_text(report))
        write_atomic(out / ROLES_FILE, json.dumps(bound, indent=2, sort_keys=True) + "\n")
    return report, calls


@dataclasses.dataclass(frozen=True, slots=True)
class CheckOptions:
    """How an examiner-check runs (`drarena.CheckOptions`); each field is a flag of
    `drarena examiner-check`.

    `pairs`: tasks (each gives one answer pair per kind); `seed`: default the config's, 0
    without one; `judges`: judge kinds to compare on the same pairs (default: the config's
    judge); `paraphrase` False skips the paraphrased pair (one task-model call a task);
    `out`: the folder (default runs/examiner-check-<snapshot name>); `replay`: answer every
    call from `out`'s cache and check the report comes out identical; `serve` and `model`:
    as for a tournament; `labels`: a run folder whose rounds people labelled
    (`drarena run audit`), judged too as known-answer pairs; `index_root`: the indexes'
    folder when no config is given; `backend`: the model backend, for tests."""

    pairs: int = 3
    seed: int | None = None
    judges: tuple[str, ...] = ()
    paraphrase: bool = True
    out: Path | None = None
    replay: bool = False
    serve: bool = True
    model: str | None = None
    labels: Path | None = None
    index_root: Path = Path("index")
    backend: Any = None


@dataclasses.dataclass(frozen=True, slots=True)
class CheckPlan:
    """An examiner-check ready to run (`plan_check`): the config whose Examiner is measured,
    the settings, the folder, the labelled pairs and the options it was planned from."""

    config: TournamentConfig
    settings: CheckSettings
    out: Path
    human: Sequence[HumanPair]
    options: CheckOptions

    @property
    def path(self) -> Path:
        """The report's file, examiner-check.json in the folder."""
        return self.out / REPORT_FILE


def plan_check(snapshot: Path, config: TournamentConfig | None, options: CheckOptions) -> CheckPlan:
    """An examiner-check of `snapshot`'s trees up to its first model call: `config` with its
    snapshot replaced (without one, default_config: the Examiner served, greedy), the judge
    kinds (default: the config's judge) checked, the settings, the folder (default
    runs/examiner-check-<snapshot name>) and the labelled pairs read. A bad option or labels
    file is one DrarenaError before any model starts."""
    from drarena.errors import DrarenaError
    from drarena.validity.check import CheckSettings, check_judges

    if options.pairs < 1:
        raise DrarenaError("pairs: at least 1")
    if config is not None:
        config = config.model_copy(update={"snapshot": snapshot})
    else:
        config = default_config(snapshot, Path(options.index_root), options.seed or 0)
    judges = tuple(options.judges) or (config.match.judge_spec().kind,)
    check_judges(judges)
    settings = CheckSettings(
        pairs=options.pairs,
        seed=config.seed if options.seed is None else options.seed,
        judges=judges,
        paraphrase=options.paraphrase,
    )
    out = Path("runs") / f"examiner-check-{snapshot.name}" if options.out is None else options.out
    human: Sequence[HumanPair] = ()
    if options.labels is not None:
        from drarena.runs.humanpairs import human_pairs

        human = human_pairs(Path(options.labels))  # a bad labels file fails before any model
    return CheckPlan(config, settings, Path(out), human, options)


def run_planned(plan: CheckPlan) -> tuple[dict[str, Any], int, bool | None]:
    """Run (or, with `replay`, replay) the planned check (run_check); returns the report, the
    model calls made and, for a replay, whether the report came out identical to the file
    (None otherwise)."""
    o = plan.options
    report, calls = run_check(
        plan.config,
        plan.out,
        plan.settings,
        replay=o.replay,
        serve=o.serve,
        model=o.model,
        backend=o.backend,
        human=plan.human,
    )
    identical = plan.path.read_text(encoding="utf-8") == report_text(report) if o.replay else None
    return report, calls, identical


def report_text(report: dict[str, Any]) -> str:
    """examiner-check.json's bytes for `report`."""
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def cmd_examiner_check(args: argparse.Namespace) -> int:
    from drarena.config.tournament import load_config
    from drarena.errors import DrarenaError
    from drarena.validity.check import check_judges, table

    if args.pairs < 1:
        raise DrarenaError("--pairs: at least 1")
    config = None if args.config is None else load_config(args.config)
    judges: tuple[str, ...] = ()
    if args.judges is not None:
        judges = tuple(m.strip() for m in args.judges.split(",") if m.strip())
        if not judges:  # `--judges ,` is refused, not read as CheckOptions' () (the config's)
            check_judges(judges)
    options = CheckOptions(
        pairs=args.pairs,
        seed=args.seed,
        judges=judges,
        paraphrase=not args.no_paraphrase,
        out=args.out,
        replay=args.replay,
        serve=not args.no_serve,
        model=args.model,
        labels=args.labels,
        index_root=args.index_root,
    )
    plan = plan_check(args.snapshot, config, options)
    if args.labels is not None:
        print(f"{len(plan.human)} rounds people agreed on in {args.labels}: known-answer pairs")
    started = time.perf_counter()
    report, calls, identical = run_planned(plan)
    print(f"Examiner {report['examiner_model']} on {args.snapshot}, seed {plan.settings.seed}")
    print(table(report))
    print(f"{calls} model calls, {time.perf_counter() - started:.0f} s")
    if identical is not None:
        print("replay: " + ("identical " if identical else "DIFFERENT ") + str(plan.path))
        return 0 if identical else 1
    print(f"report: {plan.path}")
    return 0
