"""No example sees itself, and the held-out split is read once (issue 41 items 3 and 4), in the loop
graph compiled with an in-memory saver, the replay evaluator and a memory that persists across runs.

Run 1 mines the audit split's mistakes into the memory; run 2, on the same items with another seed,
holds out some of the items run 1 mined. Without the rule, those held-out items would be prompted
with their own corrected label.
"""

from __future__ import annotations

import re
from pathlib import Path

from allure.report import read_report
from tests.graphs.test_graph_unit import FakeMemory, _replay_run


def _own(store: object, rid: str, memory: FakeMemory) -> tuple[int, int]:
    """(prompts checked that carry examples, prompts that carry an example mined from their own item)."""
    by_id = {ex.id: ex for ex in memory.all()}
    checked = own = 0
    for it in (0, 1, 2):
        for item_id, v in store.verdicts(rid, it).items():  # type: ignore[attr-defined]
            if v.icl_ids:
                checked += 1
                own += any(by_id[e].item_id == item_id for e in v.icl_ids if e in by_id)
    return checked, own


def test_no_item_ever_gets_its_own_example_across_two_runs(tmp_path: Path) -> None:
    memory = FakeMemory()
    lines: list[str] = []
    _, store, _, rid1, _ = _replay_run(
        tmp_path,
        auto=True,
        max_iterations=2,
        memory=memory,
        n_per_type=30,
        guard=False,
        stop_when_no_gain=False,
    )
    mined = {ex.item_id for ex in memory.all()}
    assert len(mined) >= 10  # run 1's audit mistakes entered the memory
    assert _own(store, rid1, memory)[1] == 0
    _, store, _, rid2, _ = _replay_run(
        tmp_path, auto=True, max_iterations=1, memory=memory, lines=lines, n_per_type=30, seed=7, guard=False
    )
    held2 = {i for i, s in store.splits(rid2).items() if s == "heldout"}
    assert mined & held2  # run 2 holds out items run 1 mined: the case the rule is for
    checked, own = _own(store, rid2, memory)
    assert checked >= 40 and own == 0
    # every such held-out item was withheld its example, and the report counts them
    report = read_report(tmp_path / "run" / "report.json")
    last = report.iterations[-1]
    assert last.memory_size and last.own_excluded["heldout"] == len(mined & held2)
    md = (tmp_path / "run" / "report.md").read_text()
    assert (
        f"not shown the example mined from themselves (withheld by retrieval): pass 1: {len(mined & held2)} held-out"
        in md
    )
    assert any(f"{len(mined & held2)} held-out and" in x and "not shown" in x for x in lines)


def test_status_lines_read_the_decision_data_and_never_held_out(tmp_path: Path) -> None:
    """While the loop runs, a pass's status shows its out-of-fold objective; no held-out figure is
    printed; report.md keeps each pass's held-out figures, marked for the record."""
    lines: list[str] = []
    _replay_run(tmp_path, auto=True, max_iterations=2, lines=lines, guard=False, stop_when_no_gain=False)
    scored = [x for x in lines if "out of fold balanced accuracy" in x]
    assert [x.split(":")[0] for x in scored] == ["iteration 1", "iteration 2"]
    assert re.search(r"out of fold balanced accuracy \d\.\d{3} over \d+ audit items", scored[0])
    figures = [x for x in lines if re.search(r"held-out[^,;]*\d\.\d", x)]
    assert lines and not figures, figures
    md = (tmp_path / "run" / "report.md").read_text()
    assert (
        "## Held-out split (never enters memory; each pass's figures for the record: no decision read them)"
        in md
    )
