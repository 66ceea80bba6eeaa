"""Agreement of a run's ratings with an outside leaderboard (pure, except `read_scores`).

Why: the paper's headline claim (Table 4) is rank agreement with LMSYS Search Arena: Spearman
0.94, Pearson 0.74. `drarena run compare RUN --against FILE.csv` computes the same three
coefficients (Spearman, Kendall tau-b, Pearson) over the agents the run and the file share,
each with a seeded percentile bootstrap over those agents (resamples in which a side is
constant are skipped: the coefficient is undefined there).

The CSV: one `agent,score` row per agent, an optional header row (a first row whose score is
not a number), `#` comment lines and blank lines allowed. Read bounded (MAX_BYTES, MAX_ROWS);
a bad row is one line naming the file and line.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from drarena.errors import DrarenaError
from drarena.files import read_bounded
from drarena.records import Record

MAX_BYTES = 1_000_000
MAX_ROWS = 10_000
METHODS = ("spearman", "kendall", "pearson")


@dataclasses.dataclass(frozen=True, slots=True)
class Correlation(Record):
    method: str
    value: float | None
    lower: float | None
    upper: float | None
    resamples_used: int


@dataclasses.dataclass(frozen=True, slots=True)
class Comparison(Record):
    against: str
    agents: tuple[str, ...]
    ours: tuple[float, ...]
    theirs: tuple[float, ...]
    only_in_run: tuple[str, ...]
    only_in_file: tuple[str, ...]
    correlations: tuple[Correlation, ...]
    resamples: int
    seed: int


def parse_scores(text: str, where: str) -> dict[str, float]:
    """agent -> score from CSV text; `where` names the file in errors."""
    scores: dict[str, float] = {}
    reader = csv.reader(io.StringIO(text))
    rows = 0
    for row in _rows(reader, where):
        n = reader.line_num  # the physical line the row ended on
        if n > MAX_ROWS:
            raise DrarenaError(f"{where}:{n}: more than {MAX_ROWS} rows")
        cells = [c.strip() for c in row]
        if not cells or not any(cells) or cells[0].startswith("#"):
            continue
        if len(cells) != 2:
            raise DrarenaError(f"{where}:{n}: expected 2 columns (agent, score), got {len(cells)}")
        name, value = cells
        rows += 1
        try:
            score = float(value)
        except ValueError:
            if rows == 1:
                continue  # a header row
            raise DrarenaError(f"{where}:{n}: score {value!r:.40} is not a number") from None
        if not name:
            raise DrarenaError(f"{where}:{n}: empty agent name")
        if not math.isfinite(score):
            raise DrarenaError(f"{where}:{n}: score {value!r:.40} is not finite")
        if name in scores:
            raise DrarenaError(f"{where}:{n}: agent {name!r:.80} listed twice")
        scores[name] = score
    return scores


def _rows(reader: Any, where: str) -> Iterator[list[str]]:
    """The reader's rows; what csv refuses (a field over its 128 KiB limit) is
    one line naming the file and the line it stopped on."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DrarenaError(f"{where}:{reader.line_num}: {exc}") from None
        yield row


def read_scores(path: Path) -> dict[str, float]:
    """The CSV at `path`, read bounded: a file over MAX_BYTES or not UTF-8 is one line."""
    data = read_bounded(path, MAX_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DrarenaError(f"{path}:{line}: not UTF-8") from None
    scores = parse_scores(text, str(path))
    if not scores:
        raise DrarenaError(f"{path}: no agent,score rows")
    return scores


def _ranks(v: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank), 1-based."""
    order = np.argsort(v, kind="mergesort")
    ranks = np.empty(len(v))
    i = 0
    sorted_v = v[order]
    while i < len(v):
        j = i
        while j + 1 < len(v) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson_r(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if den <= 0:
        return None
    return max(-1.0, min(1.0, float(dx @ dy) / den))


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float | None:
    return pearson_r(_ranks(x), _ranks(y))


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b (ties in either side adjust the denominator)."""
    n = len(x)
    concordant = discordant = tie_x = tie_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            sx = np.sign(x[i] - x[j])
            sy = np.sign(y[i] - y[j])
            if sx == 0 and sy == 0:
                continue
            if sx == 0:
                tie_x += 1
            elif sy == 0:
                tie_y += 1
            elif sx == sy:
                concordant += 1
            else:
                discordant += 1
    den = math.sqrt((concordant + discordant + tie_x) * (concordant + discordant + tie_y))
    if den == 0:
        return None
    return (concordant - discordant) / den


FUNCS: dict[str, Callable[[np.ndarray, np.ndarray], float | None]] = {
    "spearman": spearman_rho,
    "kendall": kendall_tau,
    "pearson": pearson_r,
}


def compare(
    ours: Mapping[str, float],
    theirs: Mapping[str, float],
    *,
    against: str = "",
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Comparison:
    """The three coefficients over the shared agents (at least 3, else a DrarenaError)."""
    shared = sorted(set(ours) & set(theirs))
    if len(shared) < 3:
        raise DrarenaError(
            f"{against or 'comparison'}: {len(shared)} agent(s) in common with the run "
            f"(need 3); the run has {', '.join(sorted(ours))[:300]}"
        )
    x = np.array([ours[a] for a in shared])
    y = np.array([theirs[a] for a in shared])
    rng = np.random.default_rng(seed)
    picks = [rng.integers(0, len(shared), size=len(shared)) for _ in range(max(resamples, 0))]
    rows = []
    tail = (1.0 - level) / 2 * 100
    for method in METHODS:
        f = FUNCS[method]
        value = f(x, y)
        boot = [v for p in picks if (v := f(x[p], y[p])) is not None]
        lo = hi = None
        if boot:
            lo = round(float(np.percentile(boot, tail)), 4)
            hi = round(float(np.percentile(boot, 100 - tail)), 4)
        rows.append(
            Correlation(method, None if value is None else round(value, 4), lo, hi, len(boot))
        )
    return Comparison(
        against=against,
        agents=tuple(shared),
        ours=tuple(round(float(v), 4) for v in x),
        theirs=tuple(round(float(v), 4) for v in y),
        only_in_run=tuple(sorted(set(ours) - set(theirs))),
        only_in_file=tuple(sorted(set(theirs) - set(ours))),
        correlations=tuple(rows),
        resamples=resamples,
        seed=seed,
    )


def to_text(c: Comparison) -> str:
    lines = [f"agreement with {c.against} over {len(c.agents)} agents:"]
    for r in c.correlations:
        value = "undefined" if r.value is None else f"{r.value:+.3f}"
        interval = (
            f" (95% bootstrap {r.lower:+.3f} to {r.upper:+.3f}, {r.resamples_used} resamples)"
            if r.lower is not None and r.upper is not None
            else ""
        )
        lines.append(f"  {r.method:<9} {value}{interval}")
    if c.only_in_run:
        lines.append(f"  only in the run: {', '.join(c.only_in_run)}")
    if c.only_in_file:
        lines.append(f"  only in the file: {', '.join(c.only_in_file)}")
    return "\n".join(lines) + "\n"
