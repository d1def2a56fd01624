"""The plan decides once which calls a pass makes beyond the main order's (issue 41 item 5).

Before, the loop, a study arm, a re-audit and an exported judge each decided whether their pass ran
a pair's swapped order and asked the reversed question, by four rules in five places. Now
``plan_from_spec`` decides both from the spec and the pass's read-out (``extra_calls``), and no other
module of allure calls ``polarity_variant`` or ``swaps_positions`` or hands a plan its ``polarity``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import allure
from allure.config import load_spec
from allure.models import Item
from allure.passes import plan_from_spec
from allure.passes.readout import LearnedReadout, PassReadout
from tests.evaluator.test_polarity import _reversed_folder, _spec

PAIRS = [Item(id=f"p{k}", task="t", response="a", response_b="b") for k in range(4)]
SINGLE = [Item(id=f"s{k}", task="t", response="a") for k in range(4)]


def _plan(spec: Any, items: list[Item], **kw: Any) -> Any:
    """``plan_from_spec``'s plan (a ``PassPlan``) of ``spec`` (an ``AuditSpec``) for pass 1 of run ``r``
    over ``items``, no examples."""
    return plan_from_spec(spec, run_id="r", iteration=1, items=items, examples_for=lambda _it: [], **kw)


def _step() -> PassReadout:
    return PassReadout(
        mode="logistic",
        labels=(1, 0),
        positive=1,
        fit_ids=frozenset(),
        references={},
        dev_ids=frozenset(),
        not_fit=frozenset(),
    )


def _fitted(*features: str) -> LearnedReadout:
    return LearnedReadout(name="stored", mode="logistic", labels=(1, 0), positive=1, features=features)


@pytest.mark.parametrize(
    ("readout", "pairwise", "items", "positions", "swap", "reversed_"),
    [
        (None, False, SINGLE, False, False, False),
        (_step(), False, SINGLE, False, False, True),  # a step fitted in the pass may read z_reversed
        (_fitted("z"), False, SINGLE, False, False, False),  # a stored read-out of z: nothing more
        (_fitted("z", "z_reversed"), False, SINGLE, False, False, True),
        (None, True, PAIRS, False, False, False),
        (None, True, PAIRS, True, True, False),  # the loop's position figures
        (_step(), True, PAIRS, False, True, True),  # a study arm's read-out step: both orders
        (_fitted("z", "z_swap"), True, PAIRS, False, True, False),  # a judge's read-out of both orders
        (_fitted("z", "z_swap"), True, SINGLE, False, False, False),  # no pairs: nothing to swap
        (_fitted("z", "z_swap"), False, PAIRS, False, False, False),  # not a pairwise prompt set
    ],
)
def test_the_swapped_order_and_the_reversed_question_follow_what_is_read(
    tmp_path: Path,
    readout: object,
    pairwise: bool,
    items: list[Item],
    positions: bool,
    swap: bool,
    reversed_: bool,
) -> None:
    _reversed_folder(tmp_path)
    spec = load_spec(
        _spec(
            tmp_path,
            "http://127.0.0.1:9/v1",
            'polarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }',
        )
    )
    plan = _plan(spec, items, pairwise=pairwise, positions=positions, readout=readout)
    assert plan.swap is swap
    assert (plan.polarity is not None) is reversed_
    assert plan.readout is readout


def test_position_debiasing_runs_the_swapped_order_and_a_replay_asks_no_reversed_question(
    tmp_path: Path,
) -> None:
    _reversed_folder(tmp_path)
    polarity = 'polarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }'
    debias = load_spec(_spec(tmp_path, "http://127.0.0.1:9/v1", 'position_debias = "consistent"'))
    plan = _plan(debias, PAIRS, pairwise=True)
    assert plan.swap and plan.position_debias == "consistent" and plan.polarity is None
    text = (
        _spec(tmp_path, "http://127.0.0.1:9/v1", polarity)
        .read_text()
        .replace('kind = "openai"', 'kind = "replay"')
    )
    (tmp_path / "replay.toml").write_text(text)
    replay = load_spec(tmp_path / "replay.toml")
    plan = _plan(replay, SINGLE, pairwise=False, readout=_fitted("z", "z_reversed"))
    assert plan.polarity is None  # a replay has no reversed answers to read


def test_no_module_but_the_plan_decides_the_extra_calls() -> None:
    root = Path(allure.__file__).parent
    deciders = {"passes/_plan_spec.py", "passes/_polarity.py", "passes/_swap.py"}
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in deciders:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in ("polarity_variant", "swaps_positions"):
                found.append(f"{rel}:{node.lineno} calls {name}")
            if any(k.arg == "polarity" for k in node.keywords):
                found.append(f"{rel}:{node.lineno} hands a plan its polarity")
    assert len(list(root.rglob("*.py"))) > 100  # the scan read the package
    assert found == []
