"""The Python API (docs/api.md): ``ddp_doctor.load(path)`` → a :class:`Report` for scripts and notebooks.

``path`` is a run directory or any log ``ddp-doctor report`` imports (docs/import.md). In Jupyter a
``Report`` shows itself as the HTML report (the same renderer as ``report --format html``, inside an
``<iframe srcdoc>`` so its CSS and script stay out of the notebook's page).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ddp_doctor.analysis.diagnose import Diagnosis, diagnose, diagnose_run
from ddp_doctor.core.catalog import Lang
from ddp_doctor.core.findings import SEVERITY_ORDER, Finding, HypothesisVerdict
from ddp_doctor.rundir.sources import read
from ddp_doctor.rundir.sources.series import ImportOptions

NOTEBOOK_HEIGHT_PX = 720


def diagnose_path(path: Path | str, options: ImportOptions | None = None) -> Diagnosis:
    """Diagnose a run directory, or a log read by its source as a reduced run (rundir/sources/).

    Raises :class:`ddp_doctor.rundir.reader.RunDirError` (``LogImportError`` is one) for anything else.
    """
    if not os.path.exists(path):  # never raises (EACCES: False)
        return diagnose(path)  # the reader's own messages for a missing path
    return diagnose_run(read(path, options))  # LogImportError for what no source reads


def failing(diag: Diagnosis, level: str) -> list[Finding]:
    """Confirmed findings of severity ``level`` ("error" | "warning") or worse (``report --fail-on``)."""
    limit = SEVERITY_ORDER[level]
    return [f for f in diag.findings if f.status == "confirmed" and SEVERITY_ORDER[f.severity] <= limit]


@dataclass
class Report:
    """A diagnosis with its renderers: ``.findings``, ``.hypotheses``, ``.run``, ``.to_dict()``, ``.html()``."""

    diagnosis: Diagnosis

    @property
    def findings(self) -> list[Finding]:
        return self.diagnosis.findings

    @property
    def hypotheses(self) -> list[HypothesisVerdict]:
        return self.diagnosis.hypotheses

    @property
    def run(self) -> dict[str, Any]:
        return self.diagnosis.run_info

    def confirmed(self, level: str = "info") -> list[Finding]:
        """Confirmed findings of severity ``level`` or worse."""
        return failing(self.diagnosis, level)

    def finding(self, fid: str) -> Finding:
        return next(f for f in self.findings if f.id == fid)

    def to_dict(self, lang: Lang = "en") -> dict[str, Any]:
        """The ``ddp-doctor.report/1`` JSON object (docs/schemas/report-1.json)."""
        from ddp_doctor.report.to_json import report_dict

        return report_dict(self.diagnosis, lang)

    def text(self, lang: Lang = "en") -> str:
        from ddp_doctor.report.text import render_text

        return render_text(self.diagnosis, lang)

    def html(self, lang: Lang = "en") -> str:
        from ddp_doctor.report.html import render_html

        return render_html(self.diagnosis, lang)

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{escape(self.html(), quote=True)}" '
            f'style="width:100%;height:{NOTEBOOK_HEIGHT_PX}px;border:0" '
            'sandbox="allow-scripts"></iframe>'
        )

    def __repr__(self) -> str:
        confirmed = [f.id for f in self.confirmed()]
        return (
            f"<ddp_doctor.Report {self.run.get('path')!s}: {len(confirmed)} confirmed"
            f"{' (' + ', '.join(confirmed) + ')' if confirmed else ''}>"
        )


def load(
    path: Path | str,
    *,
    keys: dict[str, str] | None = None,
    world_size: int | None = None,
    micro_batch: int | None = None,
    accum: int | None = None,
    tokens_per_sample: int | None = None,
    max_norm: float | None = None,
) -> Report:
    """Diagnose ``path`` (run dir or log); the keyword options are those of ``ddp-doctor report``."""
    options = ImportOptions(
        keys=dict(keys or {}),
        world_size=world_size,
        micro_batch=micro_batch,
        accum=accum,
        tokens_per_sample=tokens_per_sample,
        max_norm=max_norm,
    )
    return Report(diagnose_path(path, options))
