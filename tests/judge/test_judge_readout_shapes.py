"""The learned read-out (issue 34 item 3) beyond two labels and for a pairwise judge, in a real audit
(subprocess CLI, scripted server on 127.0.0.1) and in the judge exported from it:

- a lenient three-label judge (``--lenient-logprobs``: it writes the label after its grade) gets a
  multinomial read-out on its per-label log-probabilities that gives the grades back; the bundle
  carries it and labelling gives the run's own labels back, bit for bit;
- a position-biased pairwise judge (``--pairwise-logprobs``) gets a read-out of both orders' log-odds
  (the swapped order's read back to the main order's labels) that names the better response more often
  than either order's own verdicts; the exported judge runs the swapped order to apply it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from allure.config import AuditSpec
from allure.dataset import dev_split
from allure.metrics import objective_value
from allure.models import Verdict
from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import only_run, start_scripted_server
from tests.specs import SCRIPTED

pytestmark = pytest.mark.integration

WORDS = ["good", "ok", "bad"]

LENIENT = (
    """
name = "lenient"
label_set = ["good", "ok", "bad"]
[dataset]
path = "items.jsonl"
[dataset.columns]
id = "id"
task = "instruction"
response = "output"
gold_label = "human"
[evaluator]
"""
    + SCRIPTED
    + """prompt = "{prompt}"
concurrency = 1
calibration = "none"
readout = "logistic"
[memory]
location = "memory"
[loop]
max_iterations = 1
heldout_fraction = 0.34
dev_fraction = 0.5
"""
)
"""A one-pass audit with ``readout = "logistic"`` of ``items.jsonl`` against the scripted server."""


def _lenient_items(path: Path, n: int = 72) -> dict[str, str]:
    """Responses of growing length; the reference is the scripted judge's own grade (see the server)."""
    rows = [
        {"id": f"r{i}", "instruction": f"Summarise text number {i}.", "output": "x" * (8 + i)}
        for i in range(n)
    ]
    for r in rows:
        r["human"] = WORDS[len(r["output"]) % 3]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {r["id"]: r["human"] for r in rows}


def _pairs(path: Path, n: int = 80) -> dict[str, str]:
    """Pairs whose better response is the longer one: 40 % clearly longer (12+ characters), the rest
    by 2 characters (the scripted judge then prefers the response shown first in both orders)."""
    rows = []
    for i in range(n):
        short, diff = 10 + i % 7, (12 + i % 5) if i % 5 < 2 else 2
        a_better = (i * 7) % 3 != 0
        a, b = ("y" * (short + diff), "y" * short) if a_better else ("y" * short, "y" * (short + diff))
        rows.append({"id": f"p{i}", "instruction": f"Question {i}.", "output": a, "output_b": b})
        rows[-1]["winner"] = "A" if a_better else "B"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {r["id"]: r["winner"] for r in rows}


