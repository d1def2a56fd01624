"""A run's report: ``report.json`` (versioned), ``report.md`` and ``metrics.png``.

:func:`write_run_report` builds a finished run's :class:`ReportData` from the run store
(:func:`build_run_report`) and writes it with :func:`write_report`; :func:`read_report` reads it back through :func:`migrate_report`.
"""

from allure.report._from_store import CANDIDATES_JSONL, build_run_report, write_run_report
from allure.report._markdown import render_markdown
from allure.report._model import (
    SCHEMA_VERSION,
    CandidateCounts,
    DatasetInfo,
    EvaluatorInfo,
    IterationReport,
    PositionConsistency,
    PositionDebiasReport,
    ReferenceSource,
    ReplayAgreement,
    ReportData,
    ReportError,
    migrate_report,
)
from allure.report._plot import render_plot
from allure.report._summary import (
    SUMMARY_HEADER,
    headline,
    helped_sentence,
    memory_tried,
    nothing_held_out,
    summary_table,
)
from allure.report._write import METRICS_PNG, REPORT_JSON, REPORT_MD, read_report, write_report

__all__ = [
    "CANDIDATES_JSONL",
    "METRICS_PNG",
    "REPORT_JSON",
    "REPORT_MD",
    "SCHEMA_VERSION",
    "SUMMARY_HEADER",
    "CandidateCounts",
    "DatasetInfo",
    "EvaluatorInfo",
    "IterationReport",
    "PositionConsistency",
    "PositionDebiasReport",
    "ReferenceSource",
    "ReplayAgreement",
    "ReportData",
    "ReportError",
    "build_run_report",
    "headline",
    "helped_sentence",
    "memory_tried",
    "migrate_report",
    "nothing_held_out",
    "read_report",
    "render_markdown",
    "render_plot",
    "summary_table",
    "write_report",
    "write_run_report",
]
