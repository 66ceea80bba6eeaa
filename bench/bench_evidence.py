"""Answer sets for the evidence judge: every agent answers the same tasks, then code grades.

Why: a judge is only measured on real answers. A tournament pairs agents, so a round holds two
answers; here every agent of a known-order ladder (oracle > react with search > closed_book >
null) answers every task, so each task gives every pair, and the evidence judge's thresholds
can be calibrated and checked on many rounds at once (docs/validity.md, "The evidence judge").

  collect  tasks from the snapshot's trees with the config's task generator (nodes drawn as
           examiner-check draws them), every agent's answer; resumable (one JSON line per
           task; model calls cached in OUT/llm-cache.sqlite, so a rerun is free)
  grade    the evidence judge on every (task, pair of agents): the share of items each
           agent satisfied, each pair's score rate with a bootstrap interval, the order by
           wins, and with --labels the agreement of item grades with labels read by a person
  label    write OUT/labels-todo.jsonl: one line per (task, agent, item) to label by hand
  sweep    with --labels: item accuracy for a grid of recall_min and hard_min values

Usage:
  .venv/bin/python bench/bench_evidence.py collect --config configs/demo-qwen.yaml \
      --snapshot snapshots/pydocs --tasks 12 --out runs/evidence-pydocs
  .venv/bin/python bench/bench_evidence.py grade --out runs/evidence-pydocs
The model: DRARENA_MODEL_API_BASE (a running server), else `--model qwen1.5b-cpu` serves it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from bench_validity import LADDERS

REPO = Path(__file__).resolve().parents[1]
LADDER = LADDERS["full"]  # the known-order ladder of bench_validity
KNOWN = [a["name"] for a in LADDER]


def bench_config(
    base: Path, snapshot: Path, taskgen: str | None, name: str, agents: Sequence[str] = ()
) -> Any:
    from drarena.config.tournament import parse_config

    data = yaml.safe_load(base.read_text(encoding="utf-8"))
    data["name"] = name
    data["snapshot"] = str(snapshot)
    data["agents"] = [a for a in LADDER if not agents or a["name"] in agents]
    data["trees"] = {"count": 6, "seed": 1}  # tasks drawn over several trees
    match = dict(data.get("match") or {})
    if taskgen is not None:
        match["taskgen"] = {"kind": taskgen}
    data["match"] = match
    return parse_config(data, f"{base} (bench)")


async def answer_all(ctx: Any, made: Any) -> dict[str, Any]:
    """Every agent's answer to one task (a first-round conversation, the oracle given the
    target pages as in a match)."""
    from drarena.agents.base import Conversation, SourcePage
    from drarena.arena.rounds import failure

    task = made.task
    targets = tuple(
        SourcePage(p.url, p.title, p.text) for p in made.shown if p.url in made.check.target_urls
    )
    conv = Conversation(task.question, targets=targets)
    out: dict[str, Any] = {}
    for name, agent in ctx.agents.items():
        started = time.perf_counter()
        try:
            ans = await agent.answer(conv, task.word_limit)
        except Exception as exc:  # recorded, as a round records a failing agent
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[name] = {
            "report": ans.report,
            "urls": ans.cited_urls(),
            "valid": ans.check.valid,
            "fabricated": ans.check.fabricated,
            "error": failure(ans),
            "steps": len(ans.trajectory.steps),
            "searches": sum(1 for s in ans.trajectory.steps for t in s.tools if t.name == "search"),
            "opened": sum(1 for s in ans.trajectory.steps for t in s.tools if t.name == "open"),
            "wall_s": round(time.perf_counter() - started, 1),
        }
    return out


def collect(args: argparse.Namespace) -> int:
    from drarena.models.config import CacheMode
    from drarena.runs.context import OpenOptions, check_config, open_run
    from drarena.runs.examinercheck import check_run
    from drarena.runs.prepare import prepare
    from drarena.validity.check import CheckSettings, make_tasks

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    agents = [a for a in (args.agents or "").split(",") if a]
    unknown = sorted(set(agents) - set(KNOWN))
    if unknown:
        print(f"--agents: {', '.join(unknown)} not in the ladder ({', '.join(KNOWN)})")
        return 2
    config = bench_config(args.config, args.snapshot, args.taskgen, out.name[:64], agents)
    done_path = out / "answers.jsonl"
    done = {json.loads(line)["index"] for line in done_path.open()} if done_path.exists() else set()
    started = time.perf_counter()
    meta = {
        "config": str(args.config),
        "snapshot": str(args.snapshot),
        "taskgen": config.match.taskgen_spec().model_dump(mode="json"),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    config = check_config(config)
    prepare(config)  # the prepare stage: extraction, trees, indexes
    with open_run(
        config,
        OpenOptions(
            cache_path=out / "llm-cache.sqlite",
            cache_mode=CacheMode.READ_WRITE,
            serve=True,
            model=args.model,
        ),
    ) as ctx:
        run = check_run(ctx)
        settings = CheckSettings(pairs=args.tasks, seed=args.seed, task_attempts=2)
        with ctx.guard():
            tasks, failures = asyncio.run(
                make_tasks(run, settings, lambda m, w: print(f"tasks {m}/{w}", file=sys.stderr))
            )
            for made in tasks:
                if made.check.index in done:
                    continue
                answers = asyncio.run(answer_all(ctx, made))
                line = {
                    "index": made.check.index,
                    "tree": made.check.tree,
                    "node": made.check.node,
                    "task": made.task.to_dict(),
                    "targets": list(made.check.target_urls),
                    "shown": [p.url for p in made.shown],
                    "answers": answers,
                }
                with done_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(line, sort_keys=True) + "\n")
                print(
                    f"task {made.check.index}: "
                    + ", ".join(f"{k} {v.get('wall_s', '-')} s" for k, v in answers.items()),
                    file=sys.stderr,
                    flush=True,
                )
        calls = ctx.client.model_calls
    meta |= {"tasks": len(tasks), "task_failures": failures}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(
        f"{len(tasks)} tasks ({len(failures)} draws without one), {calls} model calls, "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0


def load_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "answers.jsonl").open(encoding="utf-8")]


def grading_inputs(out: Path) -> tuple[Any, dict[str, str], dict[str, Any]]:
    """(term statistics, page text by URL, meta) of the bench's snapshot."""
    from drarena.corpus.extract import load_docs
    from drarena.runs.session import page_terms

    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    docs = load_docs(Path(meta["snapshot"]))
    by_url: dict[str, str] = {}
    for d in docs:
        for u in (d.url, *d.aliases):
            by_url.setdefault(u, d.contents)
    return page_terms(docs), by_url, meta


