"""``allure reaudit``: score a frozen set with the evaluator, prompt set and memory a spec names now.

Everything that can be wrong with the input (unknown set, invalid gate, a baseline of another
set, a bad spec or prompt set) is checked before anything is written. Re-audits of one project
are serialised by :func:`reaudit_lock`. The evaluator is the audit loop's runner, so every call
is cached in the run store: an unchanged prompt, model and memory costs no call, and the
embedded server starts only when a call is due.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.config import AuditSpec, parse_spec
from allure.errors import EvaluatorUnavailableError, ReauditError
from allure.models import IclExample, Item, stable_hash, utcnow
from allure.reaudit._deliver import ReauditOutputs, deliver, deliver_interrupted
from allure.reaudit._fingerprint import build_fingerprint, changes, prompt_diff, same
from allure.reaudit._frozen import FrozenSet, freeze_items, load_frozen_set, spec_items
from allure.reaudit._gate import GateResult, evaluate_gate
from allure.reaudit._judged import judge_memory, score_with_judge, with_judge
from allure.reaudit._lock import reaudit_lock
from allure.reaudit._outputs import write_record_files
from allure.reaudit._passes import Scored, score_set
from allure.reaudit._readout import reaudit_readout
from allure.reaudit._record import ReauditRecord, ReauditStats
from allure.store import RunStore, open_project_store, project_db_path, store_url

if TYPE_CHECKING:
    from allure.labels import Label
    from allure.metrics import SplitMetrics


@dataclass
class ReauditOutcome:
    """What :func:`run_reaudit` did."""

    record: ReauditRecord | None
    """The new re-audit (None when ``--if-changed`` skipped it)."""
    exit_code: int
    """The process exit status to use."""
    skipped_because: str = ""
    """Why no re-audit ran (``--if-changed`` with nothing changed)."""
    previous: ReauditRecord | None = None
    """The last re-audit of the set before this one."""
    frozen: bool = False
    """Whether the set was frozen from the spec's dataset now (its first version)."""
    files: dict[str, Path] = field(default_factory=dict)
    """``summary`` (Markdown) and ``json`` written under ``.allure/reaudits/ID/``."""
    written: dict[str, Path] = field(default_factory=dict)
    """The files ``run_reaudit(outputs=...)`` wrote, by name (``junit``, ``json``, ``markdown``)."""


def load_records(store: RunStore, set_name: str) -> list[ReauditRecord]:
    """The re-audits of a set, oldest first."""
    return [ReauditRecord.model_validate(d) for d in store.reaudit_docs(set_name)]


def _baseline(store: RunStore, fs: FrozenSet, spec: AuditSpec) -> ReauditRecord | None:
    pinned = spec.gate.baseline
    if pinned:
        doc = store.reaudit_doc(pinned)
        if doc is None:
            raise ReauditError(
                f"unknown baseline re-audit {pinned!r}",
                where="[gate] baseline",
                fix=f"use an id from `allure history {fs.name}`, or leave baseline empty (last passing re-audit)",
            )
        rec = ReauditRecord.model_validate(doc)
        if rec.set_name != fs.name:
            raise ReauditError(
                f"baseline {pinned!r} is a re-audit of set {rec.set_name!r}, not of {fs.name!r}",
                where="[gate] baseline",
                fix=f"pin a re-audit of {fs.name!r} (see `allure history {fs.name}`)",
            )
        return rec
    passing = [r for r in load_records(store, fs.name) if r.status == "pass"]
    return passing[-1] if passing else None


class _EmptyMemory:
    def retrieve(self, item: Item, policy: Any) -> list[IclExample]:
        return []


def _memory(spec: AuditSpec, project: Path) -> tuple[Any, str, int]:
    """The spec's memory (an empty stand-in when a local memory folder does not exist), its hash and size."""
    from allure.memory import EpisodicMemory, content_hash, is_url, resolve_location

    loc = resolve_location(spec.memory.location, project)
    if not is_url(loc) and not Path(loc).exists():
        return _EmptyMemory(), content_hash([]), 0
    # lazy: the examples (and so the content hash and the non-similarity policies) come from the
    # store's SQLite file; chromadb is imported only if a similarity policy needs a vector query.
    memory = EpisodicMemory.open(loc, collection=spec.memory.collection, lazy=True)
    version = memory.version()
    return memory, version.content_hash, version.size


