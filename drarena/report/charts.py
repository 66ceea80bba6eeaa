"""Inline SVG charts of report.html's sections, built from numbers only (labels through
`esc`): horizontal bars and a labelled scatter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from drarena.htmlpage import html_text as esc


def opt(value: float | None, fmt: str = ".3f", none: str = "n/a") -> str:
    """`value` formatted, or `none` for a figure that is undefined."""
    return none if value is None else format(value, fmt)


def bars_svg(counts: Mapping[str, int], label: str) -> str:
    """Horizontal bars, one per key, labelled with count and share."""
    total = sum(counts.values())
    if not counts:
        return "<p class=muted>none</p>"
    width, left, row_h = 520, 130, 20
    top = max(counts.values()) or 1
    parts = []
    for i, (key, n) in enumerate(counts.items()):
        y = 4 + i * row_h
        w = (width - left - 90) * n / top
        share = f"{n / total:.0%}" if total else "0%"
        parts.append(
            f'<text x="4" y="{y + 12}">{esc(key)}</text>'
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="13" fill="#4a7"/>'
            f'<text x="{left + w + 6:.1f}" y="{y + 12}">{n} ({share})</text>'
        )
    height = 8 + len(counts) * row_h
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(label)}">'
        f"{''.join(parts)}</svg>"
    )


def scatter_svg(
    points: Sequence[tuple[float, float, str]], x_label: str, y_label: str, label: str
) -> str:
    """A labelled scatter of (x, y, name) points with axis extents printed."""
    if not points:
        return "<p class=muted>no points</p>"
    width, height, pad = 520, 320, 50
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    x1 = x1 if x1 > x0 else x0 + 1.0
    y1 = y1 if y1 > y0 else y0 + 1.0

    def px(v: float) -> float:
        return pad + (v - x0) / (x1 - x0) * (width - 2 * pad)

    def py(v: float) -> float:
        return height - pad - (v - y0) / (y1 - y0) * (height - 2 * pad)

    parts = [
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        'stroke="#888"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>',
        f'<text x="{width / 2:.0f}" y="{height - 12}" text-anchor="middle">{esc(x_label)}</text>',
        f'<text x="12" y="{height / 2:.0f}" transform="rotate(-90 12 {height / 2:.0f})" '
        f'text-anchor="middle">{esc(y_label)}</text>',
        f'<text x="{pad}" y="{height - pad + 16}">{x0:.4g}</text>',
        f'<text x="{width - pad}" y="{height - pad + 16}" text-anchor="end">{x1:.4g}</text>',
        f'<text x="{pad - 4}" y="{height - pad}" text-anchor="end">{y0:.4g}</text>',
        f'<text x="{pad - 4}" y="{pad + 4}" text-anchor="end">{y1:.4g}</text>',
    ]
    for x, y, name in points:
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#264"/>'
            f'<text x="{px(x) + 6:.1f}" y="{py(y) - 4:.1f}" font-size="11">{esc(name)}</text>'
        )
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(label)}">'
        f"{''.join(parts)}</svg>"
    )