def grade_all(
    lines: Sequence[Mapping[str, Any]], terms: Any, pages: Mapping[str, str], args: Any
) -> dict[tuple[int, str], Any]:
    """(task index, agent) -> AnswerEvidence."""
    from drarena.examiner.evidence import Grounding, grade_answer
    from drarena.examiner.taskcheck import Task

    out = {}
    for line in lines:
        task = Task.from_dict(line["task"])
        grounding = Grounding(terms, {u: pages.get(u, "") for u in line["shown"]}, pages.get)
        for agent, ans in line["answers"].items():
            if "report" not in ans or ans.get("error"):
                continue
            out[(line["index"], agent)] = grade_answer(
                task, ans["report"], ans["urls"], grounding, args
            )
    return out


def grade(args: argparse.Namespace) -> int:
    from drarena.examiner.evidence import EvidenceArgs, decide
    from drarena.validity.stats import bootstrap_ci

    lines = load_lines(args.out)
    terms, pages, meta = grading_inputs(args.out)
    eargs = EvidenceArgs(**json.loads(args.evidence_args or "{}"))
    graded = grade_all(lines, terms, pages, eargs)
    agents = [a for a in KNOWN if any(k[1] == a for k in graded)]
    print(f"{args.out}: {len(lines)} tasks, taskgen {meta['taskgen']['kind']}, args {eargs}")
    for agent in agents:
        mine = [g for (i, a), g in graded.items() if a == agent]
        items = sum(len(g.items) for g in mine)
        sat = sum(i.verified for g in mine for i in g.items)
        guards = [g.guard for g in mine if g.guard]
        cited = sum(g.cited() for g in mine)
        print(
            f"  {agent:12s} answers {len(mine):3d}  items satisfied {sat}/{items} "
            f"({sat / max(items, 1):.2f})  cited {cited}  guards {guards or '-'}"
        )
    wins: dict[str, float] = dict.fromkeys(agents, 0.0)
    print("  pair (known better first): score rate over tasks [95% CI], decisive rounds")
    for x, y in itertools.combinations(agents, 2):
        scores = []
        for line in lines:
            gx, gy = graded.get((line["index"], x)), graded.get((line["index"], y))
            if gx is None or gy is None:
                continue
            signed = decide(gx, gy, eargs).verdict.signed
            score = 1.0 if signed > 0 else (0.0 if signed < 0 else 0.5)
            scores.append(score)
            wins[x] += score
            wins[y] += 1 - score
        if scores:
            ci = bootstrap_ci([int(s * 2) for s in scores], 1000, 0)
            low, high = (ci[0] / 2, ci[1] / 2) if ci else (0.0, 0.0)
            decisive = sum(s != 0.5 for s in scores)
            print(
                f"    {x} > {y}: {sum(scores) / len(scores):.2f} [{low:.2f}, {high:.2f}] "
                f"n={len(scores)}, decisive {decisive}"
            )
    order = sorted(agents, key=lambda a: -wins[a])
    print("  order by wins: " + " > ".join(f"{a} ({wins[a]:.1f})" for a in order))
    if len(agents) > 2:
        from scipy import stats

        rho = stats.spearmanr([KNOWN.index(a) for a in agents], [order.index(a) for a in agents])
        print(f"  Spearman rho vs known order: {rho.statistic:.3f}")
    if args.labels:
        accuracy(graded, lines, args.labels)
    return 0


