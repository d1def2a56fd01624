"""The Python API: a project's runs, verdicts, metrics, candidates and memory as pandas DataFrames.

>>> import allure
>>> project = allure.open_project(".")
>>> run = project.runs()[-1]
>>> run.verdicts().to_pandas()        # one row per item and iteration
>>> run.metrics().to_pandas()         # one SplitMetrics per iteration and split
>>> outcome = allure.audit({"label_set": ["yes", "no"], ...}, data=frame, project=".")

Every table is a :class:`Table` of pydantic records (``list`` behaviour) with ``to_pandas()``.
Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from allure._frames import as_frame, frame_dataset
from allure.config import AuditSpec, load_spec, parse_spec
from allure.errors import ApiArgumentError, SpecError, StoreError
from allure.models import IclExample, Item, Verdict
from allure.store import RunRecord, RunStore, open_project_store, project_db_path, store_url

if TYPE_CHECKING:
    import pandas as pd

    from allure.graphs import RunOutcome
    from allure.metrics import SplitMetrics

R = TypeVar("R", bound=BaseModel)


class Table(list[R], Generic[R]):
    """A list of records that turns into a DataFrame (one column per field; nested values kept as objects)."""

    def __init__(self, records: Iterable[R] = (), extra: Iterable[Mapping[str, Any]] | None = None) -> None:
        super().__init__(records)
        self._extra = list(extra) if extra is not None else None

    def to_pandas(self) -> pd.DataFrame:
        """The records as a ``pandas.DataFrame`` (extra per-row columns first, e.g. ``iteration``)."""
        import pandas as pd

        rows = [r.model_dump(mode="json") for r in self]
        if self._extra is not None:
            rows = [{**e, **r} for e, r in zip(self._extra, rows, strict=True)]
        return pd.DataFrame(rows)


class Run:
    """One audit run of a project: its items, verdicts, metrics, candidates and report."""

    def __init__(self, project: Project, record: RunRecord) -> None:
        self.project = project
        self.record = record

    @property
    def id(self) -> str:
        """The run id."""
        return self.record.id

    @property
    def status(self) -> str:
        """``running``, ``paused``, ``done`` or ``failed`` (as last read)."""
        return self.record.status

    @property
    def spec(self) -> AuditSpec:
        """The audit spec the run was started with."""
        return parse_spec(self.record.spec, source=f"run {self.id} spec")

    def __repr__(self) -> str:
        return f"Run({self.id!r}, status={self.status!r}, iterations={self.record.iteration})"

    def items(self) -> Table[Item]:
        """The run's items in dataset order, with their split and reference label as extra columns."""
        with self.project.store() as store:
            items = store.items(self.id)
            splits, refs = store.splits(self.id), store.reference_labels(self.id)
        extra = [{"split": splits.get(it.id), "reference_label": refs.get(it.id)} for it in items]
        return Table(items, extra)

    def iterations(self) -> list[int]:
        """The passes that have metrics, in order."""
        with self.project.store() as store:
            return sorted(store.metrics(self.id))

    def verdicts(self, iteration: int | None = None) -> Table[Verdict]:
        """The evaluator's verdicts, every iteration (or one), with ``iteration``, ``split`` and
        ``reference_label`` as extra columns. A pairwise run's swapped-order verdicts have ids ending
        in ``#swapped``; the polarity variant's (``[evaluator] polarity_prompt``) in ``#reversed``."""
        with self.project.store() as store:
            its = (
                [iteration]
                if iteration is not None
                else sorted(store.metrics(self.id)) or [self.record.iteration]
            )
            splits, refs = store.splits(self.id), store.reference_labels(self.id)
            records: list[Verdict] = []
            extra: list[dict[str, Any]] = []
            for it in its:
                for item_id, v in sorted(store.verdicts(self.id, it).items()):
                    base = item_id.removesuffix("#swapped").removesuffix("#reversed")
                    records.append(v)
                    extra.append(
                        {"iteration": it, "split": splits.get(base), "reference_label": refs.get(base)}
                    )
        return Table(records, extra)

    def metrics(self) -> Table[SplitMetrics]:
        """The stored :class:`~allure.metrics.SplitMetrics` of every iteration and split, with
        ``iteration``, ``split`` and the accuracy's bootstrap interval (``accuracy_low``,
        ``accuracy_high``) as extra columns of the frame."""
        records: list[SplitMetrics] = []
        extra: list[dict[str, Any]] = []
        for it, splits in self.metrics_detail().items():
            for split, m in splits.items():
                records.append(m)
                acc = m.ci.accuracy
                extra.append(
                    {
                        "iteration": it,
                        "split": split,
                        "accuracy_low": acc.low if acc else None,
                        "accuracy_high": acc.high if acc else None,
                    }
                )
        return Table(records, extra)

    def metrics_detail(self) -> dict[int, dict[str, SplitMetrics]]:
        """Iteration -> split -> :class:`~allure.metrics.SplitMetrics` (confusion matrix, per-class figures)."""
        with self.project.store() as store:
            return store.metrics(self.id)

    def candidates(self) -> Table[IclExample]:
        """The candidate ICL examples proposed from the evaluator's mistakes, with their decisions."""
        with self.project.store() as store:
            return Table(store.candidates(self.id))

    def report(self) -> dict[str, Any]:
        """``report.json`` of a finished run, as a dict."""
        from allure._text_errors import read_json_file

        path = Path(self.record.run_dir) / "report.json"
        if not path.is_file():
            raise SpecError(
                "the run has no report yet", where=str(path), fix="finish the run (allure resume RUN) first"
            )
        data = read_json_file(path, error=StoreError, what="run's report.json")
        if not isinstance(data, dict):
            raise StoreError(
                "the run's report.json is not a JSON object",
                where=str(path),
                fix="finish or resume the run (allure resume RUN), which writes it again",
            )
        return data


