"""The passes of one re-audit (:func:`score_set`): the main one, the provider-drift probe (fresh calls
on a few items, and the model's repeat noise) and the post-processing the spec asks for (position
debiasing, calibration: :func:`allure.passes.run_pass` on the main pass), each adding its cost to
the re-audit's :class:`Spent`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from allure.config import AuditSpec
from allure.errors import EvaluatorError, EvaluatorUnavailableError
from allure.evaluator import EvalStats
from allure.labels import Label
from allure.models import Item
from allure.reaudit._fingerprint import same
from allure.reaudit._probe import ProbeResult, disagreements, judge_drift, probe_items, probe_size
from allure.reaudit._record import ReauditRecord
from allure.store import RunStore

if TYPE_CHECKING:
    from allure.passes import Readout


@dataclass
class Spent(EvalStats):
    """The cost of every pass of one re-audit (the main pass, the probe, a fresh run): their stats
    summed (``items``: the items asked), and the first failed call's error."""

    first_error: str = ""

    def add_pass(self, result: Any) -> None:
        """Count a pass's result (its stats, and its first error when it is the first)."""
        self._count(result.stats, [result])

    def add_post(self, before: Any, out: Any) -> None:
        """What the pass pipeline sent beyond the main pass counted already (``before``: a copy of its
        stats then): every call of the pass's outcome (:attr:`allure.passes.PassOutcome.stats`: the
        swapped order's, the reversed question's, the content-free ones) less the main pass's."""
        st = replace(out.stats)
        for name, value in before.__dict__.items():
            setattr(st, name, getattr(st, name) - value)
        self._count(st, [r for r in (out.swapped, out.reversed) if r is not None])

    def _count(self, st: EvalStats, results: list[Any]) -> None:
        self.add(st)
        if st.errors and not self.first_error:
            self.first_error = next(
                (v.error or "" for r in results for v in r.verdicts.values() if v.status == "error"),
                "unknown",
            )


def run_probe(
    run: Callable[[int, str, list[Item]], Any],
    spec: AuditSpec,
    items: list[Item],
    n: int,
    rid: str,
    fp: Any,
    history: list[ReauditRecord],
    stored: Any,
) -> ProbeResult:
    """Ask ``n`` random items again, fresh, and judge drift against the model's repeat noise
    (measured now unless an earlier re-audit with the same fingerprint measured it)."""
    chosen = probe_items(items, n, seed=rid)
    ids = [it.id for it in chosen]
    stored_labels = {i: stored.verdicts[i].label for i in ids}
    fresh = run(2, f"fresh:{rid}", chosen)
    fresh_labels = {i: fresh.verdicts[i].label for i in ids}
    k = disagreements(stored_labels, fresh_labels, ids)
    earlier = next(
        (r.probe for r in reversed(history) if r.probe is not None and same(r.fingerprint, fp)), None
    )
    if earlier is not None:
        noise, noise_from = earlier.noise_rate, earlier.noise_from
    else:
        again = run(3, f"noise:{rid}", chosen)
        noise = disagreements(fresh_labels, {i: again.verdicts[i].label for i in ids}, ids) / len(ids)
        noise_from = rid
    p, drift = judge_drift(k, len(ids), noise, spec.gate.alpha)
    return ProbeResult(
        n=len(ids),
        disagreements=k,
        noise_rate=round(noise, 6),
        noise_from=noise_from,
        p_value=round(p, 6),
        drift=drift,
        item_ids=ids,
    )


