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

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from allure.config import AuditSpec, load_spec, parse_spec
from allure.errors import SpecError
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
        in ``#swapped``."""
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
                    base = item_id.removesuffix("#swapped")
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
        import json

        path = Path(self.record.run_dir) / "report.json"
        if not path.is_file():
            raise SpecError(
                "the run has no report yet", where=str(path), fix="finish the run (allure resume RUN) first"
            )
        return json.loads(path.read_text(encoding="utf-8"))


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
        """Every run, oldest first."""
        if not store_url(self.path) and not project_db_path(self.path).exists():
            return []
        with self.store() as store:
            return [Run(self, r) for r in store.list_runs()]

    def runs_table(self) -> Table[RunRecord]:
        """Every run as a table (``to_pandas()``)."""
        return Table([r.record for r in self.runs()])

    def run(self, run_id: str | None = None) -> Run:
        """The run ``run_id`` (default: the newest)."""
        with self.store() as store:
            if run_id is None:
                latest = store.latest_run()
                if latest is None:
                    store.get_run("(none)")  # raises, naming the fix
                    raise AssertionError  # unreachable
                return Run(self, latest)
            return Run(self, store.get_run(run_id))

    def memory(self, location: str = ".allure/memory", collection: str = "icl_examples") -> Table[IclExample]:
        """The approved ICL examples in the episodic memory."""
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


def open_project(path: str | Path = ".") -> Project:
    """The project in folder ``path``."""
    return Project(path)


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
    is checked first: a spec error writes nothing.

    Returns:
        The :class:`~allure.graphs.RunOutcome` (``paused`` for review, or ``done`` with the report).

    Raises:
        TypeError: ``data`` is neither a DataFrame nor a list of dicts.
        SpecError: the spec is invalid, or it names ``[dataset] path`` and ``data`` is given too.
    """
    from allure.graphs import start_run

    proj = Path(project).resolve()
    frame = _as_frame(data)
    if isinstance(spec, str | Path):
        spec_obj = load_spec(spec)
        raw: dict[str, Any] = spec_obj.model_dump(mode="json")
        base: Path | None = Path(spec).parent
        given_path = True  # a spec file always names its dataset
    elif isinstance(spec, AuditSpec):
        raw, base = spec.model_dump(mode="json"), Path(spec.base_dir) if spec.base_dir else None
        given_path = True
    else:
        raw, base = dict(spec), None
        given_path = (
            bool((raw.get("dataset") or {}).get("path")) if isinstance(raw.get("dataset"), Mapping) else False
        )
    if frame is not None:
        if given_path:
            raise SpecError(
                "both [dataset] path and data= are given; allure would read only one of them",
                where="allure.audit(), argument 'data'",
                fix="pass a spec without dataset.path (a dict) together with data=, or leave data out",
            )
        dataset = dict(raw.get("dataset") or {})
        # the spec is checked before the data is written: a spec error writes nothing
        parse_spec(
            {**raw, "dataset": {**dataset, "path": "data.parquet"}},
            source="allure.audit() spec",
            base_dir=proj,
        )
        raw["dataset"] = {**dataset, **_frame_dataset(frame, proj)}
    final = parse_spec(raw, source="allure.audit() spec", base_dir=base or proj)
    return start_run(final, proj)


def _as_frame(data: Any) -> pd.DataFrame | None:
    """``data`` as a DataFrame: a DataFrame as is, a list (or tuple) of dicts one row each.

    Raises:
        TypeError: anything else, naming the accepted types.
    """
    if data is None:
        return None
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, list | tuple) and data and all(isinstance(r, Mapping) for r in data):
        return pd.DataFrame([dict(r) for r in data])
    got = (
        type(data).__name__
        if not isinstance(data, list | tuple)
        else f"{type(data).__name__} of " + (", ".join(sorted({type(r).__name__ for r in data})) or "nothing")
    )
    raise TypeError(
        f"allure.audit(data=...) takes a pandas DataFrame or a non-empty list of dicts (one per row), not {got}"
    )


def _frame_dataset(frame: pd.DataFrame, project: Path) -> dict[str, Any]:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    blob = buf.getvalue()
    folder = project / ".allure" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"frame-{hashlib.sha256(blob).hexdigest()[:16]}.parquet"
    if not path.exists():
        from allure._io import atomic_write_bytes

        atomic_write_bytes(path, blob)
    return {"path": str(path), "format": "parquet"}


__all__ = ["Project", "Run", "Table", "audit", "open_project"]
