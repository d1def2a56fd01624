"""A re-audit counts every call it sends (issue 41 item 5): the main pass's and, in its post-processing
(:func:`allure.reaudit._passes.post_process`), the reversed question's that a stored read-out on
``z_reversed`` asks. Against the scripted server, the count is what the server received."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.config import load_spec
from allure.evaluator import open_evaluator
from allure.metrics import FittedReadout
from allure.passes.readout import LearnedReadout
from allure.reaudit._passes import Spent, post_process
from allure.store import RunStore
from tests.conftest import start_scripted_server
from tests.evaluator.test_polarity import MARKER, _items, _reversed_folder, _spec

pytestmark = pytest.mark.integration


class _NoMemory:
    """The frozen set's examples: none (a zero-shot re-audit)."""

    def retrieve(self, _item: object, _policy: object) -> list[object]:
        return []


def test_the_reversed_questions_calls_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    srv = start_scripted_server(tmp_path, "--item-bias", "--reverse-when", MARKER)
    try:
        _reversed_folder(tmp_path)
        polarity = 'polarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }'
        spec = load_spec(_spec(tmp_path, srv.base_url, polarity))
        items, truth = _items()
        fitted = FittedReadout(
            features=("z", "z_reversed"),
            labels=("0", "1"),
            coef=[[1.0, 1.0]],
            intercept=[0.0],
            C=1.0,
            cv_score=None,
            cv_folds=5,
            objective="balanced_accuracy",
            n=len(items),
            n_per_label={"0": 40, "1": 40},
            fitted_at="2026-01-01T00:00:00+00:00",
        )
        stored = LearnedReadout(
            name="read-out (logistic, stored)",
            mode="logistic",
            labels=(1, 0),
            positive=1,
            features=("z", "z_reversed"),
            fitted=fitted,
        )
        spent = Spent()
        with open_evaluator(spec, RunStore(tmp_path / "runs.db"), items) as ev:
            main = ev.evaluate("ra", 1, items, lambda _it: [])
            spent.add_pass(main)
            labels = post_process(
                ev, spent, spec, "ra", 1, items, main, _NoMemory(), dict(truth), lambda _m: None, None, stored
            )
        assert labels is not None and set(labels) == {it.id for it in items}
        sent = len(srv.requests())
        assert sent == 2 * len(items)  # the main question and the reversed one, once per item
        assert spent.calls == sent and spent.items == 2 * len(items) and spent.errors == 0
    finally:
        srv.stop()