def resolve_spec(store: RunStore | None, target: str, *, project: Path) -> tuple[AuditSpec, str, str]:
    """``(spec, set name, source)`` for ``allure reaudit TARGET``: a spec file with ``[reaudit]``, or a set name.

    Raises:
        SpecError: the spec file is invalid or has no ``[reaudit]`` table.
        ReauditError: an unknown set name.
    """
    from allure.config import load_spec

    path = Path(target)
    if path.suffix == ".toml" or path.is_file():
        spec = load_spec(path)
        if spec.reaudit is None:
            raise ReauditError(
                "the spec has no [reaudit] table",
                where=str(path),
                fix='add [reaudit] with set = "NAME" (the frozen set this spec re-audits)',
            )
        return spec, spec.reaudit.set, str(path)
    if store is None:
        raise ReauditError(
            f"unknown frozen set {target!r} (this project has no run store)",
            where=str(project_db_path(project)),
            fix=f"pin one with `allure freeze RUN --name {target}` or pass a spec file with [reaudit]",
        )
    fs = load_frozen_set(store, target)
    spec = parse_spec(fs.spec, source=f"set {target} (stored spec)", strict=False)
    return spec, target, f"set {target}"


def new_reaudit_id(set_name: str) -> str:
    """A new re-audit id, ``ra-YYYYMMDDTHHMMSS-xxxxxx``: time-ordered, and unique even for two
    re-audits of one set started in the same second (a random part)."""
    now = utcnow()
    return f"ra-{now[:19].replace(':', '').replace('-', '')}-{stable_hash(set_name, now, uuid.uuid4().hex, length=6)}"


def run_reaudit(
    target: str,
    project_dir: str | Path = ".",
    *,
    if_changed: bool = False,
    wait: bool = True,
    say: Callable[[str], None] | None = None,
    eval_progress: Callable[[int, int], None] | None = None,
    fresh: bool = False,
    judge: str | Path | None = None,
    outputs: ReauditOutputs | None = None,
) -> ReauditOutcome:
    """Re-audit a frozen set (``target``: a spec file with ``[reaudit]``, or a set name).

    With ``fresh`` every item is asked again (a new generation of calls, stored beside the old
    ones); otherwise the provider-drift probe (``[reaudit] probe``) re-asks some items fresh and
    runs the whole set fresh when they disagree with the stored verdicts beyond the model's noise.
    With ``judge`` (a bundle folder) that exported judge scores the set (:mod:`allure.reaudit._judged`).

    ``outputs`` names the files (JUnit, JSON, Markdown) and the webhook the result is delivered to
    (:mod:`allure.reaudit._deliver`): checked before anything runs, written after the re-audit (for
    a skipped one, its last record, without a webhook POST); an evaluator that is unavailable still
    gets ``interrupted`` JUnit and JSON files before the error is raised.

    Returns:
        The outcome; its ``exit_code`` is :data:`EXIT_PASS` or :data:`EXIT_REGRESSION`.

    Raises:
        ReauditError, SpecError, StoreError, DatasetError, OutputError: bad input (nothing written).
        EvaluatorUnavailableError: the evaluator cannot be reached or started, or calls failed.
        ReauditBusyError: ``wait`` is False and another re-audit holds the lock.
    """
    tell = say or (lambda _line: None)
    checked = outputs.checked() if outputs is not None else None
    try:
        outcome = _reaudit(target, project_dir, if_changed, wait, tell, eval_progress, fresh, judge)
    except EvaluatorUnavailableError as exc:
        if checked is not None:
            deliver_interrupted(target, exc.render(), checked)
        raise
    shown = outcome.record or outcome.previous
    if checked is not None and shown is not None:
        delivered, outcome.written = deliver(shown, checked, fresh=outcome.record is not None, say=tell)
        if outcome.record is not None:
            outcome.record = delivered
    return outcome


