"""The demo dataset shipped inside the package: a stratified CogEval sample.

Built by ``scripts/make_demo_dataset.py``; origin, licence and sampling are in
``allure/data/README.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from allure.dataset._spec import DatasetSpec
from allure.errors import DatasetError

DEMO_FILE = "cogeval_demo.jsonl.gz"
"""File name of the demo dataset inside ``allure/data``."""


def demo_dataset_path() -> Path:
    """The path of the shipped demo dataset (``allure/data/cogeval_demo.jsonl.gz``).

    Raises:
        DatasetError: the file is not installed.
    """
    path = Path(str(resources.files("allure").joinpath("data", DEMO_FILE)))
    if not path.is_file():
        raise DatasetError(
            "the demo dataset is not installed",
            where=str(path),
            fix="reinstall allure (pip install --force-reinstall allure), or from a checkout run "
            "python scripts/make_demo_dataset.py",
        )
    return path


def demo_spec() -> DatasetSpec:
    """A :class:`DatasetSpec` that reads the demo dataset with the CogEval adapter."""
    return DatasetSpec(path=str(demo_dataset_path()), format="cogeval")


def demo_audit_spec() -> DatasetSpec:
    """The items ``allure audit --demo`` grades: 100 short responses drawn task by task.

    Sized for the embedded model on a laptop CPU: responses of at most 300 characters, and whole
    tasks (several generators' responses to one task text), so that llama.cpp's prompt cache
    serves a repeated task after its first call.
    """
    return demo_spec().model_copy(
        update={"limit": 100, "max_response_chars": 300, "sample_by": "task", "seed": 0}
    )


def demo_audit(evaluator: str = "local") -> dict[str, Any]:
    """The audit spec of ``allure audit --demo`` (as a dict for :func:`allure.config.parse_spec`).

    The items of :func:`demo_audit_spec`, two passes, and the same 8 sampled memory examples in
    every prompt, so one shared ICL block is computed once and then served from the prompt cache.
    """
    return {
        "name": "demo",
        "dataset": demo_audit_spec().model_dump(mode="json", exclude_defaults=True),
        "evaluator": {"kind": evaluator},
        "memory": {"retrieval": {"kind": "sample", "x": 8, "seed": 0}},
        "loop": {"max_iterations": 2, "heldout_fraction": 0.4, "seed": 0},
    }