class Project:
    """A project folder holding ``.allure/`` (run store, checkpoints, memory, runs)."""

    def __init__(self, path: str | Path = ".") -> None:
        self.path = Path(path).resolve()

    def __repr__(self) -> str:
        return f"Project({str(self.path)!r})"

    def store(self) -> _StoreHandle:
        """The run store, opened for one ``with`` block."""
        return _StoreHandle(self.path)

    def runs(self) -> list[Run]:
        """Every run, oldest first (studies, which the store keeps beside the runs, are left out)."""
        if not store_url(self.path) and not project_db_path(self.path).exists():
            return []
        with self.store() as store:
            return [Run(self, r) for r in store.list_runs() if not _is_study(r)]

    def runs_table(self) -> Table[RunRecord]:
        """Every run as a table (``to_pandas()``)."""
        return Table([r.record for r in self.runs()])

    def run(self, run_id: str | None = None) -> Run:
        """The run ``run_id`` (default: the newest).

        Raises:
            StoreError: no such run, or ``run_id`` names a study (read those with ``allure study show``).
        """
        with self.store() as store:
            if run_id is None:
                latest = next((r for r in reversed(store.list_runs()) if not _is_study(r)), None)
                if latest is None:
                    store.get_run("(none)")  # raises, naming the fix
                    raise AssertionError  # unreachable
                return Run(self, latest)
            record = store.get_run(run_id)
            if _is_study(record):
                raise StoreError(
                    f"{run_id!r} is a study, not a run",
                    where=f"{store.where}, argument 'run_id'",
                    fix=f"read it with `allure study show {run_id}`; open_project(...).runs() lists the runs",
                )
            return Run(self, record)

    def memory(self, location: str = ".allure/memory", collection: str = "icl_examples") -> Table[IclExample]:
        """The approved ICL examples in the episodic memory at ``location`` (a folder, relative to the
        project, or a Chroma server's http(s) address).

        Raises:
            MemoryStoreError: A location the spec would refuse too (e.g. ``ftp://...``: the same
                message), or no memory there.
        """
        from allure.memory import EpisodicMemory

        loc = location if "://" in location or Path(location).is_absolute() else str(self.path / location)
        return Table(EpisodicMemory.open(loc, collection=collection).all())


class _StoreHandle:
    def __init__(self, project: Path) -> None:
        self.project = project
        self.store: RunStore | None = None

    def __enter__(self) -> RunStore:
        self.store = open_project_store(self.project, create=False)
        return self.store

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            self.store.close()


def _is_study(record: RunRecord) -> bool:
    """A study's row in the runs table (``allure study``), not an audit run."""
    return record.info.get("kind") == "study"