def _reaudit(
    target: str,
    project_dir: str | Path,
    if_changed: bool,
    wait: bool,
    tell: Callable[[str], None],
    eval_progress: Callable[[int, int], None] | None,
    fresh: bool,
    judge: str | Path | None = None,
) -> ReauditOutcome:
    project = Path(project_dir).resolve()
    db = project_db_path(project)
    store = open_project_store(project, create=False) if db.exists() or store_url(project) else None
    try:
        spec, set_name, source = resolve_spec(store, target, project=project)
        frozen_now: list[Any] | None = None
        if store is None or set_name not in store.frozen_set_names():
            if spec.reaudit is None or source.startswith("set "):
                raise ReauditError(
                    f"unknown frozen set {set_name!r}",
                    where=str(db),
                    fix=f"pin it with `allure freeze RUN --name {set_name}` or `allure freeze SPEC`",
                )
            if spec.gate.baseline:
                raise ReauditError(
                    f"baseline {spec.gate.baseline!r} cannot belong to set {set_name!r}: the set does not exist yet",
                    where="[gate] baseline",
                    fix="remove the baseline for the first re-audit",
                )
            frozen_now = spec_items(spec, project, spec.reaudit.split)  # may raise: nothing written yet
        else:
            _baseline(store, load_frozen_set(store, set_name), spec)  # validates a pinned baseline
        bundle, spec = with_judge(judge, spec)
        from allure.prompts import load_prompt_set

        load_prompt_set(spec.evaluator.prompt)
        if store is None:
            store = open_project_store(project)
        with reaudit_lock(project, wait=wait, on_wait=tell, on_stale=tell):
            return _locked(
                store, spec, set_name, source, project, frozen_now, if_changed, tell, eval_progress, fresh,
                bundle,
            )  # fmt: skip
    finally:
        if store is not None:
            store.close()


def _locked(
    store: RunStore,
    spec: AuditSpec,
    set_name: str,
    source: str,
    project: Path,
    frozen_now: list[Any] | None,
    if_changed: bool,
    tell: Callable[[str], None],
    eval_progress: Callable[[int, int], None] | None,
    fresh: bool = False,
    bundle: Any = None,
) -> ReauditOutcome:
    """The re-audit under its lock: freeze the set if new, skip when nothing changed, score the set,
    gate it against the baseline, store the record and write its files."""
    frozen = _freeze_new(store, spec, set_name, source, frozen_now, tell)
    fs = load_frozen_set(store, set_name)
    history = load_records(store, set_name)
    previous = history[-1] if history else None
    memory, mem_hash, mem_size = _memory(spec, project) if bundle is None else judge_memory(bundle)
    readout = reaudit_readout(store, spec, mem_hash, memory, tell) if bundle is None else None
    fp = build_fingerprint(
        spec,
        memory_version=mem_hash,
        memory_size=mem_size,
        set_name=fs.name,
        set_version=fs.version,
        set_hash=fs.content_hash,
        judge=bundle.id if bundle is not None else "",
        readout=readout.tag if readout is not None else "",
    )
    if if_changed and previous is not None and same(previous.fingerprint, fp):
        return ReauditOutcome(
            record=None,
            exit_code=previous.exit_code,
            skipped_because=f"nothing changed since re-audit {previous.id} ({previous.status})",
            previous=previous,
        )
    baseline = _baseline(store, fs, spec)
    items = [fi.item for fi in fs.items]
    refs = fs.references()
    rid, ro = new_reaudit_id(fs.name), readout.readout if readout is not None else None
    tell(f"re-audit {rid}: set {fs.name!r} v{fs.version} ({fs.n_items} items), memory {mem_size} examples")
    scored = (
        score_set(
            store, spec, rid, items, memory, refs, fp, history, previous, fresh, tell, eval_progress, ro
        )
        if bundle is None
        else score_with_judge(store, spec, bundle, rid, items, previous, fresh, tell, eval_progress)
    )
    labels, metrics, gate = _measure(spec, items, refs, scored, baseline)
    record = ReauditRecord(
        id=rid,
        created_at=utcnow(),
        set_name=fs.name,
        set_version=fs.version,
        spec_source=source,
        fingerprint=fp,
        changes=changes(previous.fingerprint if previous else None, fp),
        prompt_diff=prompt_diff(baseline.fingerprint.prompts, fp.prompts) if baseline else [],
        metrics=metrics,
        labels=labels,
        gate=gate,
        stats=ReauditStats(
            items=scored.result.stats.items,
            calls=scored.spent.calls,
            cache_hits=scored.result.stats.cache_hits,
            unparsed=scored.result.stats.unparsed,
            evaluator_started=scored.started,
            wall_s=round(scored.spent.wall_s, 3),
        ),
        generation=scored.generation,
        fresh_reason=scored.fresh_reason,
        probe=scored.probe,
        set_change=fs.change if not any(r.set_version == fs.version for r in (history or [])) else "",
    )
    store.add_reaudit(
        record.id,
        record.set_name,
        record.set_version,
        record.created_at,
        record.status,
        record.model_dump(mode="json"),
    )
    files = write_record_files(record, project)
    return ReauditOutcome(
        record=record, exit_code=record.exit_code, previous=previous, frozen=frozen, files=files
    )


