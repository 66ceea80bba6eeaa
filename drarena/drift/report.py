"""A drift run's result: the record, its JSON file, the terminal table and the HTML section.

Why one record for all three: the table, drift.json and the HTML section are views of the
same `DriftReport`, so they cannot disagree. Everything that came from a page goes through
`html_text` on its way into HTML (a `<script>` in a changed sentence stays text; a MB-long
sentence is cut, drift.json keeps it whole), and through `_cut` into the terminal.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drarena.drift.pages import PageDiff, Verdict
from drarena.drift.stale import TaskImpact, TreeImpact
from drarena.errors import DrarenaError
from drarena.files import write_atomic
from drarena.records import Record

SCHEMA_VERSION = 1
VERDICT_ORDER = (
    Verdict.GONE,
    Verdict.REDIRECTED,
    Verdict.CHANGED,
    Verdict.UNCHECKED,
    Verdict.UNCHANGED,
)
SECTION_BEGIN = "<!-- drift:begin -->"
SECTION_END = "<!-- drift:end -->"


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotRef(Record):
    name: str
    path: str
    fingerprint: str


@dataclasses.dataclass(frozen=True, slots=True)
class DriftReport(Record):
    """`against` is "live" or the later snapshot; pages are sorted by URL."""

    schema_version: int
    created: str
    snapshot: SnapshotRef
    against: str
    against_snapshot: SnapshotRef | None
    options: dict[str, Any]
    counts: dict[str, int]
    pages: tuple[PageDiff, ...]
    trees: tuple[TreeImpact, ...]
    tasks: TaskImpact | None = None

    def drifted(self) -> list[PageDiff]:
        order = {v: i for i, v in enumerate(VERDICT_ORDER)}
        return sorted(
            (p for p in self.pages if p.verdict != Verdict.UNCHANGED),
            key=lambda p: (order[p.verdict], p.url),
        )


def count_verdicts(pages: Sequence[PageDiff]) -> dict[str, int]:
    return {v.value: sum(p.verdict == v for p in pages) for v in VERDICT_ORDER}


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def write_json(report: DriftReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.to_dict(), indent=1, sort_keys=True, ensure_ascii=False)
    # a lone surrogate (a checklist item of a run.json edited with "\ud800") has no UTF-8:
    # written as the JSON escape it came as, so the file is written and reads back the same
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    write_atomic(path, text + "\n")


def read_json(path: Path) -> DriftReport:
    """drift.json as written by write_json. A damaged or foreign file (a report re-rendered by
    `drarena rank` reads the run's) is one line naming it and how to write it again."""
    from pydantic import ValidationError

    from drarena.files import read_bounded
    from drarena.ledger.folder import MAX_TEXT_BYTES

    raw = read_bounded(path, MAX_TEXT_BYTES)  # a larger file is one line, having read that much
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"a JSON object is needed, got {type(data).__name__}")
        return DriftReport.from_dict(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        why = f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
    except RecursionError:
        why = "nested too deeply"
    except ValueError as exc:  # not UTF-8, not JSON, unknown fields
        why = str(exc)
    raise DrarenaError(
        f"{path}: not a drift report ({' '.join(why.split())[:200]}); move it aside, or write "
        f"it again with `drarena drift SNAPSHOT --run {path.parent}`"
    )


# -- terminal -----------------------------------------------------------------------------


# C0 and C1 controls (ESC starts a terminal's colour and title sequences): a live server's
# Location or reason, or a snapshot manifest's name, reaches the table, and must not reach
# the terminal as commands; bidi embeddings, overrides and isolates would reorder the line;
# a lone surrogate (a "\ud800" in a manifest) has no UTF-8, and printing it failed
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _cut(text: str, width: int) -> str:
    text = " ".join(_CONTROLS.sub("?", text.replace("\n", " ").replace("\t", " ")).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int]) -> str:
    cells = [list(head), *[list(r) for r in rows]]
    sizes = [min(w, max(len(c[i]) for c in cells)) for i, w in enumerate(widths)]
    return "\n".join(
        "  ".join(_cut(c, sizes[i]).ljust(sizes[i]) for i, c in enumerate(row)).rstrip()
        for row in cells
    )


def against_label(report: DriftReport) -> str:
    ref = report.against_snapshot
    return "live" if ref is None else f"{ref.name} ({ref.fingerprint[:12]})"


def render_table(report: DriftReport) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in report.counts.items())
    # the names and fingerprints are manifest.json's (any text), the run name a folder's
    lines = [
        _cut(
            f"drift of {report.snapshot.name} ({report.snapshot.fingerprint[:12]}) against "
            f"{against_label(report)}: {len(report.pages)} pages: {counts}",
            400,
        )
    ]
    drifted = report.drifted()
    if drifted:
        lines += [
            "",
            _table(
                ("verdict", "page", "reason"),
                [(p.verdict.value, p.url, p.reason) for p in drifted],
                (10, 60, 100),
            ),
        ]
    hit = [t for t in report.trees if t.affected]
    if report.trees:
        lines += ["", f"trees: {len(hit)} of {len(report.trees)} have drifted nodes"]
        if hit:
            lines.append(
                _table(
                    ("tree", "nodes", "changed", "gone", "redirected"),
                    [
                        (t.tree, str(t.nodes), str(t.changed), str(t.gone), str(t.redirected))
                        for t in hit
                    ],
                    (12, 6, 8, 6, 10),
                )
            )
    tasks = report.tasks
    if tasks is not None:
        lines += [
            "",
            _cut(
                f"stale checklist items: {len(tasks.stale)} of {tasks.items} ({tasks.tasks}"
                f" tasks in {tasks.matches} matches of {tasks.run}; {tasks.unlocated} "
                f"unlocated, {tasks.unchecked} unchecked)",
                400,
            ),
        ]
        if tasks.stale:
            lines.append(
                _table(
                    ("match", "round", "item", "source", "reason"),
                    [
                        (
                            s.match_id,
                            str(s.round),
                            f"{s.checklist}[{s.index}] {s.item}",
                            s.source_url,
                            s.reason,
                        )
                        for s in tasks.stale
                    ],
                    (16, 5, 50, 50, 70),
                )
            )
    return "\n".join(lines)


