"""The learned read-out stored with the memory version that produced it (issue 34 item 5), and its
refit after an approval.

A pass that fits a read-out stores its typed record (:class:`allure.metrics.ReadoutRecord`, through
:meth:`ReadoutsStore.record_readout`) in run info ``readout_<it>`` (mode, features, coefficients, CV
score, n, date, the memory version's content hash, and ``fit``: each fit item's id, features and
label); :func:`pass_readout` is the one reader. An auditor's approval or correction changes the labels the read-out should have been fitted
on; :meth:`ReadoutsStore.refit_readout` (called by :meth:`ReviewStore.record_decision` and
:meth:`ReviewStore.undo_decision`, the one place approvals are stored) refits it from the stored
features, with no evaluator call, and stores the result as the iteration's current read-out (run
info ``readout_refit_<it>``: ``current``, the refitted record; ``history``, one line per refit or
refusal). A refit the data cannot support (a label with too few fit items) keeps the old read-out and
says why in the history. The pass's own record stays as it was; the current one is what a re-audit
(:meth:`ReadoutsStore.readout_of_version`) and an exported judge of the pass apply.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np

from allure.labels import Label
from allure.metrics import CalibrationValues, ReadoutRecord
from allure.models import stable_hash
from allure.store._review import ReviewStore
from allure.store._runs import RunsStore

_PASS_KEY = re.compile(r"readout_(\d+)")


def refit_key(iteration: int) -> str:
    """The run info key of an iteration's refitted read-out."""
    return f"readout_refit_{iteration}"


def pass_readout(info: dict[str, Any], iteration: int) -> ReadoutRecord | None:
    """The read-out record pass ``iteration`` stored (run info ``readout_<it>``), typed: the one reader
    of it (a record of any age parses; ``None``: the pass stored none)."""
    return ReadoutRecord.read(info.get(f"readout_{iteration}"))


def current_readout(info: dict[str, Any], iteration: int) -> ReadoutRecord | None:
    """The iteration's current read-out record: its latest refit, else what the pass fitted
    (``None``: none fitted)."""
    refit = info.get(refit_key(iteration))
    if isinstance(refit, dict) and isinstance(refit.get("current"), dict):
        return ReadoutRecord.read(refit["current"])
    rec = pass_readout(info, iteration)
    return rec if rec is not None and rec.applied else None


def readout_refit(info: dict[str, Any], iteration: int) -> dict[str, Any] | None:
    """The refit the iteration's current read-out is: its history line (``at``, ``n``, ``changed``,
    ``describe``); ``None`` when the current read-out is what the pass fitted."""
    refit = info.get(refit_key(iteration))
    if not isinstance(refit, dict) or not isinstance(refit.get("current"), dict):
        return None
    done = [line for line in refit.get("history", []) if isinstance(line, dict) and not line.get("refused")]
    return done[-1] if done else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _refitted(rec: ReadoutRecord, y: list[Label]) -> tuple[ReadoutRecord | None, str]:
    """``rec`` fitted again on its stored features with labels ``y``: the new record, or ``None``
    and why not."""
    from allure.metrics import MIN_PER_LABEL, fit_readout

    fit = rec.fit
    assert fit is not None
    counts = Counter(str(v) for v in y)
    if len(counts) < 2 or min(counts.values()) < MIN_PER_LABEL:
        shown = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
        return None, (
            f"refit refused: the fit items hold too few of a label ({shown}; at least {MIN_PER_LABEL} of "
            "each of at least two labels needed); the previous read-out is kept"
        )
    new = rec.model_copy(
        update={
            "decision": "",
            "changed": 0,
            "fit": fit.model_copy(update={"y": list(y)}),
            "fit_ids": sorted(fit.ids),
        }
    )
    if rec.mode == "knn":
        return new.model_copy(update={"fitted_at": _now()}), ""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # 26 tiny fits: BLAS threads only fight each other (5x slower on 2 cores)
        fitted = fit_readout(
            np.asarray(fit.x, dtype=np.float64),
            y,
            rec.features,
            objective=rec.objective,  # type: ignore[arg-type]
            seed=rec.seed,
        )
    if fitted is None:  # pragma: no cover - the counts above are fit_readout's own rule
        return None, "refit refused by the fit"
    return new.model_copy(update={**dict(fitted), "describe": fitted.describe()}), ""


