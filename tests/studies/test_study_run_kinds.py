"""Every built-in study kind runs through ``allure study run KIND --param key=value``, and builds the
same study as its own function with the same settings: run from Python afterwards, the study has
the same id and sends no call (it is resumed from the store)."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from allure.studies import (
    ArmSpec,
    ArmsStudy,
    StudyOptions,
    StudyRecord,
    load_study,
    open_source,
    run_study,
    study_kind,
    study_kinds,
)
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server
from tests.robustness.specs import paired_spec

ARMS = [{"name": "zero-shot", "example_ids": []}, {"name": "memory", "policy": {"kind": "all"}}]


def _arms(proj: Path, spec: Path) -> StudyRecord:
    src, mem, run = open_source(proj, {"spec": spec})
    return run_study(proj, src, mem, ArmsStudy([ArmSpec.model_validate(a) for a in ARMS]), **run)


def _by_function(kind: str) -> Callable[[Path, Path], StudyRecord]:
    """The kind's own function with the settings the CLI run below is given as --param."""
    from allure.robustness import consistency_study, entropy_study, request_study, sensitivity_study
    from allure.studies import ablation, sweep

    return {
        "ablation": lambda p, s: ablation(p, spec=s, by="failure_mode"),
        "sweep": lambda p, s: sweep(p, spec=s, sizes="0,1", repeats=1),
        "arms": _arms,
        "sensitivity": lambda p, s: sensitivity_study(p, spec=s, rephrasings=2),
        "entropy": lambda p, s: entropy_study(
            p, spec=s, samples=2, temperature=0.5, conditions=["zero-shot"]
        ),
        "consistency": lambda p, s: consistency_study(p, spec=s, samples=2, pair_column="pair"),
        "request": lambda p, s: request_study(p, spec=s, zero_shot=True),
    }[kind]


PARAMS = {
    "ablation": ["by=failure_mode"],
    "sweep": ["sizes=0,1", "repeats=1"],
    "arms": ["file=arms.json"],
    "sensitivity": ["rephrasings=2"],
    "entropy": ["samples=2", "temperature=0.5", "conditions=zero-shot"],
    "consistency": ["samples=2", "pair_column=pair"],
    "request": ["zero_shot=yes"],
}


STORED = {"learning-curve": ["sizes=8,16", "repeats=2"]}
"""Kinds read from a run's stored calls (no call, a run as their source): run through `allure study
run` and resumed from their function in ``tests/studies/test_learning_curve.py``."""


def test_every_built_in_kind_is_covered() -> None:
    from allure.studies._catalog import BUILTIN

    assert sorted([*PARAMS, *STORED]) == sorted(
        BUILTIN
    )  # (study_kinds() also lists kinds other tests register)
    assert set(BUILTIN) <= set(study_kinds())


@pytest.mark.integration
@pytest.mark.parametrize("kind", sorted(PARAMS))
def test_study_run_runs_every_built_in_kind(tmp_path: Path, kind: str) -> None:
    srv = start_scripted_server(tmp_path)
    try:
        spec = paired_spec(tmp_path, srv.base_url)
        (tmp_path / "arms.json").write_text(json.dumps(ARMS))
        params = [arg for p in PARAMS[kind] for arg in ("--param", p)]
        res = run_cli(tmp_path, "study", "run", kind, "--spec", str(spec), *params, timeout=300)
        assert res.returncode == 0, res.stderr
        proj = tmp_path / "proj"
        (folder,) = (proj / ".allure" / "studies").iterdir()
        record = load_study(proj, folder.name)
        assert record.kind == kind and record.status == "done" and record.calls > 0
        assert isinstance(record, study_kind(kind).result)
        sent = len(srv.requests())
        again = _by_function(kind)(proj, spec)
        assert again.id == record.id and again.calls == 0 and len(srv.requests()) == sent
        assert [a.arm for a in again.arms] == [a.arm for a in record.arms]
    finally:
        srv.stop()


@pytest.mark.parametrize("kind", sorted([*PARAMS, *STORED]))
def test_a_kinds_params_are_its_functions_options(kind: str) -> None:
    """The --param keys a kind declares are the keyword arguments of what builds it, so none is
    refused by the check and then missing from the function (robustness kinds: ``prepare``)."""
    cls = study_kind(kind)
    known: dict[str, Any] = cls.params  # type: ignore[attr-defined]
    prepare = getattr(cls, "prepare", None)
    if prepare is not None:
        taken = [p for p in inspect.signature(prepare).parameters if p != "context"]
        assert sorted(known) == sorted(taken)
    assert known and set(known.values()) <= {"text", "int", "float", "names", "flag"}


@pytest.mark.parametrize("kind", ["consistency", "entropy", "request", "sensitivity"])
def test_a_robustness_functions_own_options_are_its_kinds_params(kind: str) -> None:
    """A robustness function's keyword arguments beyond the shared study options are its kind's
    ``params``: ``run_robust`` hands exactly those to ``prepare`` and the rest to the source."""
    import allure.robustness as robustness

    function = getattr(robustness, f"{kind}_study")
    (typed,) = typing.get_args(typing.get_type_hints(function, include_extras=True)["options"])
    own = typed.__optional_keys__ - StudyOptions.__optional_keys__
    assert own and own == set(study_kind(kind).params)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[{"name": "a", "exmaple_ids": []}]', "did you mean `example_ids`?"),
        ('[{"name": "a"},\n {"name": 3}]', "arm 2"),
        ('[{"name": "a"},\n oops]', "arms.json:2"),
        ("[]", "not a non-empty JSON list"),
        ('["a"]', "arm 1 is not an object"),
    ],
)
def test_a_bad_arms_file_names_the_arm_and_the_field(tmp_path: Path, text: str, needle: str) -> None:
    from allure.errors import StudyError
    from allure.studies._arms import read_arms

    (tmp_path / "arms.json").write_text(text)
    with pytest.raises(StudyError) as info:
        read_arms(tmp_path / "arms.json")
    assert needle in str(info.value) + (info.value.where or "") + (info.value.fix or "")