def post_process(
    ev: Any,
    spent: Spent,
    spec: AuditSpec,
    rid: str,
    iteration: int,
    items: list[Item],
    result: Any,
    memory: Any,
    refs: dict[str, Label | None],
    tell: Callable[[str], None],
    options: Any,
    readout: Readout | None = None,
) -> dict[str, Label | None] | None:
    """The spec's ``[evaluator] position_debias`` (a pairwise set: the swapped order is asked too)
    or ``calibration`` applied to the re-audit's main pass ``result`` by the pass pipeline
    (:func:`allure.passes.run_pass`): item id -> the label the gate reads; ``None`` when neither
    is on (the parsed labels stand). A frozen set has no dev split and no audit items
    (:func:`allure.passes.plan_from_spec` with no ``dev``): ``auto`` (the default), which chooses
    on a dev split, leaves the labels as parsed (choosing on the items reported on would be deciding
    on them); ``offset`` has nothing to fit on (labels kept, and said); ``prior`` takes the frozen
    set's reference label shares. ``readout``: the read-out stored with the memory version
    (:func:`allure.reaudit._readout.reaudit_readout`), applied last, as fitted."""
    from allure.passes import plan_from_spec, run_pass

    policy = spec.memory.retrieval
    plan = plan_from_spec(
        spec,
        run_id=rid,
        iteration=iteration,
        items=items,
        examples_for=lambda item: memory.retrieve(item, policy),
        pairwise=ev.prompts.pairwise,
        references=refs,
        options=options,
        readout=readout,  # what it reads (both orders of a pair, z_reversed) is asked (stored calls re-used)
    )
    if plan.position_debias == "none" and plan.calibration == "none" and readout is None:
        return None
    before = replace(result.stats)  # counted already (the main pass)
    out = run_pass(ev, plan, tell, main=result)
    spent.add_post(before, out)  # the swapped order, the reversed question, the content-free calls
    if out.debias is not None:
        tell(
            f"position-debiased ({out.debias.used}): {out.debias.inconsistent} of {len(items)} items undecided"
        )
    if (cal := out.calibration) is not None and not cal.off:
        tell(f"calibration ({cal.mode}): {cal.changed} of {len(items)} labels changed{cal.why}")
    if out.readout is not None:
        tell(f"{out.readout.name}: {out.readout.changed} of {len(items)} labels changed")
    return out.labels


@dataclass
class Scored:
    """The frozen set scored: the main pass, the labels the gate reads, the probe, the cost."""

    result: Any
    labels: dict[str, Label | None] | None
    """The post-processed labels (debiased or calibrated); ``None``: the parsed ones stand."""
    probe: ProbeResult | None
    spent: Spent
    generation: str
    fresh_reason: str
    started: bool
    """Whether the evaluator started (to answer a call, or only to count a prompt's tokens)."""


def score_set(
    store: RunStore,
    spec: AuditSpec,
    rid: str,
    items: list[Item],
    memory: Any,
    refs: dict[str, Label | None],
    fp: Any,
    history: list[ReauditRecord],
    previous: ReauditRecord | None,
    fresh: bool,
    tell: Callable[[str], None],
    eval_progress: Callable[[int, int], None] | None,
    readout: Readout | None = None,
) -> Scored:
    """Score the set: the main pass (fresh with ``fresh``), the drift probe (a fresh main pass
    when it finds drift), the spec's post-processing (``readout``, stored with the memory version, last).

    Raises:
        EvaluatorUnavailableError: The evaluator cannot be reached or started, or calls failed.
    """
    from allure.evaluator import PassOptions, open_evaluator

    policy = spec.memory.retrieval
    inherited = previous.generation if previous is not None else ""
    generation = f"fresh:{rid}" if fresh else inherited
    fresh_reason = "--fresh" if fresh else ""
    probe: ProbeResult | None = None
    spent = Spent()
    try:
        with open_evaluator(spec, store, items, lazy_start=True) as ev:

            def run(iteration: int, gen: str, chosen: list[Item]) -> Any:
                res = ev.evaluate(
                    rid,
                    iteration,
                    chosen,
                    lambda item: memory.retrieve(item, policy),
                    progress=eval_progress,
                    options=PassOptions(generation=gen or None),
                )
                spent.add_pass(res)
                return res

            main_it = 1
            result = run(main_it, generation, items)
            n_probe = 0 if fresh else min(probe_size(spec), len(items))
            if n_probe and not result.stats.errors:
                probe = run_probe(run, spec, items, n_probe, rid, fp, history, result)
                tell(probe.sentence())
                if probe.drift:
                    generation, fresh_reason = f"fresh:{rid}", "provider drift"
                    main_it = 4
                    result = run(main_it, generation, items)  # the probe items' fresh calls are re-used
            post = post_process(
                ev,
                spent,
                spec,
                rid,
                main_it,
                items,
                result,
                memory,
                refs,
                tell,
                PassOptions(generation=generation or None),
                readout,
            )
            # started to answer a call, or only to count a prompt's tokens: either way it ran
            started = not spec.evaluator.is_replay and ev.server_started
    except EvaluatorUnavailableError:
        raise
    except EvaluatorError as exc:
        raise EvaluatorUnavailableError(exc.message, where=exc.where, fix=exc.fix) from exc
    if spent.errors:
        raise EvaluatorUnavailableError(
            f"{spent.errors} of {spent.items} evaluator calls failed (first: {spent.first_error}); nothing recorded",
            where=f"evaluator {fp.model}",
            fix="check that the evaluator is up, then re-run: answered calls are cached and not sent again",
        )
    return Scored(result, post, probe, spent, generation, fresh_reason, started)
