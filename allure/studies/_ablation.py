"""Leave-one-cluster-out ablation (ALLURE): the full memory, minus each failure mode or embedding
cluster, and zero-shot, each compared with the full memory.

Writes ``ablation.png`` (each arm's change against ``full``) besides the shared files, and lists
the clusters in ``study.md``. Every input is checked before anything is written (an empty memory
or an unknown cluster raises :class:`~allure.errors.StudyError`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Unpack, cast

from pydantic import BaseModel

from allure.errors import StudyError
from allure.memory import EpisodicMemory, RetrievalPolicy, cluster_memory
from allure.models import FAILURE_MODES, IclExample
from allure.safe_text import markdown_cell as md
from allure.studies._options import StudyOptions, open_source
from allure.studies._params import ParamType, read_params
from allure.studies._protocol import ArmLabels, StudyContext, as_kind
from allure.studies._record import ArmSpec, StudyRecord
from allure.studies._run import run_study
from allure.studies._write import comparison_png, study_markdown, write_study

AblateBy = Literal["failure_mode", "cluster"]
"""What an ablation removes: a failure mode's examples, or an embedding cluster's."""


class ClusterInfo(BaseModel):
    """A cluster an ablation can remove, with its make-up."""

    name: str
    """Failure mode name, or ``c0``, ``c1``... for embedding clusters (``noise``: HDBSCAN's unclustered points)."""
    size: int
    """Examples in it."""
    by_mode: dict[str, int] = {}
    """Failure mode -> examples."""
    by_problem_type: dict[str, int] = {}
    """Problem type -> examples."""
    skipped: bool = False
    """True when the cluster is empty (listed, not ablated)."""


class AblationRecord(StudyRecord):
    """``study.json`` of an ablation: the shared record and the clusters."""

    kind: str = "ablation"
    by: AblateBy | None = "failure_mode"
    """What the clusters are (``None`` in an older study of arms of its as_kind, stored as an ablation)."""
    clusters: list[ClusterInfo] = []
    """The clusters, empty ones included (marked skipped)."""


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
) -> tuple[list[ArmSpec], list[ClusterInfo]]:
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
    arms = [ArmSpec(name="full", policy=base)]
    for c in clusters:
        if c.skipped or (only is not None and c.name not in only):
            continue
        if by == "failure_mode":
            policy = base.model_copy(update={"exclude_modes": [*base.exclude_modes, c.name]})
        else:
            ids = sorted(ex.id for ex in groups[c.name])
            policy = base.model_copy(update={"exclude_ids": sorted({*base.exclude_ids, *ids})})
        arms.append(ArmSpec(name=f"-{c.name}", policy=policy, removed=c.name))
    arms.append(ArmSpec(name="zero-shot", example_ids=[]))
    return arms, clusters


@dataclass
class AblationStudy:
    """The ablation as a :class:`~allure.studies.Study`: arms from :func:`ablation_arms`."""

    kind: ClassVar[str] = "ablation"
    result: ClassVar[type[StudyRecord]] = AblationRecord
    params: ClassVar[dict[str, ParamType]] = {"by": "text", "clusters": "names"}
    arm_list: list[ArmSpec]
    by: AblateBy
    clusters: list[ClusterInfo]

    @classmethod
    def build(cls, context: StudyContext) -> AblationStudy:
        """From ``--param by=cluster`` and ``--param clusters=a,b`` (both optional)."""
        own = read_params(cls.kind, context.params, cls.params)
        text = own.get("by", "failure_mode")
        if text not in ("failure_mode", "cluster"):
            raise StudyError(
                f"by {text!r} is not known", where="--param by", fix="use failure_mode or cluster"
            )
        only = own.get("clusters") or None
        base = context.source.spec.memory.retrieval
        by = cast(AblateBy, text)
        arms, infos = ablation_arms(context.memory, base, by=by, only=only)
        return cls(arms, by, infos)

    def arms(self) -> list[ArmSpec]:
        return self.arm_list

    def reference_arm(self) -> str:
        return "full"

    def definition(self) -> object:
        return {"by": self.by, "clusters": self.clusters}

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> AblationRecord:
        return as_kind(AblationRecord, record, by=self.by, clusters=self.clusters)

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        assert isinstance(result, AblationRecord)
        text = study_markdown(result, setup=cluster_lines(result), plots=["ablation.png"])
        return write_study(result, folder, text, {"ablation.png": comparison_png(result, "Ablation")})


def cluster_lines(study: AblationRecord) -> list[str]:
    """The clusters of ``study.md``'s setup: size and make-up of each."""
    lines = [f"- clusters ({study.by}):"]
    for cl in study.clusters:
        modes = ", ".join(f"{md(k)} {v}" for k, v in sorted(cl.by_mode.items(), key=lambda kv: -kv[1])[:4])
        types = ", ".join(
            f"{md(k)} {v}" for k, v in sorted(cl.by_problem_type.items(), key=lambda kv: -kv[1])[:4]
        )
        lines.append(
            f"  - {md(cl.name)}: {cl.size} examples"
            + (" (empty: skipped)" if cl.skipped else f" [{modes}; {types}]")
        )
    return lines


def ablation(
    project: str | Path = ".",
    *,
    by: AblateBy = "failure_mode",
    clusters: Sequence[str] | None = None,
    **options: Unpack[StudyOptions],
) -> AblationRecord:
    """Leave-one-cluster-out ablation: full memory, minus each non-empty cluster, zero-shot.

    Items: the held-out split of ``from_run`` (or ``spec``'s dataset). Every arm is compared with
    ``full`` (McNemar exact, Holm, paired bootstrap). Writes ``.allure/studies/ID/``.

    Returns:
        The :class:`AblationRecord` (``.to_pandas()``: arms x metrics).

    Raises:
        StudyError: No source, an empty memory, an unknown cluster name.
        StoreError: An unknown run id.
    """
    proj = Path(project).resolve()
    src, mem, run = open_source(proj, options)
    arms, infos = ablation_arms(mem, src.spec.memory.retrieval, by=by, only=clusters)
    result = run_study(proj, src, mem, AblationStudy(arms, by, infos), **run)
    assert isinstance(result, AblationRecord)
    return result
