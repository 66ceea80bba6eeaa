"""report.html sections for the paper's analyses, the style-controlled ratings and the
agreement with an outside leaderboard (drarena.ledger.analysis, .style, .compare).

Same rules as drarena.report.html: every name passes through `esc`, charts are inline SVG
built from numbers only, nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.analysis import FAILURE_KINDS, VERDICT_KINDS, Analyses
from drarena.ledger.compare import Comparison
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.style import FEATURES, StyleRatings


def _opt(value: float | None, fmt: str = ".3f", none: str = "n/a") -> str:
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


def analyses_section(a: Analyses) -> str:
    verdicts = {k.replace("_", " "): a.verdict_counts[k] for k in VERDICT_KINDS}
    failures = {k: a.failure_counts[k] for k in FAILURE_KINDS}
    corr = (
        f"Pearson r = {a.rounds_gap_pearson_r:.3f} (p = {_opt(a.rounds_gap_p_value)}) over "
        f"{len(a.pairs)} pairs"
        if a.rounds_gap_pearson_r is not None
        else f"Pearson r undefined here ({len(a.pairs)} pairs; it needs 3 or more pairs whose "
        "gaps and round counts both vary)"
    )
    pair_rows = "".join(
        f"<tr><td>{esc(p.a)}</td><td>{esc(p.b)}</td><td class=num>{p.matches}</td>"
        f"<td class=num>{p.mean_rounds:.2f}</td><td class=num>{p.rating_gap:.1f}</td></tr>"
        for p in a.pairs
    )
    points = [(p.rating_gap, p.mean_rounds, f"{p.a} v {p.b}") for p in a.pairs]
    # drarena's depth counts the root as 0; the paper's D (Figure 8, the word limit) counts it
    depth = {f"depth {k} (D={int(k) + 1})": v for k, v in a.depth_histogram.items()}
    width = {f"width {k}": v for k, v in a.width_histogram.items()}
    agent_rows = "".join(
        f"<tr><td>{esc(c.agent)}</td><td>{esc(c.model or '-')}</td>"
        f"<td class=num>{c.answers}</td><td class=num>{c.prompt_tokens}</td>"
        f"<td class=num>{c.completion_tokens}</td>"
        f"<td class=num>{'$' + format(c.cost_usd, '.4f') if c.cost_usd is not None else '-'}"
        f"</td><td class=num>{_opt(c.model_seconds, '.1f', 'not recorded')}</td>"
        f"<td class=num>{_opt(c.wall_seconds, '.1f', 'not recorded')}</td></tr>"
        for c in a.agent_costs
    )
    match_rows = "".join(
        f"<tr><td>{esc(c.match_id)}</td><td class=num>{c.prompt_tokens}</td>"
        f"<td class=num>{c.completion_tokens}</td>"
        f"<td class=num>{'$' + format(c.cost_usd, '.4f') if c.cost_usd is not None else '-'}"
        f"</td><td class=num>{_opt(c.model_seconds, '.1f', 'not recorded')}</td></tr>"
        for c in a.match_costs
    )
    position = (
        f"{a.position_agree_exact:.0%} of the {a.both_orders_rounds} rounds judged in both "
        f"orders got the same verdict from both; {a.position_agree_direction:.0%} the same "
        "direction (A, tie or B)."
        if a.position_agree_exact is not None and a.position_agree_direction is not None
        else "No round was judged in both orders."
    )
    return (
        "<h2>The paper's analyses</h2>"
        f"<h3>Verdicts ({a.judged_rounds} judged rounds)</h3>"
        f"{bars_svg(verdicts, 'verdict shares')}"
        "<p class=muted>paper (Figure 7): better 49.9%, much better 32.8%</p>"
        "<h3>Why rounds ended (loser's failure type; ties counted)</h3>"
        f"{bars_svg(failures, 'failure types')}"
        "<p class=muted>paper (Figure 7): depth 32.3%, width 30.0%</p>"
        "<h3>Rounds per match against the rating gap</h3>"
        f"<p>{corr}. <span class=muted>paper (Figure 5): r = -0.61, p = 0.045</span></p>"
        f"{scatter_svg(points, 'rating gap', 'mean rounds', 'rounds against rating gap')}"
        "<table><tr><th>agent</th><th>agent</th><th>matches</th><th>mean rounds</th>"
        f"<th>rating gap</th></tr>{pair_rows}</table>"
        "<h3>Depth and width when the verdict came (last judged round)</h3>"
        f"<div class=pair><div>{bars_svg(depth, 'depth histogram')}</div>"
        f"<div>{bars_svg(width, 'width histogram')}</div></div>"
        "<h3>Tokens and cost of the answers</h3>"
        "<p class=muted>Cost from litellm's bundled price map for listed API models; a "
        "served or self-hosted model is shown by its model and wall seconds (timings.jsonl, "
        "on whatever CPU or GPU served it). Examiner calls are in run.json's usage.</p>"
        "<table><tr><th>agent</th><th>model</th><th>answers</th><th>prompt tokens</th>"
        "<th>completion tokens</th><th>cost</th><th>model s</th><th>wall s</th></tr>"
        f"{agent_rows}</table>"
        "<details><summary>per match</summary><table><tr><th>match</th><th>prompt tokens"
        "</th><th>completion tokens</th><th>cost</th><th>model s</th></tr>"
        f"{match_rows}</table></details>"
        f"<h3>Judge position consistency</h3><p>{position}</p>"
    )


def style_section(rows: Sequence[LeaderboardRow], style: StyleRatings) -> str:
    raw = {r.agent: r for r in rows}
    body = "".join(
        f"<tr><td class=num>{s.rank}</td><td>{esc(s.agent)}</td>"
        f"<td class=num>{raw[s.agent].rating:.0f}</td>"
        f"<td>{raw[s.agent].lower:.0f} to {raw[s.agent].upper:.0f}</td>"
        f"<td class=num>{s.rating:.0f}</td><td>{s.lower:.0f} to {s.upper:.0f}</td>"
        f"<td class=num>{s.rating - raw[s.agent].rating:+.0f}</td></tr>"
        for s in style.ratings
        if s.agent in raw
    )
    coefs = "".join(
        f"<tr><td>{esc(c.feature)}</td><td class=num>{_opt(c.beta)}</td><td>"
        + (
            f"{c.lower:.3f} to {c.upper:.3f}"
            if c.lower is not None and c.upper is not None
            else "did not vary in this run: left out of the fit"
        )
        + "</td></tr>"
        for c in style.coefficients
    )
    feats = "".join(
        f"<tr><td>{esc(agent)}</td>"
        + "".join(f"<td class=num>{values[f]:g}</td>" for f in FEATURES)
        + "</tr>"
        for agent, values in sorted(style.agent_features.items())
    )
    missing = (
        f"<p class=void>{style.matches_without_style} of {style.matches} decided matches had "
        "no judged round where both agents answered: they enter the fit with no style "
        "difference.</p>"
        if style.matches_without_style
        else ""
    )
    return (
        "<h2>Style-controlled ratings (Bradley-Terry with style covariates)</h2>"
        "<p class=muted>Fitted on the same decided matches as the raw ratings, with the "
        "normalised differences of answer length, citations, headers, list items and tables "
        "as covariates; a rating that falls under style control was partly won by style. "
        "Same bootstrap (resamples, seed) as the raw intervals.</p>"
        f"{missing}<table><tr><th>style rank</th><th>agent</th><th>raw</th>"
        "<th>raw 95%</th><th>style-controlled</th><th>95%</th><th>change</th></tr>"
        f"{body}</table><h3>Style coefficients (log-odds per standard deviation)</h3>"
        f"<table><tr><th>feature</th><th>beta</th><th>95% interval</th></tr>{coefs}</table>"
        "<h3>Mean style per answer</h3><table><tr><th>agent</th>"
        + "".join(f"<th>{f}</th>" for f in FEATURES)
        + f"</tr>{feats}</table>"
    )


def comparison_section(c: Comparison) -> str:
    body = "".join(
        f"<tr><td>{esc(r.method)}</td><td class=num>{_opt(r.value)}</td><td>"
        + (
            f"{r.lower:.3f} to {r.upper:.3f} ({r.resamples_used} resamples)"
            if r.lower is not None and r.upper is not None
            else "n/a"
        )
        + "</td></tr>"
        for r in c.correlations
    )
    points = [(t, o, a) for a, o, t in zip(c.agents, c.ours, c.theirs, strict=True)]
    extra = "".join(
        f"<p class=muted>{label}: {esc(', '.join(names))}</p>"
        for label, names in (
            ("only in the run", c.only_in_run),
            ("only in the file", c.only_in_file),
        )
        if names
    )
    return (
        f"<h2>Agreement with {esc(c.against)}</h2>"
        f"<p class=muted>{len(c.agents)} shared agents; bootstrap over agents, seed {c.seed}. "
        "paper (Table 4, against LMSYS Search Arena): Spearman 0.94, Pearson 0.74</p>"
        f"<table><tr><th>coefficient</th><th>value</th><th>95% interval</th></tr>{body}"
        f"</table>{scatter_svg(points, 'outside score', 'drarena rating', 'comparison scatter')}"
        f"{extra}"
    )
