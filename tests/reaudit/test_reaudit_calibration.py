"""A re-audit applies ``[evaluator] calibration`` to the labels its gate reads (scripted server with
a label-prior lean: without calibration it passes every item; calibrated, its own grades return)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import start_scripted_server
from tests.reaudit.helpers import write_reaudit_spec

pytestmark = pytest.mark.integration


def _labels(tmp: Path, *server: str, calibration: str = "none") -> tuple[dict[str, object], str]:
    tmp.mkdir()
    srv = start_scripted_server(tmp, *server)
    try:
        spec = write_reaudit_spec(tmp, srv.base_url, gate="[gate]\n[gate.min]\naccuracy = 0.0\n")
        spec.write_text(
            spec.read_text().replace("timeout_s = 10\n", f'timeout_s = 10\ncalibration = "{calibration}"\n')
        )
        res = run_cli(
            tmp, "reaudit", str(spec), "--project", str(tmp), "--json", str(tmp / "r.json"), project=False
        )
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    return json.loads((tmp / "r.json").read_text())["labels"], res.stderr


def test_a_reaudit_calibrates_the_labels_its_gate_reads(tmp_path: Path) -> None:
    graded, _ = _labels(tmp_path / "plain")
    assert set(graded.values()) == {0, 1}
    leaned, _ = _labels(tmp_path / "leaned", "--lean", "0.25")
    assert set(leaned.values()) == {1}
    calibrated, err = _labels(tmp_path / "cal", "--lean", "0.25", calibration="contextual")
    assert calibrated == graded
    assert (
        f"calibration (contextual): {sum(v == 0 for v in graded.values())} of {len(graded)} labels changed"
        in err
    )
