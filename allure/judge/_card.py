"""The judge's card (``card.json``, ``card.md``): what the exported judge was measured on, from the
run's stored metrics, report and guard decisions. No clock is read: the same run gives the same card."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.judge._fixed import FittedValues
from allure.judge._readout import refit_sentence
from allure.metrics import OBJECTIVE_NAMES

if TYPE_CHECKING:
    from allure.judge._source import JudgeSource
    from allure.report import ReportData
    from allure.store import RunStore


def _file_sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _what(src: JudgeSource, data: ReportData) -> str:
    from allure.report import memory_tried

    if src.zero_shot and src.iteration == src.active and not memory_tried(data):
        return "the zero-shot judge: the run tried no memory version, so it has no examples"
    if src.zero_shot and src.iteration == src.active:
        where = "the audit split out of fold" if src.spec.loop.folds >= 2 else "dev"
        return f"the zero-shot judge, which the run's guard kept: no memory version beat it on {where}, so it has no examples"
    if src.zero_shot:
        return "the run's zero-shot judge (no examples), exported with --zero-shot"
    if src.iteration == src.active:
        return "the judge the run adopted (its active memory version)"
    return f"pass {src.iteration} of the run (not the adopted one: pass {src.active} is)"


def first_line(src: JudgeSource, data: ReportData) -> str:
    """The card's first line: a warning when the held-out claim found this judge worse than zero-shot."""
    o = data.effect.objective if data.effect is not None else None
    name = OBJECTIVE_NAMES[src.spec.loop.objective]
    if (
        o is not None
        and not src.zero_shot
        and src.iteration == src.active
        and o.delta is not None
        and o.delta < 0
    ):
        signif = "significantly" if o.helped == "no" else "not significantly"
        return (
            f"WARNING: on the held-out split this judge scored worse than the run's zero-shot judge "
            f"({name} {o.value_a:.3f} -> {o.value_b:.3f}, {signif}); "
            f"`allure judge export {src.run.id} --zero-shot` exports the zero-shot judge instead."
        )
    return f"Judge exported from run {src.run.id}, pass {src.iteration}: {_what(src, data)}."


def build_card(
    store: RunStore,
    src: JudgeSource,
    fitted: FittedValues,
    n_examples: int,
    project: Path,
    readout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The card's facts (``card.json``); ``readout``: the read-out carried (``describe``, ``refit``),
    ``None`` when the pass applied none."""
    from allure.judge._bundle import allure_version
    from allure.report import helped_sentence, read_report

    data = read_report(Path(src.run.run_dir))
    spec = src.spec
    base = Path(spec.base_dir) if spec.base_dir else project
    metrics = store.metrics(src.run.id).get(src.iteration, {})
    held = metrics.get("heldout")
    o = data.effect.objective if data.effect is not None else None
    # a pass's decision is run info guard_<iteration>; guard_tests counts them (issue 41)
    guard = {k: v for k, v in sorted(src.run.info.items()) if k.startswith("guard_") and k[6:].isdigit()}
    return {
        "first_line": first_line(src, data),
        "run_id": src.run.id,
        "iteration": src.iteration,
        "judge": _what(src, data),
        "zero_shot": src.zero_shot,
        "adopted_iteration": src.active,
        "zero_shot_iteration": src.zero_iteration,
        "date": data.finished_at or src.run.updated_at,
        "allure_version": allure_version(),
        "evaluator": {"kind": spec.evaluator.kind, "model": spec.evaluator.model},
        "data": {
            "path": spec.dataset.path,
            "sha256": _file_sha256(spec.dataset.resolve_path(base)),
            "n_items": data.dataset.n_items,
            "n_audit": data.dataset.n_audit,
            "n_heldout": data.dataset.n_heldout,
            "n_dev": metrics["dev"].n if "dev" in metrics else 0,
        },
        "claim": {
            "sentence": helped_sentence(data),
            "objective": spec.loop.objective,
            "zero_shot": None if o is None else o.value_a,
            "adopted": None if o is None else o.value_b,
            "delta": None if o is None else o.delta,
            "ci": None if o is None else [o.ci_low, o.ci_high],
            "p_value": None if o is None else o.p_value,
            "n": None if o is None else o.n,
            "helped": None if o is None else o.helped,
        },
        "heldout": None
        if held is None
        else {
            "n": held.n,
            "objective": held.objective(spec.loop.objective),
            "accuracy": held.accuracy,
            "label_shares": held.predicted_shares,
            "reference_shares": held.reference_shares,
        },
        "guard": guard,
        "stop_reason": data.stop_reason,
        "examples": n_examples,
        "calibration": fitted.mode,
        "position_debias": spec.evaluator.position_debias,
        **({"readout": readout} if readout is not None else {}),
    }


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def card_markdown(card: dict[str, Any]) -> str:
    """``card.md``: the card's first line, then its facts as a short page."""
    d, c, h = card["data"], card["claim"], card["heldout"]
    lines = [
        card["first_line"],
        "",
        f"# Judge card: run {card['run_id']}, pass {card['iteration']}",
        "",
        f"- Judge: {card['judge']}; {card['examples']} examples; calibration {card['calibration']}; "
        f"position debiasing {card['position_debias']}.",
        f"- Evaluator: {card['evaluator']['kind']} {card['evaluator']['model']}.",
        f"- Measured on: {d['path']} (sha256 {d['sha256'] or 'unknown: file not found at export'}), "
        f"{d['n_items']} items: {d['n_audit']} audit (of them {d['n_dev']} dev), {d['n_heldout']} held out.",
        f"- Held-out claim against zero-shot: {c['sentence'] or 'none (no zero-shot comparison)'}",
    ]
    if h is not None:
        lines.append(
            f"- This judge on the held-out split: n = {h['n']}, {c['objective']} {_num(h['objective'])}, "
            f"accuracy {_num(h['accuracy'])}; label shares {json.dumps(h['label_shares'])} "
            f"(reference {json.dumps(h['reference_shares'])})."
        )
    ro = card.get("readout")
    if ro:
        refit = ro.get("refit")
        lines.append(
            f"- Read-out (applied last): {ro['describe']}"
            + (f"; {refit_sentence(refit)}, as re-audits apply it." if refit else ".")
        )
    lines.append(f"- Guard decisions: {'; '.join(card['guard'].values()) or 'none'}.")
    lines.append(f"- Stopped: {card['stop_reason']}.")
    lines.append(f"- Run finished {card['date']}; exported by allure {card['allure_version']}.")
    return "\n".join(lines) + "\n"
