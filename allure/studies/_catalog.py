"""Read finished studies back: list them, load one by id."""

from __future__ import annotations

import json
from pathlib import Path

from allure.audits._model import StudyRecord, migrate_study
from allure.audits._run import STUDIES
from allure.errors import StudyError
from allure.store import pid_runs


def list_studies(project: str | Path = ".") -> list[StudyRecord]:
    """Every study with a ``study.json`` under ``PROJECT/.allure/studies/``, oldest first."""
    root = Path(project) / STUDIES
    out = (
        [load_study(project, d.name) for d in sorted(root.iterdir()) if (d / "study.json").is_file()]
        if root.is_dir()
        else []
    )
    return sorted(out, key=lambda s: s.created_at)


def study_states(project: str | Path = ".") -> dict[str, tuple[str, str]]:
    """Study id -> ``(status, kind)`` from the run store: ``done``, ``running`` (its process is alive),
    or ``interrupted`` (stopped by Ctrl-C or an error, or its process is gone). Empty without a store."""
    from allure.errors import StoreError
    from allure.store import RunStore, project_db_path

    db = project_db_path(Path(project))
    if not db.exists():
        return {}
    try:
        store = RunStore(db, create=False)
    except StoreError:
        return {}
    try:
        out: dict[str, tuple[str, str]] = {}
        for run in store.list_runs():
            if run.info.get("kind") != "study":
                continue
            status = run.status
            if status == "running" and not pid_runs(run.info.get("pid")):
                status = "interrupted"
            out[run.id] = (status, str(run.info.get("study_kind", "?")))
        return out
    finally:
        store.close()


def load_study(project: str | Path, study_id: str) -> StudyRecord:
    """The study ``study_id`` of ``project``.

    Raises:
        StudyError: No such study, or its ``study.json`` is unreadable.
    """
    root = Path(project) / STUDIES
    path = root / study_id / "study.json"
    if not path.is_file():
        known = (
            sorted(d.name for d in root.iterdir() if (d / "study.json").is_file()) if root.is_dir() else []
        )
        raise StudyError(
            f"unknown study {study_id!r}",
            where=str(root),
            fix=f"use one of: {', '.join(known[-5:]) or '(no studies yet)'}; `allure study list` lists them",
        )
    try:
        return StudyRecord.model_validate(migrate_study(json.loads(path.read_text(encoding="utf-8"))))
    except (ValueError, OSError) as exc:
        raise StudyError(f"cannot read the study ({exc})", where=str(path), fix="re-run the study") from exc