# -- HTML ---------------------------------------------------------------------------------


LIST_CAP = 200  # sentences listed per page and kind; the rest are counted (drift.json: all)


def _esc(value: object) -> str:
    from drarena.htmlpage import html_text

    return html_text(value)


def _more(items: Sequence[object]) -> str:
    """The note closing a list cut at LIST_CAP items."""
    more = len(items) - LIST_CAP
    return f"<li class=muted>and {more} more (drift.json has them all)</li>" if more > 0 else ""


def _sentences(label: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    lis = "".join(f"<li>{_esc(s)}</li>" for s in items[:LIST_CAP])
    return f"<p>{_esc(label)}</p><ul>{lis}{_more(items)}</ul>"


def _page_detail(p: PageDiff) -> str:
    changed = "".join(
        f"<li><del>{_esc(c.old)}</del><br><ins>{_esc(c.new)}</ins></li>"
        for c in p.changed[:LIST_CAP]
    )
    body = (
        f"<p class=muted>{_esc(' | '.join(p.hops))}</p>"
        + (f"<p>changed sentences</p><ul>{changed}{_more(p.changed)}</ul>" if changed else "")
        + _sentences("removed sentences", p.removed)
        + _sentences("added sentences", p.added)
    )
    return (
        f"<details><summary>{_esc(p.verdict.value)}: {_esc(p.url)}: {_esc(p.reason)}"
        f"</summary>{body}</details>"
    )


def drift_section(report: DriftReport) -> str:
    """The drift part of a page: counts, drifted pages, trees, stale checklist items."""
    counts = "".join(f"<td class=num>{n}</td>" for n in report.counts.values())
    heads = "".join(f"<th>{_esc(v)}</th>" for v in report.counts)
    parts = [
        f"<h2>Drift against {_esc(against_label(report))}</h2>"
        f"<p class=muted>snapshot {_esc(report.snapshot.name)} "
        f"{_esc(report.snapshot.fingerprint)}, {_esc(report.created)}</p>"
        f"<table><tr>{heads}</tr><tr>{counts}</tr></table>",
        "".join(_page_detail(p) for p in report.drifted()),
    ]
    hit = [t for t in report.trees if t.affected]
    if report.trees:
        rows = "".join(
            f"<tr><td>{_esc(t.tree)}</td><td class=num>{t.nodes}</td><td class=num>{t.changed}"
            f"</td><td class=num>{t.gone}</td><td class=num>{t.redirected}</td><td>"
            + "<br>".join(f"{_esc(n.verdict.value)}: {_esc(n.url)}" for n in t.affected)
            + "</td></tr>"
            for t in hit
        )
        parts.append(
            f"<h3>Trees ({len(hit)} of {len(report.trees)} drifted)</h3>"
            "<table><tr><th>tree</th><th>nodes</th><th>changed</th><th>gone</th>"
            f"<th>redirected</th><th>drifted nodes</th></tr>{rows}</table>"
        )
    tasks = report.tasks
    if tasks is not None:
        rows = "".join(
            f"<tr><td>{_esc(s.match_id)}</td><td class=num>{s.round}</td>"
            f"<td>{_esc(s.checklist)}[{s.index}] {_esc(s.item)}</td><td>{_esc(s.source_url)}"
            f"</td><td>{_esc(s.reason)}"
            + "".join(f"<br><del>{_esc(a)}</del>" for a in s.support)
            + "".join(f"<br><ins>{_esc(b)}</ins>" for b in s.now)
            + "</td></tr>"
            for s in tasks.stale
        )
        parts.append(
            f"<h3>Stale checklist items ({len(tasks.stale)} of {tasks.items})</h3>"
            f"<p class=muted>{tasks.tasks} tasks in {tasks.matches} matches; "
            f"{tasks.unlocated} items unlocated, {tasks.unchecked} unchecked</p>"
            "<table><tr><th>match</th><th>round</th><th>item</th><th>source</th>"
            f"<th>why stale</th></tr>{rows}</table>"
        )
    return f"{SECTION_BEGIN}<section id=drift>{''.join(parts)}</section>{SECTION_END}"


# how every drift page opens: `drift --json OUT.json` replaces an OUT.html only if it starts so
PAGE_START = b"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>drarena drift: "


def render_page(report: DriftReport) -> str:
    """drift.html: the section as a self-contained page."""
    from drarena.htmlpage import CSS

    title = f"drarena drift: {report.snapshot.name} against {against_label(report)}"
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_esc(title)}"
        f"</title><style>{CSS}</style></head><body><h1>{_esc(title)}</h1>"
        f"{drift_section(report)}</body></html>\n"
    )


def splice_section(page: str, section: str) -> str:
    """`page` with its drift section replaced by `section` (added before </body> if none)."""
    start = page.find(SECTION_BEGIN)
    end = page.find(SECTION_END, start) if start != -1 else -1  # a stray end before: not ours
    if end != -1:
        return page[:start] + section + page[end + len(SECTION_END) :]
    at = page.rfind("</body>")
    return page + section if at == -1 else page[:at] + section + page[at:]
