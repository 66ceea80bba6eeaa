"""report.html's section of the paper's analyses (drarena.ledger.analysis): verdict and
failure shares, rounds per pair against the rating gap, depth and width of the verdicts,
tokens and cost of the answers, the judge's position consistency; each with the paper's
figure beside it."""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.ledger.analysis import (
    FAILURE_KINDS,
    VERDICT_KINDS,
    Analyses,
    agent_models,
    analyse,
    litellm_prices,
)
from drarena.report.charts import bars_svg, opt, scatter_svg
from drarena.report.section import ReportRun


def analyses_section(a: Analyses) -> str:
    verdicts = {k.replace("_", " "): a.verdict_counts[k] for k in VERDICT_KINDS}
    failures = {k: a.failure_counts[k] for k in FAILURE_KINDS}
    corr = (
        f"Pearson r = {a.rounds_gap_pearson_r:.3f} (p = {opt(a.rounds_gap_p_value)}) over "
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
        f"</td><td class=num>{opt(c.model_seconds, '.1f', 'not recorded')}</td>"
        f"<td class=num>{opt(c.wall_seconds, '.1f', 'not recorded')}</td></tr>"
        for c in a.agent_costs
    )
    match_rows = "".join(
        f"<tr><td>{esc(c.match_id)}</td><td class=num>{c.prompt_tokens}</td>"
        f"<td class=num>{c.completion_tokens}</td>"
        f"<td class=num>{'$' + format(c.cost_usd, '.4f') if c.cost_usd is not None else '-'}"
        f"</td><td class=num>{opt(c.model_seconds, '.1f', 'not recorded')}</td></tr>"
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


class PaperSection:
    name = "analyses"

    def compute(self, run: ReportRun) -> Analyses:
        """The analyses against the leaderboard's raw ratings; costs from the models the
        agents' roles were bound to, seconds from timings.jsonl (none without a folder)."""
        models = agent_models(run.header)
        return analyse(
            run.matches,
            {r.agent: r.rating for r in run.rows},
            models=models,
            prices=litellm_prices(models),
            timings=run.folder.read_timings() if run.folder is not None else (),
        )

    def render(self, figures: Analyses) -> str:
        return analyses_section(figures)
