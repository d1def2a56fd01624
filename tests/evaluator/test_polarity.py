"""The read-out's polarity variant (``[evaluator] polarity_prompt``) on the scripted server.

The judge says ``score: 1`` to most items under the grader's question AND under the reversed one
("is the response wrong?"): its log-odds are its grade's sign plus a yes-bias that differs by item
and is the same for both questions (``--item-bias``). ``z`` alone carries the bias; ``z`` and the
reversed question's log-odds read back (``z_reversed``) cancel it, so the read-out on both beats
the read-out on ``z`` alone on items it was not fitted on. The variant's calls are stored and
linked to the run: a second pass sends none. A spec whose variant is malformed is refused at load.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from allure.config import AuditSpec, load_spec
from allure.errors import SpecError
from allure.evaluator import open_evaluator
from allure.labels import Label
from allure.metrics import objective_value
from allure.models import Item
from allure.passes import REVERSED, PassOutcome, plan_from_spec, polarity_variant, run_pass
from allure.passes.readout import PassReadout
from allure.store import RunStore
from tests.conftest import start_scripted_server

MARKER = "WRONG"
SYSTEM = (
    "You are a strict grader. You are shown a task, its correct answer, and a model's response. Decide "
    f'whether the response\'s final answer is {MARKER}. Reply with exactly one line: "score: 1" if it is '
    f'{MARKER}, or "score: 0" if it is correct.'
)
USER = (
    "Task:\n{task}\n\nCorrect answer:\n{gold_answers}\n\nResponse:\n{response}\n\n"
    'Is the response wrong? Reply with "score: 1" or "score: 0".'
)
N, N_FIT = 80, 50


def _reversed_folder(tmp: Path, system: str = SYSTEM) -> Path:
    folder = tmp / "reversed"
    folder.mkdir(exist_ok=True)
    (folder / "system.txt").write_text(system)
    (folder / "user.txt").write_text(USER)
    (folder / "assistant.txt").write_text("score: {label}")
    return folder


def _spec(tmp: Path, base_url: str, evaluator: str) -> Path:
    (tmp / "items.jsonl").write_text('{"id": "x", "task": "t", "response": "r"}\n')
    spec = tmp / "audit.toml"
    spec.write_text(
        f"""
