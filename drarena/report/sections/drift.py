"""report.html's drift section, which `drarena drift SNAPSHOT --run RUN` adds (drift.json in
the run folder): kept on every re-render, last on the page (drarena.drift.report)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drarena.report.section import ReportRun

if TYPE_CHECKING:
    from drarena.drift.report import DriftReport


class DriftSection:
    name = "drift"

    def compute(self, run: ReportRun) -> DriftReport | None:
        """The run's drift.json (a damaged one is one line naming it), None without one."""
        if run.folder is None or not (run.folder.path / "drift.json").is_file():
            return None
        from drarena.drift.report import read_json

        return read_json(run.folder.path / "drift.json")

    def render(self, figures: DriftReport) -> str:
        from drarena.drift.report import drift_section

        return drift_section(figures)
