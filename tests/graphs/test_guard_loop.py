"""The guard end to end: a memory version is adopted only when it is *better* on the dev split
(``[loop] folds = 0``; the cross-fitted default: ``test_crossfit_loop.py``).

A real audit loop (subprocess CLI) against the scripted server on 127.0.0.1. Zero-shot the
scripted judge passes responses that mention "room" (keywords); with ``--examples-hurt`` any ICL
example makes it pass *every* response (a label-prior shift: balanced accuracy falls to 0.5 on the
dev split), without it the examples make it grade strictly (balanced accuracy rises to 1). With
``--examples-right REGEX`` the examples help on the items REGEX names and hurt everywhere else: the
issue 34 case (a noisy rise on dev, a memory worse on held-out) is built by naming dev items.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import audit_ok
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def _audit(
    tmp_path: Path, *server_args: str, n_per_type: int = 30, **loop: object
) -> tuple[str, RunStore, list[dict]]:
    with start_scripted_server(tmp_path, *server_args) as srv:
        # these tests are of the dev split rule ([loop] folds = 0); tests/graphs/test_crossfit_loop.py
        # tests the cross-fitted default
        spec = write_spec(tmp_path, srv.base_url, **{"max_iterations": 3, "folds": 0, **loop})
        write_dataset(tmp_path / "items.jsonl", n_per_type=n_per_type)
        res = audit_ok(tmp_path, spec)
        requests = [r["body"] for r in srv.requests()]
    store = RunStore(project_db_path(tmp_path / "proj"))
    return res.stdout, store, requests


def test_guard_keeps_zero_shot_when_the_examples_make_the_judge_worse(tmp_path: Path) -> None:
    out, store, requests = _audit(tmp_path, "--examples-hurt", n_per_type=40, dev_fraction=0.7)
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert run.info["active_iteration"] == 1 and run.info["zero_shot_iteration"] == 1
    assert (
        "not adopted" in run.info["stop_reason"]
        and "balanced accuracy on the dev split" in run.info["stop_reason"]
    )
    # two passes only: the refused version stops the loop; its mistakes are not mined
    assert set(store.metrics(run.id)) == {1, 2}
    assert store.candidates(run.id, iteration=2) == []
    dev = store.metrics(run.id)
    assert dev[2]["dev"].balanced_accuracy < dev[1]["dev"].balanced_accuracy
    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    assert report["active_iteration"] == 1
    assert "kept the zero-shot judge" in (Path(run.run_dir) / "report.md").read_text()
    assert "not adopted" in out
    # the dev items were never mined: no example comes from a dev item
    mined = {c.item_id for c in store.candidates(run.id)}
    dev = _dev_ids(store, run.id)
    assert mined and dev and not (mined & dev)


def _dev_ids(store: RunStore, run_id: str) -> set[str]:
    from allure.config import AuditSpec
    from allure.dataset import dev_split

    spec = AuditSpec.model_validate(store.get_run(run_id).spec)
    return dev_split(store.items(run_id), store.splits(run_id), spec.loop.dev_fraction, spec.loop.seed)


def test_guard_adopts_examples_that_help_on_dev(tmp_path: Path) -> None:
    # a dev split with at least 10 items of each label (80 items, 70 % of the audit split in dev)
    out, store, requests = _audit(tmp_path, n_per_type=40, dev_fraction=0.7)
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert run.info["active_iteration"] >= 2
    assert "adopted" in run.info["guard_2"] and "not adopted" not in run.info["guard_2"]
    assert "significantly better" in run.info["guard_2"]
    m = store.metrics(run.id)
    assert m[2]["dev"].balanced_accuracy > m[1]["dev"].balanced_accuracy
    assert any(sum(x["role"] == "assistant" for x in b["messages"]) for b in requests)
    assert "ICL examples helped on the held-out split" in out or "Unclear whether" in out


def _dev_rooms(tmp_path: Path, n_per_type: int, dev_fraction: float) -> tuple[list[str], dict[str, int]]:
    """The dev items' ids as the loop will split them (``write_spec``'s held-out share and seed) and
    each item's kind (``write_dataset``: 0 correct, 1 'Room' wrong answer, 2 plain wrong answer)."""
    from allure.dataset import dev_split, split_heldout
    from allure.models import Item

    rows = [
        json.loads(x) for x in write_dataset(tmp_path / "items.jsonl", n_per_type).read_text().splitlines()
    ]
    items = [
        Item(id=r["uid"], task=r["question"], response=r["answer"], problem_type=r["kind"]) for r in rows
    ]
    splits = split_heldout(items, 0.34, 0)
    dev = sorted(dev_split(items, splits, dev_fraction, 0))
    return dev, {r["uid"]: int(r["uid"].rsplit("-", 1)[1]) % 3 for r in rows}


def _room_regex(ids: list[str]) -> str:
    """A regex matching the user turns of ``ids`` (their question names room ``j + 40 t + 3``)."""
    rooms = [int(i.rsplit("-", 1)[1]) + 40 * (i.startswith("2step")) + 3 for i in ids]
    return r"path to room (?:" + "|".join(str(r) for r in rooms) + r")\?"


def _refused(store: RunStore) -> tuple[str, dict]:
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert run.info["active_iteration"] == 1, run.info
    m = store.metrics(run.id)
    # the refused memory is worse on the held-out split (the claim read afterwards)
    assert m[2]["heldout"].balanced_accuracy < m[1]["heldout"].balanced_accuracy
    return run.info["guard_2"], m


def test_guard_refuses_a_rise_on_a_dev_split_too_small_to_tell(tmp_path: Path) -> None:
    """Issue 34's HaluEval case: a dev split holding a handful of one label, a memory that rises on
    dev and is worse on held-out: the old rule ("not worse on dev") adopted it; it is refused."""
    dev, kind = _dev_rooms(tmp_path, 30, 0.3)
    out, store, _ = _audit(tmp_path, "--examples-right", _room_regex(dev), max_iterations=2)
    reason, m = _refused(store)
    assert m[2]["dev"].balanced_accuracy > m[1]["dev"].balanced_accuracy  # the rise on dev
    n_pos = sum(1 for i in dev if kind[i] == 0)
    assert n_pos < 10 and f"dev holds {n_pos} '1' item" in reason and "cannot detect" in reason
    assert "keeps iteration 1 (zero-shot)" in reason and "not adopted" in out


def test_guard_refuses_a_noisy_rise_that_is_not_significant(tmp_path: Path) -> None:
    """Enough of each label in dev, but the examples help on two dev items only (and hurt on every
    held-out item): the one-sided test does not find the rise significant, zero-shot stays."""
    dev, kind = _dev_rooms(tmp_path, 40, 0.7)
    assert min(sum(1 for i in dev if kind[i] == k) for k in (0, 1)) >= 10  # the split has power
    right = [i for i in dev if kind[i] != 1] + [i for i in dev if kind[i] == 1][:2]
    out, store, _ = _audit(
        tmp_path, "--examples-right", _room_regex(right), n_per_type=40, dev_fraction=0.7, max_iterations=2
    )
    reason, m = _refused(store)
    assert m[2]["dev"].balanced_accuracy > m[1]["dev"].balanced_accuracy  # a rise, not significant
    # the guard tests at the memory's share of the run's alpha (issue 41); two items fixed: p >= 0.25
    assert "a rise not significant at alpha" in reason and "the memory's share of the run's 0.05" in reason
    p = float(reason.split("one-sided p = ")[1].split(",")[0])
    assert p >= 0.25, reason
