"""The demo dataset shipped inside the package: a stratified CogEval sample.

Built by ``scripts/make_demo_dataset.py``; origin, licence and sampling are in
``allure/data/README.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

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

    Sized for the embedded 1.5B model on 2 CPU cores (it reads about 35 prompt tokens/s):
    responses of at most 300 characters, and whole tasks (several generators' responses to one
    task text), so that llama.cpp's prompt cache serves a repeated task after its first call.
    """
    return demo_spec().model_copy(
        update={"limit": 100, "max_response_chars": 300, "sample_by": "task", "seed": 0}
    )
