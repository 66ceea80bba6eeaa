"""The measured curves of bench_scale.py as one SVG: peak memory and wall time of import and
extraction against the pages, from the JSON files its runs wrote (`--json`).

    .venv/bin/python bench/plot_scale.py bench/data/scale-2026-12-07/*.json \
        --out docs/img/scale.svg

Every point is a measurement (no projection is drawn); a size measured by several files
takes the last file's figure. The SVG is written without a date or random ids, so the same
figures give the same bytes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# (row key in bench_scale's JSON, label)
ROWS = (
    ("import-local", "import, 1 process"),
    ("import-ray", "import, Ray 2 workers (driver)"),
    ("extract-local-1", "extract, 1 process"),
    ("extract-ray-2", "extract, Ray 2 workers (driver)"),
)


def points(files: list[Path]) -> dict[str, dict[int, dict[str, Any]]]:
    """row -> pages -> that row's figures, over every file."""
    out: dict[str, dict[int, dict[str, Any]]] = {key: {} for key, _ in ROWS}
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for pages, rows in data.items():
            for key, _ in ROWS:
                if int(pages) and key in rows:
                    out[key][int(pages)] = rows[key]
    return out


def plot(series: dict[str, dict[int, dict[str, Any]]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "drarena"  # fixed ids: the same figures, the same bytes
    fig, (memory, wall) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label in ROWS:
        measured = sorted(series[key].items())
        if not measured:
            continue
        x = [pages for pages, _ in measured]
        memory.plot(x, [r["driver_mb"] for _, r in measured], marker="o", label=label)
        wall.plot(x, [r["wall"] for _, r in measured], marker="o", label=label)
    memory.set(xscale="log", xlabel="pages", ylabel="peak RSS, MB (VmHWM)", ylim=(0, None))
    memory.set_title("memory: bounded by the stage")
    wall.set(xscale="log", yscale="log", xlabel="pages", ylabel="wall time, s")
    wall.set_title("time: linear in the pages")
    memory.legend(fontsize=7)
    for axes in (memory, wall):
        axes.grid(True, which="major", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    kind = out.suffix.lstrip(".") or "svg"
    fig.savefig(out, format=kind, metadata={"Date": None} if kind == "svg" else None)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, nargs="+", help="bench_scale.py --json outputs")
    ap.add_argument("--out", type=Path, default=Path("docs/img/scale.svg"))
    ap.add_argument("--title", default="bench_scale.py, synthetic pages")
    args = ap.parse_args()
    series = points(args.files)
    plot(series, args.out, args.title)
    for key, label in ROWS:
        for pages, r in sorted(series[key].items()):
            print(f"{label:34} {pages:>9,} pages  {r['wall']:8.1f} s  {r['driver_mb']:6.0f} MB")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
