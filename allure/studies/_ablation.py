"""The two studies of the ALLURE paper: leave-one-cluster-out ablation and the ICL_x sweep.

Both check every input before anything is written (a bad run id, an empty memory, a bad size or an
unknown cluster raises :class:`~allure.errors.StudyError` or the store's error), then hand their arms
to :func:`~allure.audits._run.run_study`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Unpack, cast

from allure.audits._model import AblateBy, Arm, ClusterInfo, StudyRecord
from allure.audits._run import RunOptions, run_study
from allure.audits._source import ItemSplit, StudySource, open_memory, resolve_source
from allure.errors import StudyError
from allure.memory import Balance, EpisodicMemory, RetrievalPolicy, cluster_memory, select_examples
from allure.models import FAILURE_MODES, IclExample, Item


class StudyOptions(RunOptions, total=False):
    """The options every study takes besides its own: where its items and memory come from, its
    context budget, and how it runs (:class:`RunOptions`); every key may be left out."""

    from_run: str | None
    """Audit run whose held-out items the study evaluates."""
    spec: str | Path | None
    """Audit spec (TOML) whose dataset the study evaluates instead."""
    split: ItemSplit | None
    """The items: ``heldout`` (default for ``from_run``), ``audit`` or ``all`` (default for ``spec``)."""
    memory: str | None
    """Memory location (default: the run's or the spec's)."""
    max_prompt_tokens: int | None
    """Context budget per prompt (default: the embedded server's context; unlimited for others)."""


def _source(project: Path, options: StudyOptions) -> tuple[StudySource, EpisodicMemory, RunOptions]:
    """The items, the memory and the run options a study's ``options`` name."""
    unknown = sorted(set(options) - StudyOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    src = resolve_source(
        project,
        from_run=options.get("from_run"),
        spec_path=options.get("spec"),
        split=options.get("split"),
        memory=options.get("memory"),
    )
    max_prompt_tokens = options.get("max_prompt_tokens")
    if max_prompt_tokens is not None:
        if max_prompt_tokens < 64:
            raise StudyError(
                f"max_prompt_tokens={max_prompt_tokens} is too small",
                where="option --max-prompt-tokens",
                fix="pass at least 64 tokens, or leave it out for the server's context size",
            )
        ev = src.spec.evaluator.model_copy(update={"max_prompt_tokens": max_prompt_tokens})
        src.spec = src.spec.model_copy(update={"evaluator": ev})
    mem = open_memory(src)
    if mem.count() == 0:
        raise StudyError(
            "the memory holds no example: there is nothing to ablate or sample",
            where=src.memory_location,
            fix="run an audit and approve examples first (`allure audit`, `allure review`), or pass --memory",
        )
    run = {key: value for key, value in options.items() if key in RunOptions.__optional_keys__}
    return src, mem, cast(RunOptions, run)


def _group(examples: list[IclExample], name: str) -> ClusterInfo:
    return ClusterInfo(
        name=name,
        size=len(examples),
        by_mode=dict(Counter(ex.failure_mode for ex in examples)),
        by_problem_type=dict(Counter(ex.problem_type for ex in examples)),
        skipped=not examples,
    )


def ablation_arms(
    memory: EpisodicMemory,
    base: RetrievalPolicy,
    *,
    by: AblateBy = "failure_mode",
    only: Sequence[str] | None = None,
) -> tuple[list[Arm], list[ClusterInfo]]:
    """The arms of an ablation: ``full`` (the spec's policy), ``-NAME`` per non-empty cluster, ``zero-shot``.

    Args:
        memory: The memory.
        base: The retrieval policy of the full arm (the audit's).
        by: ``failure_mode`` (the five modes and ``other``) or ``cluster`` (HDBSCAN embedding clusters).
        only: Ablate only these clusters (names as listed).

    Returns:
        The arms and every cluster (empty ones marked ``skipped``).

    Raises:
        StudyError: ``only`` names a cluster that does not exist.
    """
    examples = memory.all()
    groups: dict[str, list[IclExample]] = {}
    if by == "failure_mode":
        for mode in FAILURE_MODES:
            groups[mode] = [ex for ex in examples if ex.failure_mode == mode]
    else:
        report = cluster_memory(memory)
        by_id = {ex.id: ex for ex in examples}
        for ex_id, lab in sorted(report.labels.items(), key=lambda kv: kv[1]):
            groups.setdefault("noise" if lab < 0 else f"c{lab}", []).append(by_id[ex_id])
    if only is not None:
        unknown = [n for n in only if n not in groups]
        if unknown:
            raise StudyError(
                f"unknown cluster(s) {', '.join(map(repr, unknown))}",
                where="option --clusters",
                fix=f"use names from: {', '.join(groups) or '(none)'}",
            )
    clusters = [_group(exs, name) for name, exs in groups.items()]
    arms = [Arm(name="full", policy=base)]
    for c in clusters:
        if c.skipped or (only is not None and c.name not in only):
            continue
        if by == "failure_mode":
            policy = base.model_copy(update={"exclude_modes": [*base.exclude_modes, c.name]})
        else:
            ids = sorted(ex.id for ex in groups[c.name])
            policy = base.model_copy(update={"exclude_ids": sorted({*base.exclude_ids, *ids})})
        arms.append(Arm(name=f"-{c.name}", policy=policy, removed=c.name))
    arms.append(Arm(name="zero-shot", example_ids=[]))
    return arms, clusters


def ablation(
    project: str | Path = ".",
    *,
    by: AblateBy = "failure_mode",
    clusters: Sequence[str] | None = None,
    **options: Unpack[StudyOptions],
) -> StudyRecord:
    """Leave-one-cluster-out ablation: full memory, minus each non-empty cluster, zero-shot.

    Items: the held-out split of ``from_run`` (or ``spec``'s dataset). Every arm is compared with
    ``full`` (McNemar exact, Holm, paired bootstrap). Writes ``.allure/studies/ID/``.

    Returns:
        The :class:`StudyRecord` (``.to_pandas()``: arms x metrics).

    Raises:
        StudyError: No source, an empty memory, an unknown cluster name.
        StoreError: An unknown run id.
    """
    proj = Path(project).resolve()
    src, mem, run = _source(proj, options)
    arms, infos = ablation_arms(mem, src.spec.memory.retrieval, by=by, only=clusters)
    return run_study(
        proj,
        src,
        mem,
        kind="ablation",
        arms=arms,
        reference_arm="full",
        record={"by": by, "clusters": infos},
        **run,
    )


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
) -> list[Arm]:
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
    arms = [Arm(name="x=0", example_ids=[], size=0, repeat=0)]
    for x in sizes:
        if x == 0:
            continue
        for r in range(repeats):
            policy = RetrievalPolicy(kind="sample", x=x, seed=r, balance=balance)
            ids = [ex.id for ex in select_examples(examples, dummy, policy)]
            arms.append(Arm(name=f"x={x} #{r}", example_ids=ids, size=x, repeat=r))
    return arms


def sweep(
    project: str | Path = ".",
    *,
    sizes: str | Sequence[int] = (0, 2, 4, 8),
    repeats: int = 3,
    balance: Balance | None = None,
    **options: Unpack[StudyOptions],
) -> StudyRecord:
    """ICL_x sweep: per size x, ``repeats`` draws of x examples from memory; each compared with x = 0.

    Returns:
        The :class:`StudyRecord` with ``sweep`` (mean, sd and range over draws per x).

    Raises:
        StudyError: No source, an empty memory, bad sizes or repeats.
        StoreError: An unknown run id.
    """
    proj = Path(project).resolve()
    chosen = parse_sizes(sizes)
    src, mem, run = _source(proj, options)
    arms = sweep_arms(mem, chosen, repeats, balance)
    return run_study(
        proj,
        src,
        mem,
        kind="sweep",
        arms=arms,
        reference_arm="x=0",
        record={"sizes": chosen, "repeats": repeats, "balance": balance},
        **run,
    )
