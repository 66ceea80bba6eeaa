"""Which trees and which ground truth a snapshot's drift touches (pure, plus two loaders).

Why sentence support: a checklist item is stale only when what it rests on moved, not when
an unrelated paragraph of its page did. The item's supporting sentences are the old page's
sentences sharing the most content words with it; the item is stale when its page is gone
or redirected, or when any supporting sentence was removed or changed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from drarena.corpus.records import Tree
from drarena.drift.pages import PageDiff, Verdict, sentences
from drarena.errors import DrarenaError
from drarena.ledger.records import MatchRecord
from drarena.records import Record
from drarena.web.warc.urls import canonicalize_url

SUPPORT_MIN = 0.5  # share of the item's content words a sentence must hold to support it
SUPPORT_SLACK = 0.1  # sentences within this of the best score also support the item
SUPPORT_MAX = 3
_TOKEN = re.compile(r"\w+")
_STOP = (
    "a an and are as at be been but by can do does for from has have how if in into is "
    "it its not of on or than that the their them then there these this those to was "
    "were what when where which while who will with you your"
)
STOPWORDS = frozenset(_STOP.split(" "))
AFFECTED = (Verdict.CHANGED, Verdict.GONE, Verdict.REDIRECTED)


@dataclasses.dataclass(frozen=True, slots=True)
class NodeImpact(Record):
    node: str
    url: str
    depth: int
    verdict: Verdict
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class TreeImpact(Record):
    tree: str
    nodes: int
    changed: int
    gone: int
    redirected: int
    unchecked: int
    affected: tuple[NodeImpact, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class StaleItem(Record):
    """A checklist item whose ground truth moved; `support` are the old sentences it rested
    on that no longer stand, `now` what they became (empty when removed)."""

    match_id: str
    round: int
    tree: str
    checklist: str  # depth | width
    index: int
    item: str
    source_url: str
    verdict: Verdict
    reason: str
    support: tuple[str, ...] = ()
    now: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class TaskImpact(Record):
    run: str
    matches: int
    tasks: int
    items: int
    stale: tuple[StaleItem, ...]
    unlocated: int  # items on a changed page whose supporting sentence was not found
    unchecked: int  # items whose page was not compared or could not be checked


def _key(url: str) -> str:
    try:
        return canonicalize_url(url)
    except ValueError:
        return url


def tree_impacts(trees: Iterable[Tree], diffs: Mapping[str, PageDiff]) -> list[TreeImpact]:
    """Per tree (sorted by id): its nodes whose page changed, went or moved."""
    out = []
    for tree in sorted(trees, key=lambda t: t.id):
        affected = []
        unchecked = 0
        for node in tree.nodes:
            diff = diffs.get(_key(node.url))
            if diff is None or diff.verdict == Verdict.UNCHECKED:
                unchecked += 1
            elif diff.verdict in AFFECTED:
                affected.append(
                    NodeImpact(node.id, node.url, node.depth, diff.verdict, diff.reason)
                )
        affected.sort(key=lambda n: (n.url, n.node))
        count = {v: sum(n.verdict == v for n in affected) for v in AFFECTED}
        out.append(
            TreeImpact(
                tree.id,
                len(tree.nodes),
                count[Verdict.CHANGED],
                count[Verdict.GONE],
                count[Verdict.REDIRECTED],
                unchecked,
                tuple(affected),
            )
        )
    return out


def content_tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.casefold()) if t not in STOPWORDS}


def support(item: str, page_sentences: Sequence[str]) -> tuple[str, ...]:
    """The sentences an item rests on: best content-word coverage first, then page order."""
    wanted = content_tokens(item)
    if not wanted:
        return ()
    scored = []
    for index, sentence in enumerate(page_sentences):
        score = len(wanted & content_tokens(sentence)) / len(wanted)
        if score >= SUPPORT_MIN:
            scored.append((-score, index, sentence))
    if not scored:
        return ()
    scored.sort()
    best = -scored[0][0]
    return tuple(s for neg, _, s in scored[:SUPPORT_MAX] if -neg >= best - SUPPORT_SLACK)


def _item_verdict(
    item: str, diff: PageDiff, old_text: str
) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """(reason, moved support, what it became) when the item is stale, else None."""
    if diff.verdict == Verdict.GONE:
        return f"source page gone ({diff.reason})", (), ()
    if diff.verdict == Verdict.REDIRECTED:
        return f"source page redirects to {diff.target}", (), ()
    if diff.verdict != Verdict.CHANGED:
        return None
    basis = support(item, sentences(old_text))
    moved = [s for s in basis if s in diff.stale_sentences]
    if not moved:
        return None
    changes = {c.old: c for c in diff.changed}
    notes, now = [], []
    for sentence in moved:
        change = changes.get(sentence)
        if change is None:
            notes.append("source sentence removed")
            continue
        now.append(change.new)
        if change.figures_changed:
            before = ", ".join((*change.numbers_old, *change.dates_old)) or "-"
            after = ", ".join((*change.numbers_new, *change.dates_new)) or "-"
            notes.append(f"source sentence changed: {before} -> {after}")
        else:
            notes.append(f"source sentence reworded (similarity {change.ratio:.2f})")
    return "; ".join(notes), tuple(moved), tuple(now)


def task_impacts(
    run_name: str,
    matches: Sequence[MatchRecord],
    diffs: Mapping[str, PageDiff],
    old_texts: Mapping[str, str],
) -> TaskImpact:
    """Every checklist item of every generated task, in match, round, depth-then-width order;
    only the stale ones are kept, the rest counted."""
    stale: list[StaleItem] = []
    tasks = items = unlocated = unchecked = 0
    for match in sorted(matches, key=lambda m: m.match_id):
        for rnd in match.rounds:
            task = rnd.task.task
            if task is None:
                continue
            tasks += 1
            listed = [("depth", i, c) for i, c in enumerate(task.checklist_depth)] + [
                ("width", i, c) for i, c in enumerate(task.checklist_width)
            ]
            for kind, index, check in listed:
                items += 1
                key = _key(check.source_url)
                diff = diffs.get(key)
                if diff is None or diff.verdict == Verdict.UNCHECKED:
                    unchecked += 1
                    continue
                old_text = old_texts.get(key, "")
                found = _item_verdict(check.item, diff, old_text)
                if found is None:
                    if diff.verdict == Verdict.CHANGED and not support(
                        check.item, sentences(old_text)
                    ):
                        unlocated += 1
                    continue
                reason, moved, now = found
                stale.append(
                    StaleItem(
                        match.match_id,
                        rnd.index,
                        match.tree,
                        kind,
                        index,
                        check.item,
                        check.source_url,
                        diff.verdict,
                        reason,
                        moved,
                        now,
                    )
                )
    return TaskImpact(run_name, len(matches), tasks, items, tuple(stale), unlocated, unchecked)


# -- loaders ------------------------------------------------------------------------------


def load_snapshot_trees(snapshot_dir: Path) -> list[Tree]:
    """Trees of snapshots/<name>/trees/ (none when the folder is absent).

    Only drarena's names (TREE_FILE), as search's gold_from_trees reads them: trees/ may
    hold the user's own files, and a trees/notes.json was refused as not a tree file."""
    from drarena.corpus.trees import TREE_FILE, TREES_DIR, load_tree

    folder = Path(snapshot_dir) / TREES_DIR
    if not folder.is_dir():
        return []
    return [load_tree(p) for p in sorted(folder.glob("*.json")) if TREE_FILE.fullmatch(p.name)]


def load_run_matches(run_dir: Path, snapshot_fingerprint: str) -> list[MatchRecord]:
    """A finished (or partly finished) run's matches; its snapshot must be this one."""
    from drarena.ledger.folder import RunDir

    run = RunDir(Path(run_dir))
    if not run.path.is_dir():
        raise DrarenaError(f"{run.path}: no such run folder")
    header = run.header()
    if header is None:
        raise DrarenaError(f"{run.path}: no run.json (not a run folder)")
    played = header.snapshot_fingerprint
    if played and played != snapshot_fingerprint:
        raise DrarenaError(
            f"{run.path}: the run was played on snapshot {str(played)[:12]}..., "
            f"not on this one ({snapshot_fingerprint[:12]}...)"
        )
    if run.matches_dir.is_dir() and any(run.matches_dir.glob("*.json")):
        return sorted(run.finished().values(), key=lambda m: m.match_id)
    if run.log_path.is_file():
        return run.read_log()
    raise DrarenaError(
        f"{run.path}: no finished matches (neither matches/*.json nor matches.jsonl)"
    )
