"""The end of every command that changes a run's matches or figures (`drarena tournament`,
`run rank`, `run replay`, `run add-agent`, `run rejudge --write`, `run compare`): one
`finish_run` reads the run, computes every report section once, writes report.html and the
leaderboard files, and prints what the command shows of them.

Why one: the write-and-print tail used to be repeated by each command, each with its own
order of reads and writes; here every input is read before anything is written (a damaged
timings.jsonl, labels file, comparison.json or drift.json stops the command with the
folder as it was) and the leaderboard's bootstrap runs once.

What is printed is named by `show`, always in this order: "check" (the examiner-check's
lines), "table" (the leaderboard as Markdown) or "json" (`run rank --json`'s object),
"timing" (seconds per answer), the caller's `notes`, "report" (report.html's path), "live"
(a live run's provider and capture snapshots).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from drarena.config.stored import read_finished
from drarena.config.tournament import TournamentConfig
from drarena.files import write_atomic
from drarena.ledger.folder import RunDir
from drarena.ledger.header import RunHeader
from drarena.ledger.leaderboard import to_markdown, write_leaderboard
from drarena.ledger.records import MatchRecord
from drarena.report.run import REPORT_FILE, RunAnalyses, render_run
from drarena.report.section import ReportRun

SHOW = ("check", "table", "json", "timing", "report", "live")


@dataclasses.dataclass(frozen=True, slots=True)
class Finished:
    """A finished run's figures (`analyses`), as read (`run`), and its report.html path."""

    run: ReportRun
    analyses: RunAnalyses
    report: Path

    @property
    def leaderboard_md(self) -> str:
        return to_markdown(self.analyses.rows)

    def lines(self, show: Iterable[str], notes: Sequence[str] = ()) -> list[str]:
        """The lines of the parts `show` names, in the module docstring's order."""
        wanted = set(show)
        unknown = sorted(wanted - set(SHOW))
        if unknown:
            raise ValueError(f"finish_run: unknown parts {unknown} (known: {', '.join(SHOW)})")
        header = self.run.header
        out: list[str] = []
        if "check" in wanted:
            out += check_lines(header)
        if "table" in wanted:
            out.append(self.leaderboard_md)
        if "json" in wanted:
            out.append(json.dumps(self.analyses.to_dict(), indent=2, sort_keys=True))
        if "timing" in wanted and self.run.seconds:
            out.append(
                "time per answer: "
                + ", ".join(
                    f"{a} {sum(v) / len(v):.1f} s" for a, v in sorted(self.run.seconds.items())
                )
            )
        out += notes
        if "report" in wanted:
            out.append(f"report: {self.report}")
        if "live" in wanted:
            out += live_lines(header)
        return out


def finish_run(
    run: RunDir,
    config: TournamentConfig,
    log: Sequence[MatchRecord],
    *,
    show: Iterable[str] = ("table", "report"),
    notes: Callable[[], Sequence[str]] | Sequence[str] = (),
    leaderboard: bool = True,
    say: Callable[[str], None] = print,
) -> Finished:
    """Read and compute everything, then write report.html and (`leaderboard`) the
    leaderboard's .md, .csv and .json from the same rows (the bytes the engine wrote when it
    played the run), then `say` the parts `show` names. `notes`: the command's own lines
    after the figures (a callable is called after the writes, so a time it prints includes
    them); `leaderboard=False` (`run compare`) rewrites the report alone."""
    rendered = render_run(run, config, log)
    path = run.path / REPORT_FILE
    write_atomic(path, rendered.page)
    if leaderboard:
        write_leaderboard(run, rendered.analyses.rows)
    done = Finished(rendered.run, rendered.analyses, path)
    for line in done.lines(show, notes() if callable(notes) else notes):
        say(line)
    return done


def rank_run(
    path: Path, *, show: Iterable[str] = ("table",)
) -> tuple[RunDir, list[MatchRecord], Finished]:
    """`drarena run rank` (and `drarena.rank`): a finished run ranked again from its
    matches.jsonl, the leaderboard files and report.html rewritten (finish_run, showing
    `show`); returns the run, its log and what finish_run computed. An empty log is refused:
    an empty table would overwrite the real one. Every input is read before anything is
    written: a damaged one (a timings.jsonl that is not UTF-8) overwrites nothing."""
    run, config, log = read_finished(
        path, "nothing ranked, the leaderboard and report are left as they are"
    )
    return run, log, finish_run(run, config, log, show=show)


def check_lines(header: RunHeader | None) -> list[str]:
    """The run's examiner-check figures, and a one-line warning when it cannot rank."""
    from drarena.validity.reuse import header_lines

    block = None if header is None else header.examiner_check
    return list(header_lines(block.as_json())) if block is not None else []


def live_lines(header: RunHeader | None) -> list[str]:
    """A live run's provider and capture snapshots, as its header records them."""
    live = None if header is None else header.live
    if live is None:
        return []
    return [
        f"mode: live{' (replayed offline)' if live.replayed else ''}, provider "
        f"{live.provider.kind} {live.provider.args}",
        *(f"capture: {c.path} ({c.fingerprint or 'unfinished'})" for c in live.captures),
    ]
