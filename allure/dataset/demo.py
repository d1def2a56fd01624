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
    """The items ``allure audit --demo`` grades: 50 short responses drawn task by task.

    Sized for the embedded model on a 2-core CPU (``make demo`` within 7 minutes from a fresh
    clone, install included; each item is asked once per pass at ~2-3 s a call): responses of at
    most 300 characters, and whole tasks (several generators' responses to one task text), so that
    llama.cpp's prompt cache serves a repeated task after its first call. 50 rather than fewer so
    that the audit split (28 items) holds 10 of its rarer label, the least the guard decides on
    (``[loop] guard_min_per_label``).
    """
    return demo_spec().model_copy(
        update={"limit": 50, "max_response_chars": 300, "sample_by": "task", "seed": 0}
    )


def demo_audit(evaluator: str = "local") -> dict[str, Any]:
    """The audit spec of ``allure audit --demo`` (as a dict for :func:`allure.config.parse_spec`).

    The items of :func:`demo_audit_spec`, two passes, and 4 sampled memory examples a prompt: with
    the loop's default cross-fitting (5 folds) a pass has one ICL block per fold and one for the
    held-out items, each prefilled once and then served from the prompt cache (8 examples a block
    cost the second pass 47 s more here, 394 s against 347 s for the whole run).
    """
    return {
        "name": "demo",
        "dataset": demo_audit_spec().model_dump(mode="json", exclude_defaults=True),
        "evaluator": {"kind": evaluator},
        "memory": {"retrieval": {"kind": "sample", "x": 4, "seed": 0}},
        "loop": {"max_iterations": 2, "heldout_fraction": 0.4, "seed": 0},
    }
