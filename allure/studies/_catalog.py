"""The catalogue of study kinds, and reading finished studies back (list them, load one by id).

Built-in kinds are named here by where they live and imported on first use, so listing studies
never imports the robustness studies' dependencies; any other kind is added with
:func:`register_study` (a decorator on its class).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import TypeVar

from allure.errors import StudyError
from allure.store import pid_runs
from allure.studies._params import check_param_keys
from allure.studies._protocol import Study, StudyContext
from allure.studies._record import StudyRecord, migrate_study
from allure.studies._run import STUDIES

BUILTIN: dict[str, str] = {
    "ablation": "allure.studies._ablation:AblationStudy",
    "sweep": "allure.studies._sweep:SweepStudy",
    "arms": "allure.studies._arms:ArmsStudy",
    "learning-curve": "allure.studies._learning_curve:LearningCurveStudy",
    "sensitivity": "allure.robustness:SensitivityStudy",
    "entropy": "allure.robustness:EntropyStudy",
    "consistency": "allure.robustness:ConsistencyStudy",
    "request": "allure.robustness:RequestStudy",
}
"""Built-in kind -> ``module:class`` of its :class:`~allure.studies.Study`."""

_REGISTERED: dict[str, type[Study]] = {}

S = TypeVar("S", bound=type[Study])


def register_study(cls: S) -> S:
    """Add a study kind to the catalogue (use as a class decorator); its ``kind`` is its key.

    Raises:
        StudyError: The kind is a built-in one, or already registered by another class.
    """
    kind = cls.kind
    known = _REGISTERED.get(kind)
    if kind in BUILTIN or (known is not None and known.__qualname__ != cls.__qualname__):
        raise StudyError(
            f"study kind {kind!r} is already taken", where=cls.__qualname__, fix="give the study another kind"
        )
    _REGISTERED[kind] = cls
    return cls


def load_study_file(path: str | Path) -> list[str]:
    """Run the Python file ``path`` so that the study kinds it registers join the catalogue (as
    inspect_ai loads tasks from a file); returns the kinds it added.

    Raises:
        StudyError: No such file, or it fails to import.
    """
    import importlib.util
    import sys

    file = Path(path).resolve()
    before = set(_REGISTERED)
    name = f"allure_study_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file) if file.is_file() else None
    if spec is None or spec.loader is None:
        raise StudyError(
            "no such Python file", where=str(path), fix="pass the .py file that defines the study kind"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: any error it raises is reported, never a traceback
        sys.modules.pop(name, None)
        raise StudyError(
            f"the file failed to load ({type(exc).__name__}: {exc})", where=str(path), fix="fix the file"
        ) from exc
    return sorted(set(_REGISTERED) - before)


def study_kinds() -> list[str]:
    """Every kind in the catalogue: the built-in ones, then the registered ones."""
    return [*BUILTIN, *(k for k in _REGISTERED if k not in BUILTIN)]


def study_kind(kind: str) -> type[Study]:
    """The study class of ``kind``.

    Raises:
        StudyError: No such kind.
    """
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    if kind in BUILTIN:
        module, _, name = BUILTIN[kind].partition(":")
        cls: type[Study] = getattr(importlib.import_module(module), name)
        return cls
    raise StudyError(
        f"unknown study kind {kind!r}",
        where="study kind",
        fix=f"use one of: {', '.join(study_kinds())}, or register yours (allure.studies.register_study)",
    )


def build_study(cls: type[Study], context: StudyContext) -> Study:
    """The study of kind ``cls`` from ``context`` (``allure study run``): its ``--param`` keys checked
    first when the kind declares them (``params``), an unknown one refused with the closest valid one.

    Raises:
        StudyError: An unknown key, or the kind's own refusal of a value.
    """
    known = getattr(cls, "params", None)
    if known is not None:
        check_param_keys(cls.kind, context.params, known)
    return cls.build(context)


def record_type(kind: str) -> type[StudyRecord]:
    """The typed result of ``kind`` (the shared :class:`StudyRecord` for a kind not in the catalogue,
    e.g. one registered by a process that is gone)."""
    try:
        return study_kind(kind).result
    except StudyError:
        return StudyRecord


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
    from allure.store import open_project_store, project_db_path, store_url

    db = project_db_path(Path(project))
    if not db.exists() and not store_url(Path(project)):
        return {}
    try:
        store = open_project_store(Path(project), create=False)
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


def read_study(path: Path) -> StudyRecord:
    """The record in ``path`` (a ``study.json``, any version), as its kind's own type.

    Raises:
        StudyError: The file is unreadable or not a study record.
    """
    try:
        data = migrate_study(json.loads(path.read_text(encoding="utf-8")))
        return record_type(str(data.get("kind"))).model_validate(data)
    except (ValueError, OSError, AttributeError) as exc:
        raise StudyError(f"cannot read the study ({exc})", where=str(path), fix="re-run the study") from exc


def load_study(project: str | Path, study_id: str) -> StudyRecord:
    """The study ``study_id`` of ``project``, as its kind's own record type.

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
    return read_study(path)
