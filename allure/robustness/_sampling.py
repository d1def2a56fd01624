"""What the sampling studies (entropy, consistency) share: the checks of M samples at a temperature,
the evaluator set to sample, and each arm's raw outputs read back from the run store."""

from __future__ import annotations

from pathlib import Path

from allure.errors import StudyError
from allure.store import RunStore, project_db_path
from allure.studies import StudyRecord, StudySource


def check_sampling(samples: int, temperature: float, flag: str = "--samples") -> None:
    """M (or K) >= 2 samples at a temperature above 0.

    Raises:
        StudyError: Otherwise.
    """
    if samples < 2:
        raise StudyError(
            f"{flag} {samples}: at least 2 samples per prompt are needed",
            where=f"option {flag}",
            fix=f"pass {flag} 5 (at least 2)",
        )
    if not temperature > 0:
        raise StudyError(
            f"--temperature {temperature}: at temperature 0 the samples are one answer repeated",
            where="option --temperature",
            fix="pass a sampling temperature above 0, e.g. --temperature 0.7",
        )


def sample_at(src: StudySource, temperature: float) -> None:
    """Set the source's evaluator to sample at ``temperature`` (the embedded one not deterministic)."""
    ev = src.spec.evaluator
    local = ev.local.model_copy(update={"deterministic": False})
    src.spec = src.spec.model_copy(
        update={"evaluator": ev.model_copy(update={"temperature": temperature, "local": local})}
    )


def raw_outputs(project: Path, study: StudyRecord, src: StudySource) -> dict[str, list[str]]:
    """Arm name -> the raw output of each item (``src.items`` order; empty for an error)."""
    store = RunStore(project_db_path(project))
    try:
        outputs = {}
        for r in study.arms:
            got = store.verdicts(study.id, r.index)
            outputs[r.arm.name] = [(got[it.id].raw_output or "") if it.id in got else "" for it in src.items]
        return outputs
    finally:
        store.close()
