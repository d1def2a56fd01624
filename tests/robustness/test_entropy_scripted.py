"""``allure study entropy`` against the scripted server, scripted to answer differently on odd seeds for some items.

With ``--vary-on``, a sampled request with an odd seed for a 2stepPath item gets the opposite grade
and a longer answer; every other item gets one answer whatever the seed. With M = 4 samples (seeds
0..3) those items split 2/2 into two clusters (H = 1 bit, R = 0.5) and the others form one (H = 0,
R = 1); a re-run sends nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from allure.robustness import cluster_samples, entropy_study
from allure.studies import load_study
from tests.cli_run import run_cli as _cli
from tests.robustness.specs import VARY, robust_project, robust_spec


@pytest.mark.integration
def test_entropy_finds_the_items_whose_samples_disagree(tmp_path: Path) -> None:
    with robust_project(tmp_path, *VARY) as (srv, spec):
        proj = tmp_path / "proj"
        lines: list[str] = []
        study = entropy_study(proj, spec=spec, samples=4, temperature=0.8, say=lines.append)
        assert study.kind == "entropy" and len(study.arms) == 8 and study.n_items == 12
        assert any("not yet stored" in line for line in lines)
        sent = srv.requests()
        assert len(sent) == study.calls == 8 * 12
        bodies = [r["body"] for r in sent]
        assert {b["seed"] for b in bodies} == {0, 1, 2, 3} and {b["temperature"] for b in bodies} == {0.8}
        r = study.entropy
        assert r is not None and r.samples == 4 and [v.q for v in r.prompts] == [1]
        two_step = {f"2stepPath-{j}" for j in range(6)}
        for it in r.items:
            if it.item_id in two_step:
                assert it.entropy["grader"] == pytest.approx(1.0) and it.robustness == pytest.approx(0.5)
                assert it.band == "moderately robust" and sorted(it.clusters["grader"]) == [0, 0, 1, 1]
            else:
                assert it.entropy["grader"] == 0.0 and it.robustness == 1.0 and it.band == "very robust"
        mem = next(c for c in r.conditions if c.condition == "memory")
        assert mem.robustness == pytest.approx((6 * 0.5 + 6 * 1.0) / 12)
        assert mem.bands == {"moderately robust": 6, "very robust": 6}
        assert mem.clusterers == {"hdbscan": 6, "identical": 6}
        assert len(r.least_robust) == 10 and all(it.item_id in two_step for it in r.least_robust)
        # with and without memory R is the same on every item: no spread, no test
        (cmp,) = r.comparisons
        assert (cmp.a, cmp.b, cmp.n, cmp.test.t) == ("zero-shot", "memory", 12, None)
        df = r.to_pandas()
        assert len(df) == 24 and set(df.columns) >= {"item_id", "condition", "H[grader]", "R", "S", "band"}
        out = proj / ".allure" / "studies" / study.id
        for f in ("study.json", "study.md", "entropy.png"):
            assert (out / f).stat().st_size > 0, f
        assert "## Semantic entropy (M = 4" in (out / "study.md").read_text()
        assert json.loads((out / "study.json").read_text())["entropy"]["temperature"] == 0.8
        again = entropy_study(proj, spec=spec, samples=4, temperature=0.8)
        assert again.id == study.id and again.calls == 0 and len(srv.requests()) == len(sent)
        assert load_study(proj, study.id).entropy == again.entropy
        # Two more samples are new calls only for them; a study on the memory alone compared with
        # the first on per-item R: the items agree, so no spread.
        more = entropy_study(
            proj, spec=spec, samples=6, temperature=0.8, conditions=["memory"], against=[study.id]
        )
        assert more.calls == 2 * 12 and len(srv.requests()) == len(sent) + 24
        assert more.entropy is not None and [c.a for c in more.entropy.comparisons] == [f"{study.id} memory"]
        # three seeds odd of 6 on the varied items: still 2 clusters of 3 -> H = 1
        varied = [it for it in more.entropy.items if it.item_id in two_step]
        assert len(varied) == len(two_step) and all(
            it.entropy["grader"] == pytest.approx(1.0) for it in varied
        )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--samples", "1"], "at least 2 samples per prompt"),
        (["--temperature", "0"], "at temperature 0"),
        (["--conditions", "both"], "unknown condition"),
    ],
)
def test_bad_entropy_options_exit_2_and_write_nothing(tmp_path: Path, args: list[str], needle: str) -> None:
    spec = robust_spec(tmp_path, "http://127.0.0.1:9/v1")
    res = _cli(tmp_path, "study", "entropy", "--spec", str(spec), *args)
    assert res.returncode == 2 and needle in res.stderr and "fix:" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "proj" / ".allure").exists()


def test_cluster_samples() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert cluster_samples(np.stack([a, a, a])) == ([0, 0, 0], "identical")
    assert cluster_samples(np.stack([a, b])) == ([0, 1], "kmeans")
    labels, how = cluster_samples(np.stack([a, a, b, b]))
    assert how == "hdbscan" and labels[0] == labels[1] != labels[2] == labels[3]
    labels, how = cluster_samples(np.stack([a, a, a, b, b]), "kmeans")
    assert how == "kmeans" and labels[:3] == [labels[0]] * 3 and labels[3] == labels[4] != labels[0]