class ReadoutsStore(RunsStore, ReviewStore):
    """The read-outs of a run's passes, their refit after an approval, and the passes' calibration values."""

    def _decided(self, run_id: str) -> None:
        """A decision or an undo was stored: refit the read-out if it changed a fit label. The
        decision stands whatever the refit does (a record it cannot read is named in run info)."""
        try:
            self.refit_readout(run_id)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            self.update_run(run_id, info={"readout_refit_error": f"{type(exc).__name__}: {exc}"})

    def record_readout(self, run_id: str, iteration: int, record: ReadoutRecord) -> None:
        """Store pass ``iteration``'s read-out record (:attr:`allure.passes.ReadoutOutcome.record`)
        with the run (run info ``readout_<it>``; :func:`pass_readout` reads it back)."""
        self.update_run(run_id, info={f"readout_{iteration}": record.stored()})

    def readout_record(self, run_id: str, iteration: int) -> ReadoutRecord | None:
        """Pass ``iteration``'s stored read-out record (:func:`pass_readout`)."""
        return pass_readout(self.get_run(run_id).info, iteration)

    def record_calibration(self, run_id: str, iteration: int, values: CalibrationValues) -> None:
        """Store the calibration values pass ``iteration`` applied (run info ``calibration_<it>``): what
        an exported judge of the pass carries, no refit."""
        self.update_run(run_id, info={f"calibration_{iteration}": values.model_dump(mode="json")})

    def calibration_values(self, run_id: str, iteration: int) -> CalibrationValues | None:
        """The calibration values pass ``iteration`` stored (``None``: a pass stored before they were)."""
        stored = self.get_run(run_id).info.get(f"calibration_{iteration}")
        return CalibrationValues.model_validate(stored) if isinstance(stored, dict) else None

    def readout_iterations(self, run_id: str) -> list[int]:
        """The run's iterations whose pass stored a fitted read-out with its fit items' features."""
        info = self.get_run(run_id).info
        return sorted(
            int(m.group(1))
            for k in info
            if (m := _PASS_KEY.fullmatch(k))
            and (r := pass_readout(info, int(m.group(1))))
            and r.fit is not None
        )

    def readouts_of_version(self, content_hash: str) -> list[dict[str, Any]]:
        """Every audit pass that evaluated with memory version ``content_hash`` and stored a read-out
        record: ``run_id``, ``iteration``, ``record`` (its current read-out: the latest refit, else the
        pass's; ``None`` when nothing was fitted) and ``pass_record`` (what the pass stored), both
        :class:`~allure.metrics.ReadoutRecord`, ``refits`` (the refit history), oldest run first."""
        out = []
        for run in self.list_runs():
            if run.info.get("kind") == "study":
                continue
            for it, (content, _ids) in self.memory_versions(run.id).items():
                rec = pass_readout(run.info, it)
                if content != content_hash or rec is None:
                    continue
                refit = run.info.get(refit_key(it))
                out.append(
                    {
                        "run_id": run.id,
                        "iteration": it,
                        "record": current_readout(run.info, it),
                        "pass_record": rec,
                        "refits": refit.get("history", []) if isinstance(refit, dict) else [],
                    }
                )
        return out

    def readout_of_version(self, content_hash: str) -> dict[str, Any] | None:
        """The read-out a re-audit with memory version ``content_hash`` applies: of
        :meth:`readouts_of_version`'s entries with a current read-out, the one fitted (or refitted)
        last, the later entry on a tie; ``None`` when no pass with that version fitted one."""
        found = [r for r in self.readouts_of_version(content_hash) if r["record"] is not None]
        if not found:
            return None
        return max(enumerate(found), key=lambda p: (p[1]["record"].fitted_at, p[0]))[1]

    def refit_readout(self, run_id: str) -> dict[str, Any] | None:
        """Refit the read-out of the run's last fitted pass (the pass its candidates were mined from)
        on the same fit items with their labels now (an approved candidate's label wins over the
        reference; an undone approval gives the reference back). No evaluator call: the features are
        the stored ones.

        Returns:
            The history line of what happened (``refitted`` or ``refused``, ``n``, ``changed``,
            ``wall_s``, ``at``), or ``None`` when there is nothing to refit (no fitted read-out, or no
            fit label changed since the last fit).
        """
        its = self.readout_iterations(run_id)
        if not its:
            return None
        t0 = time.perf_counter()
        it = its[-1]
        info = self.get_run(run_id).info
        rec = current_readout(info, it)
        first_rec = pass_readout(info, it)
        if rec is None or rec.fit is None or first_rec is None or first_rec.fit is None:
            return None
        refs: dict[str, Label | None] = self.reference_labels(run_id)
        approved = self.candidates(run_id, status="approved")
        corrected = {ex.item_id: ex.correct_label for ex in approved}
        ids = rec.fit.ids
        got = [corrected.get(i, refs.get(i)) for i in ids]
        y = [v for v in got if v is not None]
        if len(y) != len(ids):  # a fit item lost its reference: the store was edited by hand
            return None
        if [str(v) for v in y] == [str(v) for v in rec.fit.y]:
            return None
        stored = info.get(refit_key(it))
        old: dict[str, Any] = stored if isinstance(stored, dict) else {}
        tried = stable_hash([str(v) for v in y])
        last = (old.get("history") or [{}])[-1]
        if last.get("refused") and last.get("labels") == tried:
            return None  # refused on these very labels already
        first = first_rec.fit.y
        new, why = _refitted(rec, y)
        line: dict[str, Any] = {
            "at": _now(),
            "n": len(ids),
            "changed": sum(str(a) != str(b) for a, b in zip(first, y, strict=True)),
            "refused": why,
            "labels": tried,
        }
        if new is not None:
            line.update(cv_score=new.cv_score, describe=new.describe)
        line["wall_s"] = round(time.perf_counter() - t0, 4)
        kept = old.get("current")
        if new is not None:
            decision = f"refitted after an approval: {line['changed']} of {len(ids)} fit labels corrected"
            kept = new.model_copy(update={"decision": decision}).stored()
        doc = {"current": kept, "history": [*old.get("history", []), line]}
        self.update_run(run_id, info={refit_key(it): doc})
        return line
