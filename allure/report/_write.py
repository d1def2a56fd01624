"""Write and read a run's report files atomically: ``report.json``, ``report.md``, ``metrics.png``."""

from __future__ import annotations

import json
from pathlib import Path

from allure._fault import fault_point
from allure._io import atomic_write_bytes
from allure._text_errors import read_utf8
from allure.records import check_file, parse_json_object, validate_record
from allure.report._markdown import render_markdown
from allure.report._model import ReportData, ReportError, migrate_report
from allure.report._plot import render_plot

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
METRICS_PNG = "metrics.png"


def write_report(run_dir: Path, data: ReportData) -> dict[str, Path]:
    """Render and write the report files into ``run_dir`` (created if missing).

    All three files are rendered in memory first, so a rendering error writes nothing; each
    file is then replaced atomically (``report.json`` last).

    Args:
        run_dir: The run's folder.
        data: The report.

    Returns:
        ``{"json": ..., "md": ..., "png": ...}``: the paths written.

    Raises:
        ReportError: ``run_dir`` exists but is not a folder, or cannot be written.
    """
    run_dir = Path(run_dir)
    blob = (json.dumps(data.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    markdown = render_markdown(data, plot_name=METRICS_PNG).encode("utf-8")
    png = render_plot(data)
    paths = {"png": run_dir / METRICS_PNG, "md": run_dir / REPORT_MD, "json": run_dir / REPORT_JSON}
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for key, payload in (("png", png), ("md", markdown), ("json", blob)):
            atomic_write_bytes(paths[key], payload)
            fault_point("report")
    except (FileExistsError, NotADirectoryError, PermissionError) as exc:
        raise ReportError(
            f"cannot write the report: {exc.strerror or exc}",
            where=str(run_dir),
            fix="pass a run folder that is a writable directory",
        ) from exc
    return {"json": paths["json"], "md": paths["md"], "png": paths["png"]}


def read_report(path: Path) -> ReportData:
    """Read a ``report.json`` (or the run folder holding one), upgrading older versions.

    Raises:
        ReportError: The file is missing, not JSON, of an unknown version, or invalid (the error
            names the field).
    """
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_JSON
    check_file(path, error=ReportError, what="report", fix="pass a run folder that has report.json")
    raw = parse_json_object(
        read_utf8(path, error=ReportError, what="report"),
        path=path,
        line=None,
        error=ReportError,
        fix="re-create the report; allure writes it atomically, so this file was edited or copied partially",
    )
    try:
        upgraded = migrate_report(raw)
    except ReportError as exc:
        raise ReportError(exc.message, where=f"{path}: {exc.where or ''}".rstrip(": "), fix=exc.fix) from exc
    return validate_record(
        ReportData,
        upgraded,
        where=str(path),
        error=ReportError,
        fix="re-create the report with allure, or correct that field",
    )
