"""What the loop's decisions read of a pass (:func:`allure.graphs.readout.decision_verdicts`): a
cross-fitted read-out's out-of-fold label of an audit item instead of its applied one (unit test: a
stand-in context, the store's run info as the loop writes it)."""

from __future__ import annotations

from types import SimpleNamespace

from allure.graphs.readout import decision_verdicts
from allure.models import Verdict


def _ctx(info: dict, verdicts: dict[str, Verdict]) -> SimpleNamespace:
    run = SimpleNamespace(info=info)
    return SimpleNamespace(
        verdicts=lambda run_id, it: verdicts,
        store=SimpleNamespace(get_run=lambda run_id: run),
        spec=SimpleNamespace(label_set=[1, 0]),
    )


def test_out_of_fold_labels_replace_the_applied_ones_and_nothing_else() -> None:
    verdicts = {i: Verdict(item_id=i, label=1, raw_label=0) for i in ("a", "b", "h")}
    # as stored in run info (JSON): a's out-of-fold label 0, b's unparsed; h is held out (none)
    ctx = _ctx({"readout_2": {"out_of_fold": {"a": 0, "b": None}}}, verdicts)
    got = decision_verdicts(ctx, "run", 2)  # type: ignore[arg-type]
    assert got["a"].label == 0 and got["b"].label is None and got["h"].label == 1
    assert got["a"].raw_label == 0 and verdicts["a"].label == 1  # the stored verdicts are untouched
    assert decision_verdicts(ctx, "run", 1) is verdicts  # a pass without a read-out: as stored
    plain = _ctx({"readout_2": {"decision": "read-out (auto): the parsed labels kept"}}, verdicts)
    assert decision_verdicts(plain, "run", 2) is verdicts  # type: ignore[arg-type]
