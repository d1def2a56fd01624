"""The ICL_x sweep (ALLURE): per size x, ``repeats`` draws of x examples from memory, each compared
with x = 0; the mean, spread and range over draws per size.

Writes ``sweep.png`` (each metric against x) besides the shared files, and the per-size table in
``study.md``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Unpack, cast

from pydantic import BaseModel

from allure.errors import StudyError
from allure.memory import Balance, EpisodicMemory, RetrievalPolicy, select_examples
from allure.models import Item
from allure.studies._options import StudyOptions, open_source
from allure.studies._params import ParamType, read_params
from allure.studies._protocol import ArmLabels, StudyContext, as_kind
from allure.studies._record import ArmResult, ArmSpec, StudyRecord
from allure.studies._run import run_study
from allure.studies._write import PANELS, study_markdown, write_study
from allure.studies.figures import figure, fmt, png


class SweepPoint(BaseModel):
    """One size of a sweep: the metric over its repeats."""

    size: int
    """x, the number of examples."""
    repeats: int
    """Arms (draws) at this size."""
    metric: str
    """The metric summarised."""
    mean: float | None
    """Mean over repeats (``None`` when undefined in every repeat)."""
    sd: float | None
    """Standard deviation over repeats (``None`` for fewer than 2 defined values)."""
    low: float | None
    """Smallest value over repeats."""
    high: float | None
    """Largest value over repeats."""
    values: list[float | None]
    """The value of each repeat."""


class SweepRecord(StudyRecord):
    """``study.json`` of a sweep: the shared record, the sizes and the summary over draws."""

    kind: str = "sweep"
    sizes: list[int] = []
    """The sizes x."""
    repeats: int = 0
    """Draws per size."""
    balance: str | None = None
    """``label`` when draws are balanced per correct label."""
    sweep: list[SweepPoint] = []
    """Per size and metric, mean and spread over repeats."""


SWEEP_METRICS = ("accuracy", "f1", "kappa", "auc")
"""The metrics summarised per size."""


def summarise_sweep(arms: list[ArmResult]) -> list[SweepPoint]:
    """One :class:`SweepPoint` per (size, metric), sizes ascending; undefined values are skipped."""
    by_size: dict[int, list[ArmResult]] = defaultdict(list)
    for r in arms:
        if r.arm.size is not None:
            by_size[r.arm.size].append(r)
    out = []
    for size in sorted(by_size):
        for metric in SWEEP_METRICS:
            values = [getattr(r.metrics, metric) for r in by_size[size]]
            vals: list[float | None] = [None if v is None else float(v) for v in values]
            defined = [v for v in vals if v is not None]
            out.append(
                SweepPoint(
                    size=size,
                    repeats=len(vals),
                    metric=metric,
                    mean=statistics.fmean(defined) if defined else None,
                    sd=statistics.stdev(defined) if len(defined) >= 2 else None,
                    low=min(defined) if defined else None,
                    high=max(defined) if defined else None,
                    values=vals,
                )
            )
    return out


def parse_sizes(text: str | Sequence[int]) -> list[int]:
    """Sizes from ``"0,2,4,8"`` (or a list): distinct non-negative integers, ascending; 0 is always included.

    Raises:
        StudyError: An entry is not an integer, or is negative, or none is given.
    """
    parts = [p.strip() for p in text.split(",")] if isinstance(text, str) else list(text)
    sizes = []
    for p in parts:
        try:
            v = -1 if isinstance(p, float | bool) else int(p)
        except (TypeError, ValueError):
            v = -1
        if v < 0 or str(v) != str(p).strip():
            raise StudyError(
                f"size {p!r} is not a non-negative integer",
                where="option --sizes",
                fix="pass example counts separated by commas, e.g. --sizes 0,2,4,8",
            )
        sizes.append(v)
    if not sizes or max(sizes) == 0:
        raise StudyError(
            "no positive size given",
            where="option --sizes",
            fix="pass at least one positive example count, e.g. --sizes 0,2,4,8",
        )
    return sorted({0, *sizes})


MAX_REPEATS = 50
"""Most draws per size of a sweep (more only duplicates arms that Holm then has to correct for)."""


def sweep_arms(
    memory: EpisodicMemory, sizes: Sequence[int], repeats: int, balance: Balance | None = None
) -> list[ArmSpec]:
    """Arm ``x=0`` (zero-shot) and, per size ``x > 0`` and seed ``r < repeats``, the arm ``x=X #R``:
    ``x`` examples drawn uniformly (or balanced per label) with seed ``r``, the same for every item.

    Raises:
        StudyError: ``repeats < 1``, or a size exceeds the memory.
    """
    if not 1 <= repeats <= MAX_REPEATS:
        raise StudyError(
            f"repeats={repeats} is outside 1 to {MAX_REPEATS}",
            where="option --repeats",
            fix=f"pass --repeats between 1 and {MAX_REPEATS}, e.g. --repeats 3",
        )
    examples = memory.all()
    too_big = [x for x in sizes if x > len(examples)]
    if too_big:
        raise StudyError(
            f"size {too_big[0]} exceeds the memory's {len(examples)} examples",
            where="option --sizes",
            fix=f"use sizes up to {len(examples)}",
        )
    dummy = Item(id="-", task="", response="")
    arms = [ArmSpec(name="x=0", example_ids=[], size=0, repeat=0)]
    for x in sizes:
        if x == 0:
            continue
        for r in range(repeats):
            policy = RetrievalPolicy(kind="sample", x=x, seed=r, balance=balance)
            ids = [ex.id for ex in select_examples(examples, dummy, policy)]
            arms.append(ArmSpec(name=f"x={x} #{r}", example_ids=ids, size=x, repeat=r))
    return arms


def check_balance(text: str | None) -> Balance | None:
    """``None`` or ``label``, the draws' balance.

    Raises:
        StudyError: Any other value.
    """
    if text not in (None, "label"):
        raise StudyError(f"balance {text!r} is not known", where="--param balance", fix="use balance=label")
    return cast(Balance | None, text)


@dataclass
class SweepStudy:
    """The sweep as a :class:`~allure.studies.Study`: arms from :func:`sweep_arms`."""

    kind: ClassVar[str] = "sweep"
    result: ClassVar[type[StudyRecord]] = SweepRecord
    params: ClassVar[dict[str, ParamType]] = {"sizes": "text", "repeats": "int", "balance": "text"}
    arm_list: list[ArmSpec]
    sizes: list[int]
    repeats: int
    balance: Balance | None = None

    @classmethod
    def build(cls, context: StudyContext) -> SweepStudy:
        """From ``--param sizes=0,2,4``, ``--param repeats=3`` and ``--param balance=label`` (all optional)."""
        own = read_params(cls.kind, context.params, cls.params)
        sizes = parse_sizes(own.get("sizes", "0,2,4,8"))
        repeats, balance = own.get("repeats", 3), check_balance(own.get("balance"))
        return cls(sweep_arms(context.memory, sizes, repeats, balance), sizes, repeats, balance)

    def arms(self) -> list[ArmSpec]:
        return self.arm_list

    def reference_arm(self) -> str:
        return "x=0"

    def definition(self) -> object:
        return {"sizes": self.sizes, "repeats": self.repeats, "balance": self.balance}

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> SweepRecord:
        return as_kind(
            SweepRecord,
            record,
            sizes=self.sizes,
            repeats=self.repeats,
            balance=self.balance,
            sweep=summarise_sweep(record.arms),
        )

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        assert isinstance(result, SweepRecord)
        setup = [
            f"- sizes {result.sizes}, {result.repeats} draw(s) per size, balance: {result.balance or 'none'}"
        ]
        text = study_markdown(result, setup=setup, middle=sweep_table(result), plots=["sweep.png"])
        return write_study(result, folder, text, {"sweep.png": sweep_png(result)})


def sweep_table(study: SweepRecord) -> list[str]:
    """The per-size section of ``study.md``: mean, sd and range of each metric over draws."""
    if not study.sweep:
        return []
    lines = [
        "",
        "## Sweep (over draws)",
        "",
        "| x | metric | mean | sd | min | max |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {p.size} | {p.metric} | {fmt(p.mean)} | {fmt(p.sd)} | {fmt(p.low)} | {fmt(p.high)} |"
        for p in study.sweep
    ]
    return lines


def sweep(
    project: str | Path = ".",
    *,
    sizes: str | Sequence[int] = (0, 2, 4, 8),
    repeats: int = 3,
    balance: Balance | None = None,
    **options: Unpack[StudyOptions],
) -> SweepRecord:
    """ICL_x sweep: per size x, ``repeats`` draws of x examples from memory; each compared with x = 0.

    Returns:
        The :class:`SweepRecord` with ``sweep`` (mean, sd and range over draws per x).

    Raises:
        StudyError: No source, an empty memory, bad sizes or repeats.
        StoreError: An unknown run id.
    """
    proj = Path(project).resolve()
    chosen = parse_sizes(sizes)
    src, mem, run = open_source(proj, options)
    arms = sweep_arms(mem, chosen, repeats, balance)
    result = run_study(proj, src, mem, SweepStudy(arms, chosen, repeats, balance), **run)
    assert isinstance(result, SweepRecord)
    return result


def sweep_png(study: SweepRecord) -> bytes:
    """Each metric against x: every draw with its bootstrap interval, the mean over draws as a line,
    the range over draws as a band (ALLURE Fig. 6-7)."""
    fig = figure((10, 7))
    axes = fig.subplots(2, 2, sharex=True)
    for ax, (metric, title) in zip(axes.flat, PANELS, strict=True):
        pts = [p for p in study.sweep if p.metric == metric]
        for r in study.arms:
            if r.arm.size is None:
                continue
            v = getattr(r.metrics, metric)
            ci = getattr(r.metrics.ci, metric)
            if v is None:
                continue
            x = r.arm.size + 0.08 * ((r.arm.repeat or 0) - (study.repeats - 1) / 2)
            err = None if not ci else [[v - ci.low], [ci.high - v]]
            ax.errorbar([x], [v], yerr=err, fmt="o", ms=3, color="tab:blue", alpha=0.5, capsize=2)
        xs = [p.size for p in pts if p.mean is not None]
        ax.plot(xs, [p.mean for p in pts if p.mean is not None], color="tab:blue", label="mean over draws")
        ax.fill_between(
            xs,
            [p.low for p in pts if p.mean is not None],
            [p.high for p in pts if p.mean is not None],
            color="tab:blue",
            alpha=0.12,
            linewidth=0,
            label="range over draws",
        )
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.set_xticks(study.sizes)
    for ax in axes[1]:
        ax.set_xlabel("x (ICL examples per prompt)")
    axes[0][0].legend(loc="best", fontsize=8)
    fig.suptitle(
        f"ICL_x sweep {study.id}: n = {study.n_items} items, {study.repeats} draw(s) per x (95% bootstrap CI)"
    )
    return png(fig)