def _export_and_label(tmp: Path, root: Path, items: str, *server_args: str) -> dict[str, dict[str, object]]:
    """``allure judge export`` of the run, then ``allure judge label`` of ``items`` elsewhere: the rows."""
    res = run_cli(root, "judge", "export", "--out", str(tmp / "judge"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "readout.json" in json.loads((tmp / "judge" / "manifest.json").read_text())["files"]
    work = tmp / "elsewhere"
    work.mkdir()
    srv = start_scripted_server(tmp, *server_args)
    try:
        args = ("judge", "label", str(root / items), "--judge", str(tmp / "judge"))
        res = run_cli(work, *args, "--base-url", srv.base_url, "--out", str(work / "v.jsonl"))
    finally:
        srv.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    return {r["id"]: r for r in map(json.loads, (work / "v.jsonl").read_text().splitlines())}


def _not_fit(root: Path, run_id: str) -> tuple[set[str], set[str]]:
    """(the run's mined audit items, its dev and held-out items), as the loop split them."""
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        splits = store.splits(run_id)
        spec = AuditSpec.model_validate(store.get_run(run_id).spec)
        dev = dev_split(store.items(run_id), splits, spec.loop.dev_fraction, spec.loop.seed)
    finally:
        store.close()
    mined = {i for i, s in splits.items() if s == "audit"} - dev
    return mined, set(splits) - mined


def _verdicts(root: Path, run_id: str) -> dict[str, Verdict]:
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        return dict(store.verdicts(run_id, 1))
    finally:
        store.close()


@dataclass
class _Audited:
    """A one-pass audit of :data:`LENIENT`'s shape and what the tests read back from it."""

    root: Path
    refs: dict[str, str]
    readout: dict[str, Any]  # the run's ``readout_1``
    mined: set[str]
    rest: set[str]
    stored: dict[str, Verdict]
    held: list[str]  # the stored items the read-out was not fitted on
    y: list[str]  # their references


def _audit(
    tmp_path: Path, write_items: Callable[[Path], dict[str, str]], spec_text: str, flag: str
) -> _Audited:
    """``allure audit`` of ``write_items``' items in ``tmp_path/audit`` against a server started with ``flag``."""
    root = tmp_path / "audit"
    root.mkdir()
    refs = write_items(root / "items.jsonl")
    srv = start_scripted_server(root, flag)
    try:
        (root / "audit.toml").write_text(spec_text.replace("{url}", srv.base_url))
        res = run_cli(root, "audit", "audit.toml", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    run = only_run(root / "proj")
    mined, rest = _not_fit(root, run.id)
    stored = _verdicts(root, run.id)
    held = sorted(i for i in rest if i in stored)
    return _Audited(root, refs, run.info["readout_1"], mined, rest, stored, held, [refs[i] for i in held])


def test_a_multinomial_read_out_undoes_a_lenient_judge_and_the_bundle_gives_its_labels_back(
    tmp_path: Path,
) -> None:
    a = _audit(tmp_path, _lenient_items, LENIENT.replace("{prompt}", "reference_free"), "--lenient-logprobs")
    root, refs, rec, rest, stored, held, y = a.root, a.refs, a.readout, a.rest, a.stored, a.held, a.y
    assert rec["features"] == ["lp[good]", "lp[ok]", "lp[bad]"] and len(rec["coef"]) == 3
    assert rec["describe"].startswith("multinomial logistic on lp[good], lp[ok], lp[bad]")
    assert set(rec["fit_ids"]) <= a.mined and rest and not set(rec["fit_ids"]) & rest
    parsed = objective_value(y, [stored[i].raw_label or stored[i].label for i in held], labels=WORDS)
    read = objective_value(y, [stored[i].label for i in held], labels=WORDS)
    assert parsed == 0.0 and read == 1.0  # the judge writes the next label every time; the read-out undoes it
    rows = _export_and_label(tmp_path, root, "items.jsonl", "--lenient-logprobs")
    carried = json.loads((tmp_path / "judge" / "readout.json").read_text())["fitted"]
    assert carried["coef"] == rec["coef"] and carried["features"] == rec["features"]
    assert {i: r["label"] for i, r in rows.items()} == {i: v.label for i, v in stored.items()}
    assert len(rows) == len(refs) and sum(r["label"] != r["parsed_label"] for r in rows.values()) == len(refs)


PAIRWISE = LENIENT.replace('label_set = ["good", "ok", "bad"]', 'label_set = ["A", "B"]').replace(
    'gold_label = "human"', 'response_b = "output_b"\ngold_label = "winner"'
)


def test_a_pairwise_read_out_of_both_orders_beats_either_order_and_the_bundle_runs_the_swap(
    tmp_path: Path,
) -> None:
    a = _audit(tmp_path, _pairs, PAIRWISE.replace("{prompt}", "pairwise"), "--pairwise-logprobs")
    rec, stored, held, y = a.readout, a.stored, a.held, a.y
    assert rec["features"] == ["z", "z_swap"] and rec["positive"] == "A"
    assert set(rec["fit_ids"]) <= a.mined and not set(rec["fit_ids"]) & a.rest
    back = {"A": "B", "B": "A"}
    main = [stored[i].raw_label or stored[i].label for i in held]
    swap = [back[str(stored[f"{i}#swapped"].label)] for i in held]
    ba_main = objective_value(y, main, labels=["A", "B"])
    ba_swap = objective_value(y, swap, labels=["A", "B"])
    ba_read = objective_value(y, [stored[i].label for i in held], labels=["A", "B"])
    assert ba_main is not None and ba_swap is not None and ba_read is not None
    assert ba_read == 1.0 and ba_read > max(ba_main, ba_swap) + 0.2, (ba_main, ba_swap, ba_read)
    rows = _export_and_label(tmp_path, a.root, "items.jsonl", "--pairwise-logprobs")
    assert json.loads((tmp_path / "judge" / "readout.json").read_text())["fitted"]["features"] == [
        "z",
        "z_swap",
    ]
    main_ids = {i: v for i, v in stored.items() if not i.endswith("#swapped")}
    assert {i: r["label"] for i, r in rows.items()} == {i: v.label for i, v in main_ids.items()}