def open_project(path: str | Path = ".") -> Project:
    """The project in folder ``path``.

    Raises:
        ApiArgumentError: ``path`` is not a path, or names a file.
    """
    folder = _path_arg(path, "allure.open_project()", "path")
    if folder.exists() and not folder.is_dir():
        raise StoreError(
            "the project folder is a file",
            where=f"{folder}, allure.open_project(), argument 'path'",
            fix="pass the folder holding .allure/",
        )
    return Project(folder)


def _path_arg(value: object, call: str, name: str) -> Path:
    """``value`` as a path, for an argument that must be one (a ``str`` or a ``Path``)."""
    if not isinstance(value, str | Path):
        raise ApiArgumentError(
            f"{call} takes {name} as a folder path (str or Path), not {type(value).__name__}",
            where=f"{call}, argument '{name}'",
            fix=f'pass e.g. {name}="." or {name}=Path("my-audit")',
        )
    return Path(value)


def audit(
    spec: AuditSpec | Mapping[str, Any] | str | Path,
    *,
    data: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
    project: str | Path = ".",
) -> RunOutcome:
    """Start an audit: from a spec file, a spec dict, or an :class:`AuditSpec`; with ``data`` (a
    DataFrame, or a list of dicts, one per row) in place of ``[dataset] path``.

    The data is written once as Parquet under ``.allure/data/`` (named by its content hash) and
    the run reads it from there, so the run can be resumed and reproduced like any other. The spec
    and the data are checked first (every row read as the run will read it): an error writes nothing.

    Returns:
        The :class:`~allure.graphs.RunOutcome` (``paused`` for review, or ``done`` with the report).

    Raises:
        ApiArgumentError: ``spec``, ``data`` or ``project`` is of a type allure does not take (also a
            :class:`TypeError`).
        SpecError: the spec is invalid, or it names ``[dataset] path`` and ``data`` is given too.
        DatasetError: ``data`` is empty, or a row lacks a mapped column or holds a bad value.
        StoreError: ``project`` is a file, or a folder that cannot be made.
    """
    from allure._io import check_project
    from allure.graphs import start_run

    if not isinstance(spec, AuditSpec | Mapping | str | Path):
        raise ApiArgumentError(
            f"allure.audit() takes the spec as a TOML file path, a dict or an AuditSpec, not {type(spec).__name__}",
            where="allure.audit(), argument 'spec'",
            fix='pass e.g. allure.audit("audit.toml") or allure.audit({"dataset": {...}}, data=frame)',
        )
    proj = check_project(
        _path_arg(project, "allure.audit()", "project"), "allure.audit(), argument 'project'"
    )
    proj = proj.resolve()
    frame = as_frame(data)
    raw, base, given_path = _raw_spec(spec)
    if frame is not None:
        if given_path:
            raise SpecError(
                "both [dataset] path and data= are given; allure would read only one of them",
                where="allure.audit(), argument 'data'",
                fix="pass a spec without dataset.path (a dict) together with data=, or leave data out",
            )
        dataset = dict(raw.get("dataset") or {})
        # the spec is checked before the data is written: a spec error writes nothing
        checked = parse_spec(
            {**raw, "dataset": {**dataset, "path": "data.parquet"}},
            source="allure.audit() spec",
            base_dir=proj,
        )
        raw["dataset"] = {**dataset, **frame_dataset(frame, proj, checked)}
    final = parse_spec(raw, source="allure.audit() spec", base_dir=base or proj)
    return start_run(final, proj)


def _raw_spec(spec: AuditSpec | Mapping[str, Any] | str | Path) -> tuple[dict[str, Any], Path | None, bool]:
    """The spec as a dict, the folder its relative paths resolve against, and whether it names
    its dataset's path."""
    if isinstance(spec, str | Path):
        return load_spec(spec).model_dump(mode="json"), Path(spec).parent, True  # a file names its dataset
    if isinstance(spec, AuditSpec):
        return spec.model_dump(mode="json"), Path(spec.base_dir) if spec.base_dir else None, True
    raw = dict(spec)
    dataset = raw.get("dataset")
    return raw, None, bool(dataset.get("path")) if isinstance(dataset, Mapping) else False


__all__ = ["Project", "Run", "Table", "audit", "open_project"]