def _freeze_new(
    store: RunStore,
    spec: AuditSpec,
    set_name: str,
    source: str,
    frozen_now: list[Any] | None,
    tell: Callable[[str], None],
) -> bool:
    """Freeze ``frozen_now`` as the set ``set_name`` when the store has no such set yet; whether it did."""
    if frozen_now is None or set_name in store.frozen_set_names():
        return False
    assert spec.reaudit is not None
    fs, frozen = freeze_items(
        store,
        set_name,
        frozen_now,
        source=f"spec {source}",
        split=spec.reaudit.split,
        spec=spec.model_dump(mode="json"),
    )
    tell(f"froze set {set_name!r} v{fs.version}: {fs.n_items} items from {source}")
    return frozen


def _measure(
    spec: AuditSpec,
    items: list[Item],
    refs: dict[str, Label | None],
    scored: Scored,
    baseline: ReauditRecord | None,
) -> tuple[dict[str, Label | None], SplitMetrics, GateResult]:
    """The labels the gate reads (post-processed, else parsed), their metrics over the set, and the gate
    against the baseline."""
    result, post = scored.result, scored.labels
    labels = post if post is not None else {it.id: result.verdicts[it.id].label for it in items}
    metrics = _set_metrics(spec, items, refs, labels, None if post else result.verdicts)
    gate = evaluate_gate(
        spec.gate,
        items=items,
        references=refs,
        labels=labels,
        metrics=metrics,
        label_set=list(spec.label_set),
        baseline_id=baseline.id if baseline else "",
        baseline_labels=baseline.labels if baseline else None,
        gold_check=spec.gold_check,
    )
    return labels, metrics, gate


def _set_metrics(
    spec: AuditSpec,
    items: list[Item],
    refs: dict[str, Label | None],
    labels: dict[str, Label | None],
    verdicts: dict[str, Any] | None,
) -> SplitMetrics:
    """The metrics of ``labels`` over the whole set; the AUC ranks the verdicts' label probabilities
    (``verdicts``), or the hard labels when they were post-processed (``None``)."""
    from allure.metrics import compute_metrics

    ls, pos = spec.label_set, spec.positive_label
    return compute_metrics(
        [refs[it.id] for it in items],
        [labels[it.id] for it in items],
        prob_positive=[None if verdicts is None else verdicts[it.id].positive_score(ls, pos) for it in items],
        problem_types=[it.problem_type for it in items],
        generators=[it.generator for it in items],
        labels=tuple(spec.label_set),
        pos_label=spec.positive_label,
        n_resamples=spec.loop.bootstrap_resamples,
        random_state=spec.loop.seed,
    )
