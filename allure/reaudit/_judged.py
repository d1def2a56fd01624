"""``allure reaudit --judge DIR``: score a frozen set with an exported judge (the one deployed), not
with "what the spec names now".

The bundle brings the evaluator, prompt set, examples, retrieval rule and fitted calibration; the
set's spec keeps its gate, loop settings and label set (which must be the bundle's). The bundle
id goes into the fingerprint, so a changed bundle is a change the gate and ``history`` report.
The labels come from the judge's own pass (:func:`allure.judge.judge_pass`), as
``allure judge label`` gives them; the provider-drift probe is not run for a bundle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from allure.config import AuditSpec
from allure.errors import EvaluatorError, EvaluatorUnavailableError, JudgeError
from allure.models import Item
from allure.reaudit._passes import Scored, Spent
from allure.reaudit._record import ReauditRecord
from allure.store import RunStore


def judged_spec(spec: AuditSpec, judge: Any) -> AuditSpec:
    """The set's spec with the bundle's evaluator, prompt set and retrieval rule.

    Raises:
        JudgeError: The bundle's label set is not the set's.
    """
    own = judge.audit_spec(Path(spec.dataset.path), {})
    if [str(x) for x in own.label_set] != [str(x) for x in spec.label_set]:
        raise JudgeError(
            f"the judge's labels ({', '.join(map(str, own.label_set))}) are not the frozen set's "
            f"({', '.join(map(str, spec.label_set))})",
            where=f"{judge.folder}, field 'labels.label_set'",
            fix="re-audit the set with a judge exported from an audit of the same labels",
        )
    return spec.model_copy(
        update={
            "evaluator": own.evaluator,
            "label_synonyms": own.label_synonyms,
            "positive_label": own.positive_label,
            "memory": spec.memory.model_copy(update={"retrieval": own.memory.retrieval}),
        }
    )


def with_judge(judge: str | Path | None, spec: AuditSpec) -> tuple[Any, AuditSpec]:
    """``(bundle, the spec it scores with)`` for ``--judge`` (``(None, spec)`` without one).

    Raises:
        JudgeError: The bundle is missing, edited or from a newer allure, or its labels are not the set's.
    """
    if judge is None:
        return None, spec
    from allure.judge import load_judge

    bundle = load_judge(judge)
    return bundle, judged_spec(spec, bundle)


def judge_memory(judge: Any) -> tuple[Any, str, int]:
    """The bundle's examples as the re-audit's memory: (memory, content hash, size)."""
    from allure.memory import EpisodicMemory, content_hash

    examples = judge.examples
    return (
        EpisodicMemory.from_examples(examples, location=str(judge.folder)),
        content_hash(examples),
        len(examples),
    )


def score_with_judge(
    store: RunStore,
    spec: AuditSpec,
    judge: Any,
    rid: str,
    items: list[Item],
    previous: ReauditRecord | None,
    fresh: bool,
    tell: Callable[[str], None],
    eval_progress: Callable[[int, int], None] | None,
) -> Scored:
    """The set scored by the judge's pass (the labels the gate reads), with its cost.

    Raises:
        EvaluatorUnavailableError: The evaluator cannot be reached or started, or calls failed.
    """
    from allure.evaluator import PassOptions, open_evaluator
    from allure.judge import judge_pass

    generation = f"fresh:{rid}" if fresh else (previous.generation if previous is not None else "")
    tell(f"judge {judge.id}: {len(judge.examples)} examples, calibration {judge.fitted.mode}")
    try:
        with open_evaluator(spec, store, items, lazy_start=True) as ev:
            out = judge_pass(
                ev, judge, spec, rid, items, progress=eval_progress, say=tell,
                options=PassOptions(generation=generation or None),
            )  # fmt: skip
            started = ev.connected or bool(getattr(ev.server, "started", False))
    except EvaluatorUnavailableError:
        raise
    except EvaluatorError as exc:
        raise EvaluatorUnavailableError(exc.message, where=exc.where, fix=exc.fix) from exc
    errors = [v for v in out.verdicts.values() if v.status == "error"]
    spent = Spent(calls=out.calls, items=len(items), errors=len(errors), wall_s=out.wall_s)
    if errors:
        raise EvaluatorUnavailableError(
            f"{len(errors)} of {len(items)} evaluator calls failed (first: {errors[0].error}); nothing recorded",
            where=f"evaluator {spec.evaluator.model}",
            fix="check that the evaluator is up, then re-run: answered calls are cached and not sent again",
        )
    return Scored(out.result, out.labels, None, spent, generation, "--fresh" if fresh else "", started)