def read_labels(path: Path) -> dict[tuple[int, str, int], bool]:
    """Labels by (task index, agent, item number). A file of blind labels ({id, label}, as
    `label` writes them to fill) is joined with the key file beside it (labels-key.jsonl)."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    key_path = path.parent / "labels-key.jsonl"
    keys = {}
    if key_path.exists():
        keys = {r["id"]: r for r in map(json.loads, key_path.open(encoding="utf-8")) if r}
    out = {}
    for r in rows:
        if r.get("label") not in (True, False):
            continue
        where = keys.get(r.get("id"), r)
        out[(where["index"], where["agent"], where["item"])] = bool(r["label"])
    return out


def item_pairs(
    graded: Mapping[tuple[int, str], Any], labels: Mapping[tuple[int, str, int], bool]
) -> list[tuple[bool, bool]]:
    out = []
    for (index, agent, item), label in labels.items():
        g = graded.get((index, agent))
        if g is not None and item < len(g.items):
            out.append((label, g.items[item].verified))
    return out


def accuracy(graded: Any, lines: Any, path: Path) -> None:
    labels = read_labels(path)
    pairs = item_pairs(graded, labels)
    if not pairs:
        print("  labels: none usable")
        return
    tp = sum(lab and got for lab, got in pairs)
    fp = sum(got and not lab for lab, got in pairs)
    fn = sum(lab and not got for lab, got in pairs)
    tn = len(pairs) - tp - fp - fn
    print(
        f"  item grades vs labels: n={len(pairs)} accuracy {(tp + tn) / len(pairs):.3f} "
        f"(tp {tp}, fp {fp}, fn {fn}, tn {tn}); labelled satisfied {tp + fn}"
    )


def label(args: argparse.Namespace) -> int:
    """Blind rows for a person to fill `label` with true or false (does this answer state
    this fact, as its evidence passage says it?): OUT/labels-todo.jsonl holds an id, the
    question, the fact, its evidence and the answer, shuffled, with no agent name and no
    grade; OUT/labels-key.jsonl maps each id to its task, agent and item."""
    lines = load_lines(args.out)
    rng = random.Random(args.seed)
    rows = []
    for line in lines:
        items = [*line["task"]["checklist_depth"], *line["task"]["checklist_width"]]
        for agent, ans in sorted(line["answers"].items()):
            if agent == "null" or "report" not in ans:
                continue
            for n, item in enumerate(items):
                rows.append((line, agent, n, item, ans))
    rng.shuffle(rows)  # a labeller sees agents in no fixed order
    todo = args.out / "labels-todo.jsonl"
    key = args.out / "labels-key.jsonl"
    with todo.open("w", encoding="utf-8") as fh, key.open("w", encoding="utf-8") as kh:
        for i, (line, agent, n, item, ans) in enumerate(rows):
            row = {
                "id": i,
                "question": line["task"]["question"],
                "fact": item["item"],
                "evidence": item.get("evidence"),
                "answer": ans["report"],
                "label": None,
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            kh.write(
                json.dumps({"id": i, "index": line["index"], "agent": agent, "item": n}) + "\n"
            )
    print(f"{len(rows)} rows to label in {todo} (key: {key})")
    return 0


def sweep(args: argparse.Namespace) -> int:
    from drarena.examiner.evidence import EvidenceArgs

    lines = load_lines(args.out)
    terms, pages, _ = grading_inputs(args.out)
    labels = read_labels(args.labels)
    print("recall_min hard_min  n  accuracy  fp  fn")
    for recall in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7):
        for hard in (0.0, 0.5, 1.0):
            graded = grade_all(lines, terms, pages, EvidenceArgs(recall_min=recall, hard_min=hard))
            pairs = item_pairs(graded, labels)
            fp = sum(g and not lab for lab, g in pairs)
            fn = sum(lab and not g for lab, g in pairs)
            acc = (len(pairs) - fp - fn) / max(len(pairs), 1)
            print(f"{recall:10.2f} {hard:8.1f} {len(pairs):3d} {acc:9.3f} {fp:3d} {fn:3d}")
    return 0


def semantic(args: argparse.Namespace) -> int:
    """Would a sentence encoder help? For every labelled (answer, item): the cosine of the item
    with the answer's best window under each encoder; item accuracy of the lexical rule alone
    against "lexical, or cosine >= s with the hard tokens right", for a grid of s; and the
    encoding time per answer (printed with the CPU, fp32 torch: the judge would pay it)."""
    from sentence_transformers import SentenceTransformer

    from drarena.corpus.terms import sentences
    from drarena.examiner.evidence import EvidenceArgs, hard_ok
    from drarena.examiner.grounding import windows
    from drarena.examiner.taskcheck import Task
    from drarena.search.embed import model_path

    lines = load_lines(args.out)
    terms, pages, _ = grading_inputs(args.out)
    labels = read_labels(args.labels)
    eargs = EvidenceArgs()
    graded = grade_all(lines, terms, pages, eargs)
    tasks = {line["index"]: (Task.from_dict(line["task"]), line) for line in lines}
    keys = [k for k in labels if (k[0], k[1]) in graded]
    print(f"{len(keys)} labelled (answer, item) pairs; lexical rule {eargs}")
    for name in args.models.split(","):
        path = model_path(name) if "/" not in name else Path(name)
        model = SentenceTransformer(str(path), device="cpu")
        started = time.perf_counter()
        cos: dict[tuple[int, str, int], float] = {}
        answers = 0
        for index, agent, item in keys:
            task, line = tasks[index]
            its = [*task.checklist_depth, *task.checklist_width]
            wins = windows(sentences(line["answers"][agent]["report"], min_words=1)) or [""]
            vecs = model.encode([its[item].item, *wins], normalize_embeddings=True)
            cos[(index, agent, item)] = float((vecs[1:] @ vecs[0]).max())
            answers += 1
        per = (time.perf_counter() - started) / max(answers, 1)
        print(f"  {name}: {per * 1000:.0f} ms per (answer, item) encoded")
        base = sum(graded[k[:2]].items[k[2]].verified == labels[k] for k in keys)
        print(f"    lexical alone: accuracy {base / len(keys):.3f}")
        for s_min in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85):
            right = 0
            for k in keys:
                g = graded[k[:2]].items[k[2]]
                hard = hard_ok(g.hard_found, g.hard_wanted, eargs.hard_min)
                ok = g.verified or (cos[k] >= s_min and hard and not graded[k[:2]].guard)
                right += ok == labels[k]
            print(f"    lexical or cosine >= {s_min:.2f}: accuracy {right / len(keys):.3f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--config", type=Path, default=REPO / "configs/demo-qwen.yaml")
    c.add_argument("--snapshot", type=Path, default=REPO / "snapshots/pydocs")
    c.add_argument("--taskgen", default=None, help="llm or extractive (default: the config's)")
    c.add_argument("--tasks", type=int, default=12)
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--model", default=None, help="serve this model (e.g. qwen1.5b-cpu)")
    c.add_argument(
        "--agents", default=None, help="comma-separated ladder agents (default: all four)"
    )
    c.add_argument("--out", type=Path, required=True)
    g = sub.add_parser("grade")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--labels", type=Path, default=None)
    g.add_argument("--evidence-args", default=None, help="JSON of EvidenceArgs")
    lab = sub.add_parser("label")
    lab.add_argument("--out", type=Path, required=True)
    lab.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("sweep")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--labels", type=Path, required=True)
    m = sub.add_parser("semantic")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--labels", type=Path, required=True)
    m.add_argument(
        "--models",
        default="all-MiniLM-L6-v2",
        help="comma-separated: all-MiniLM-L6-v2 (the index's) or sentence-transformers folders",
    )
    args = p.parse_args(argv)
    run = {"collect": collect, "grade": grade, "label": label, "sweep": sweep, "semantic": semantic}
    return run[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