name = "polarity"
[dataset]
path = "items.jsonl"
[evaluator]
kind = "openai"
model = "scripted"
base_url = "{base_url}"
api_key_env = "ALLURE_TEST_KEY"
concurrency = 2
calibration = "none"
{evaluator}
"""
    )
    return spec


def _items() -> tuple[list[Item], dict[str, Label]]:
    """Half right, half wrong; the padding varies the response's length (the judge's bias) alike in both."""
    items, truth = [], {}
    for i in range(N):
        right = i % 2 == 0
        gold = str(100 + i)
        said = gold if right else str(600 + i)
        items.append(
            Item(
                id=f"i{i:02d}",
                task=f"what is x{i}?",
                response=f"It is {said}" + "." * ((i // 2) % 10),
                gold_answers=[gold],
            )
        )
        truth[f"i{i:02d}"] = 1 if right else 0
    return items, truth


def _pass(
    spec: AuditSpec, store: RunStore, items: list[Item], truth: dict[str, Label], *, polarity: bool
) -> tuple[PassOutcome, PassReadout]:
    fit = frozenset(it.id for it in items[:N_FIT])
    step = PassReadout(
        mode="logistic",
        labels=(0, 1),
        positive=1,
        fit_ids=fit,
        references={i: truth[i] for i in fit},
        dev_ids=frozenset(),
        not_fit=frozenset(it.id for it in items[N_FIT:]),
    )
    with open_evaluator(spec, store, items) as ev:
        plan = plan_from_spec(
            spec, run_id="r1", iteration=1, items=items, examples_for=lambda _it: [], pairwise=False
        )
        plan = replace(plan, readout=step, polarity=polarity_variant(spec) if polarity else None)
        return run_pass(ev, plan), step


def _held_ba(out: PassOutcome, items: list[Item], truth: dict[str, Label]) -> float:
    held = [it.id for it in items[N_FIT:]]
    got = objective_value([truth[i] for i in held], [out.labels[i] for i in held], labels=[0, 1])
    assert got is not None
    return got


@pytest.mark.integration
def test_the_reversed_question_cancels_a_yes_bias_and_is_asked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    srv = start_scripted_server(tmp_path, "--item-bias", "--reverse-when", MARKER)
    try:
        _reversed_folder(tmp_path)
        spec = load_spec(
            _spec(
                tmp_path,
                srv.base_url,
                'polarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }',
            )
        )
        items, truth = _items()
        store = RunStore(tmp_path / "runs.db")
        both, step = _pass(spec, store, items, truth, polarity=True)
        # one call per item under each question, shown in the pass's stats and linked to the run
        assert both.reversed is not None and both.reversed.stats.calls == N
        assert both.stats.calls == 2 * N and len(srv.requests()) == 2 * N
        stored = store.verdicts("r1", 1)
        assert sum(i.endswith(REVERSED) for i in stored) == N
        # yes-biased under both questions: "1" to most items, the reversed answers included
        main_yes = sum(both.raw_labels[it.id] == 1 for it in items) / N
        rev_yes = sum(v.label == 1 for i, v in stored.items() if i.endswith(REVERSED)) / N
        assert main_yes > 0.6 and rev_yes > 0.6, (main_yes, rev_yes)
        # the read-out's CV kept z_reversed, and it beats z alone on the items it was not fitted on
        assert both.readout is not None and both.readout.record is not None  # the pass's typed record
        assert both.readout.record.features == ("z", "z_reversed")
        z_only, _ = _pass(spec, store, items, truth, polarity=False)
        assert z_only.readout is not None and z_only.readout.record is not None
        assert z_only.readout.record.features == ("z",)
        ba_both, ba_z = _held_ba(both, items, truth), _held_ba(z_only, items, truth)
        assert ba_both >= 0.95 and ba_both > ba_z + 0.1, (ba_both, ba_z)
        # a second pass sends 0 calls: both questions' calls come from the run store
        sent = len(srv.requests())
        again, _ = _pass(spec, RunStore(tmp_path / "runs.db"), items, truth, polarity=True)
        assert again.stats.calls == 0 and again.stats.cache_hits == 2 * N
        assert len(srv.requests()) == sent
        assert again.labels == both.labels
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("evaluator", "field", "words"),
    [
        ('polarity_prompt = "reversed"\npolarity_labels = { "1" = 1, "0" = 0 }', "polarity_labels", "itself"),
        ('polarity_prompt = "reversed"\npolarity_labels = { "1" = 0 }', "polarity_labels", "one to one"),
        ('polarity_prompt = "reversed"', "polarity_labels", "one to one"),
        ('polarity_labels = { "1" = 0, "0" = 1 }', "polarity_labels", "polarity_prompt is not"),
        (
            'polarity_prompt = "nowhere"\npolarity_labels = { "1" = 0, "0" = 1 }',
            "polarity_prompt",
            "not found",
        ),
        (
            'readout = "none"\npolarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }',
            "polarity_prompt",
            "feature of the read-out",
        ),
        ('polarity_prompt = "rubric"\npolarity_labels = { "1" = 0, "0" = 1 }', "polarity_prompt", "{rubric}"),
    ],
)
def test_a_malformed_polarity_variant_is_refused_at_load(
    tmp_path: Path, evaluator: str, field: str, words: str
) -> None:
    _reversed_folder(tmp_path)
    rubric = tmp_path / "rubric"
    rubric.mkdir()
    (rubric / "system.txt").write_text("Decide. {rubric}")
    (rubric / "user.txt").write_text(USER)
    (rubric / "assistant.txt").write_text("score: {label}")
    path = _spec(tmp_path, "http://127.0.0.1:9/v1", evaluator)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert f"evaluator.{field}" in text and words in text and str(path) in text, text
    assert err.value.fix


def test_a_reversed_answer_is_read_back_in_the_judges_terms(tmp_path: Path) -> None:
    from allure.models import Verdict

    _reversed_folder(tmp_path)
    labels = 'polarity_prompt = "reversed"\npolarity_labels = { "1" = 0, "0" = 1 }'
    spec = load_spec(_spec(tmp_path, "http://127.0.0.1:9/v1", labels))
    variant = polarity_variant(spec)
    assert (
        variant is not None and variant.items([Item(id="a", task="t", response="r")])[0].id == "a" + REVERSED
    )
    # "1" to "is the response wrong?" with P = 0.8 is the judge's 0 with P(1) = 0.2
    said = Verdict(item_id="a" + REVERSED, label=1, prob_positive=0.8, label_probs={"0": 0.2, "1": 0.8})
    back = variant.read_back(said)
    assert (back.label, back.raw_label, back.label_probs) == (0, 1, {"1": 0.2, "0": 0.8})
    assert back.prob_positive == pytest.approx(0.2)
    unparsed = variant.read_back(Verdict(item_id="b" + REVERSED, label=None, status="unparsed"))
    assert unparsed.label is None and unparsed.prob_positive is None
