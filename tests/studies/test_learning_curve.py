"""``allure study run learning-curve``: the loop's read-out refitted on the first n mined audit items
of a finished audit run (scripted server on 127.0.0.1, real store and Chroma memory, the CLI in a
subprocess). It sends no call (the server is stopped before it runs, and its request count does not
move), never fits on a held-out or dev item (asserted on the record against the run store), skips a
size above the pool and says so, and a second run gives the same id and the same curve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.dataset import dev_split
from allure.store import RunStore, project_db_path
from allure.studies import load_study
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration

PARAMS = ["--param", "sizes=8,16,500", "--param", "repeats=2"]


def _audited(tmp: Path, *server: str, approve: bool = True) -> str:
    """An audit run after its zero-shot pass, its mined candidates approved (finished) or left for
    review (paused, the memory empty); its id. ``server``: the scripted server's options."""
    srv = start_scripted_server(tmp, *server)
    try:
        spec = write_spec(tmp, srv.base_url, max_iterations=1)
        write_dataset(tmp / "items.jsonl", n_per_type=30)
        res = run_cli(tmp, "audit", str(spec), *(["--auto-approve"] if approve else []), timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
        sent = len(srv.requests())
    finally:
        srv.stop()
    assert sent > 0
    store = RunStore(project_db_path(tmp / "proj"))
    try:
        return store.list_runs()[-1].id
    finally:
        store.close()


def test_the_learning_curve_reads_stored_calls_only_and_never_fits_held_out_items(tmp_path: Path) -> None:
    from allure.config import AuditSpec
    from allure.studies import learning_curve

    run_id = _audited(tmp_path)
    # the server is gone: any call the study tried to send would fail it
    res = run_cli(tmp_path, "study", "run", "learning-curve", "--from-run", run_id, *PARAMS, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    proj = tmp_path / "proj"
    (folder,) = (proj / ".allure" / "studies").iterdir()
    record = load_study(proj, folder.name)
    assert record.kind == "learning-curve" and record.status == "done" and record.calls == 0
    assert record.sizes == [8, 16] and record.skipped == [500] and record.repeats == 2  # type: ignore[attr-defined]
    assert "Sizes 500 skipped" in " ".join(record.findings)
    assert [p.size for p in record.curve] == [8, 16]  # type: ignore[attr-defined]
    assert len(record.curve) == 2  # type: ignore[attr-defined]
    assert all(p.mean is not None and p.p_holm is not None for p in record.curve)  # type: ignore[attr-defined]
    assert [a.arm.name for a in record.arms] == ["zero-shot", "n=8 #0", "n=8 #1", "n=16 #0", "n=16 #1"]

    store = RunStore(project_db_path(proj))
    try:
        splits, items = store.splits(run_id), store.items(run_id)
        spec = AuditSpec.model_validate(store.get_run(run_id).spec)
    finally:
        store.close()
    held = {i for i, s in splits.items() if s == "heldout"}
    # the items the loop mined: every audit item when it cross-fits ([loop] folds, the default)
    dev = dev_split(items, splits, spec.loop.dev_fraction, spec.loop.seed, spec.loop.folds)
    mined = {i for i, s in splits.items() if s == "audit"} - dev
    fits = record.fits  # type: ignore[attr-defined]
    assert len(fits) == 4 and held and mined and spec.loop.folds == 5 and not dev
    for fit in fits:
        assert (
            len(fit.fit_ids) == fit.size and set(fit.fit_ids) <= mined and not set(fit.fit_ids) & (held | dev)
        )
    small = {f.repeat: f.fit_ids for f in fits if f.size == 8}
    large = {f.repeat: f.fit_ids for f in fits if f.size == 16}
    assert all(large[r][:8] == small[r] for r in (0, 1)) and small[0] != small[1]  # nested review orders
    assert record.n_items == len(held)

    text = (folder / "study.md").read_text()
    assert "## Learning curve (held-out)" in text and "| 8 | 2 |" in text and "skipped" in text
    assert (folder / "learning_curve.png").stat().st_size > 0

    again = learning_curve(proj, from_run=run_id, sizes="8,16,500", repeats=2)
    assert again.id == record.id and again.calls == 0
    assert again.curve == record.curve and again.fits == record.fits  # type: ignore[attr-defined]
    first = json.loads((folder / "study.json").read_text())
    assert first["curve"] == [p.model_dump(mode="json") for p in record.curve]  # type: ignore[attr-defined]


def test_a_learning_curve_needs_a_run_and_good_sizes_not_an_approval(tmp_path: Path) -> None:
    run_id = _audited(tmp_path, approve=False)
    bad = run_cli(tmp_path, "study", "run", "learning-curve", "--from-run", run_id, "--param", "sizes=8,x")
    assert bad.returncode == 2 and "--param sizes" in bad.stderr and "sizes=25,50,100,200" in bad.stderr
    split = run_cli(tmp_path, "study", "run", "learning-curve", "--from-run", run_id, "--split", "all")
    assert split.returncode == 2 and "held-out split" in split.stderr
    feats = run_cli(
        tmp_path, "study", "run", "learning-curve", "--from-run", run_id, "--param", "features=knn"
    )
    assert feats.returncode == 2 and "--param features" in feats.stderr and "z,vote" in feats.stderr
    spec = run_cli(tmp_path, "study", "run", "learning-curve", "--spec", str(tmp_path / "audit.toml"))
    assert spec.returncode == 2 and "--from-run RUN" in spec.stderr
    assert not (tmp_path / "proj" / ".allure" / "studies").exists()  # nothing half-written
    # nothing approved yet (the memory is empty): the curve still reads the run's labelled items, on z alone
    res = run_cli(tmp_path, "study", "run", "learning-curve", "--from-run", run_id, "--param", "sizes=8")
    assert res.returncode == 0, res.stdout + res.stderr
    (folder,) = (tmp_path / "proj" / ".allure" / "studies").iterdir()
    record = load_study(tmp_path / "proj", folder.name)
    assert record.memory_size == 0 and record.features == ["z"] and record.calls == 0  # type: ignore[attr-defined]
    assert [f.size for f in record.fits] == [8, 8, 8]  # type: ignore[attr-defined]


def test_the_curves_zero_shot_is_the_judges_parsed_labels_not_the_loops_read_out(tmp_path: Path) -> None:
    """The zero-shot pass's stored labels changed by a post-processing step (as the loop's read-out or
    calibration stores them, the parsed label kept beside): the curve's zero-shot arm and its fits
    still read the labels the judge parsed, so the curve is the one measured before the change. The
    scripted judge sends no label probabilities: the feature ``z`` of every fit is its label too."""
    from allure.studies import learning_curve

    run_id = _audited(tmp_path, "--no-logprobs")
    proj = tmp_path / "proj"
    before = learning_curve(proj, from_run=run_id, sizes="8,16", repeats=2, name="before")
    store = RunStore(project_db_path(proj))
    try:
        zero = int(store.get_run(run_id).info["zero_shot_iteration"])
        parsed = store.verdicts(run_id, zero)
        assert parsed and all(v.label_probs is None and v.prob_positive is None for v in parsed.values())
        flipped = {i: 1 - v.label for i, v in parsed.items() if v.label in (0, 1)}
        store.set_verdict_labels(run_id, zero, flipped)  # what a read-out that flips every label stores
        stored = store.verdicts(run_id, zero)
        held = [i for i, s in store.splits(run_id).items() if s == "heldout"]
        refs = store.reference_labels(run_id)
    finally:
        store.close()
    assert {i: v.raw_label for i, v in stored.items() if i in flipped} == {
        i: parsed[i].label for i in flipped
    }
    assert {i: v.label for i, v in stored.items() if i in flipped} == flipped
    after = learning_curve(proj, from_run=run_id, sizes="8,16", repeats=2, name="after")

    def right(labels: dict[str, object]) -> int:
        return sum(labels.get(i) == refs[i] for i in held if refs.get(i) is not None)

    # the stored (flipped) labels would score otherwise: the comparison below can fail
    assert right({i: v.label for i, v in stored.items()}) != right({i: v.label for i, v in parsed.items()})
    zero_before, zero_after = before.arms[0], after.arms[0]
    assert zero_before.arm.name == zero_after.arm.name == "zero-shot"
    assert zero_after.metrics == zero_before.metrics  # the judge's parsed labels, not the stored ones
    assert zero_after.metrics.n_parsed and zero_after.metrics.accuracy is not None
    assert zero_after.metrics.accuracy * zero_after.metrics.n_parsed == pytest.approx(
        right({i: v.label for i, v in parsed.items()})
    )
    assert after.fits == before.fits  # type: ignore[attr-defined]  # fitted on z from the parsed labels
    assert after.curve == before.curve  # type: ignore[attr-defined]
