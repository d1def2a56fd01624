"""A bundle read as data: its settings as an audit spec, its examples and its calibration."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.judge._bundle import EXAMPLES, PROMPTS, BundleOnDisk
from allure.judge._fixed import FittedValues
from allure.labels import Label
from allure.models import IclExample

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.memory import RetrievalPolicy
    from allure.passes.readout import LearnedReadout

PROMPT_FIELDS = ("task", "gold_answers", "response", "response_b", "rubric")
"""Item fields a user template may show (the ``{labels}`` placeholder comes from the bundle)."""


@dataclass(frozen=True)
class JudgeBundle:
    """An exported judge, read from its folder and checked (:func:`load_judge`)."""

    disk: BundleOnDisk
    base_url: str | None = None
    """Where the evaluator is reached now, when not where it was audited (not part of the judge:
    the cache key is the model and its parameters, so the labels are the same)."""

    def at(self, base_url: str | None) -> JudgeBundle:
        """This judge sent to another endpoint of the same model (``--base-url``)."""
        from dataclasses import replace

        return self if base_url is None else replace(self, base_url=base_url)

    @property
    def id(self) -> str:
        """The bundle id (its content hash): the version of this judge."""
        return self.disk.id

    @property
    def folder(self) -> Path:
        return self.disk.folder

    @property
    def config(self) -> dict[str, Any]:
        """``judge.toml`` as a dict."""
        return self.disk.config

    @cached_property
    def card(self) -> dict[str, Any]:
        """``card.json``: what this judge was measured on (run, data, held-out claim, guard)."""
        return dict(json.loads(self.disk.files.get("card.json", "{}")))

    @property
    def label_set(self) -> list[Label]:
        return list(self.config["labels"]["label_set"])

    @property
    def positive_label(self) -> Label | None:
        return self.config["labels"].get("positive_label")

    @cached_property
    def examples(self) -> list[IclExample]:
        """The adopted memory version's examples (``examples.jsonl``), sorted by id."""
        text = self.disk.files.get(EXAMPLES, "")
        return [IclExample.model_validate_json(line) for line in text.splitlines() if line.strip()]

    @cached_property
    def policy(self) -> RetrievalPolicy:
        from allure.memory import RetrievalPolicy

        return RetrievalPolicy.model_validate(self.config["retrieval"])

    @cached_property
    def fitted(self) -> FittedValues:
        """The calibration this judge applies, with its fitted values."""
        return FittedValues.from_toml(self.config["calibration"])

    @cached_property
    def readout(self) -> LearnedReadout | None:
        """The learned read-out applied last (``readout.json``: the audited pass's current one, its refit
        after an approval if any; ``None``: none)."""
        from allure.judge._readout import READOUT, VOTERS, fixed_readout

        if "readout" not in self.config:
            return None
        text = self.disk.files.get(READOUT)
        if text is None:
            raise JudgeError(
                f"judge.toml names a read-out but the bundle has no {READOUT}",
                where=f"{self.folder}/judge.toml, table 'readout'",
                fix="export the judge again with `allure judge export`",
            )
        return fixed_readout(text, self.label_set, str(self.folder), self.disk.files.get(VOTERS))

    @cached_property
    def user_fields(self) -> set[str]:
        """The item fields the user template shows."""
        from string import Formatter

        text = self.disk.files[f"{PROMPTS}/user.txt"]
        return {name for _, name, _, _ in Formatter().parse(text) if name} & set(PROMPT_FIELDS)

    def audit_spec(self, data: Path, columns: dict[str, Any], fmt: str = "auto") -> AuditSpec:
        """The judge's settings as the audit spec the evaluator is opened with (reading ``data``)."""
        from allure.config import AuditSpec

        ev = {**self.config["evaluator"], "prompt": str(self.folder / PROMPTS)}
        if self.base_url is not None:
            ev["base_url"] = self.base_url
        ds = self.config["dataset"]
        spec = AuditSpec.model_validate(
            {
                "name": self.config.get("name", "judge"),
                "label_set": self.label_set,
                "positive_label": self.positive_label,
                "label_synonyms": self.config["labels"].get("synonyms", {}),
                "dataset": {
                    "path": str(data),
                    "format": fmt,
                    "columns": columns,
                    "gold_separator": ds.get("gold_separator", "||"),
                    "swapped_labels_in": ds.get("swapped_labels_in", "original"),
                },
                "evaluator": ev,
                "memory": {"retrieval": self.config["retrieval"]},
            }
        )
        # the exported positive label stands (a prompt folder is not recognised as "pairwise")
        return spec.model_copy(update={"positive_label": self.positive_label})

    def __repr__(self) -> str:
        return f"JudgeBundle({self.id!r}, run={self.card.get('run_id')!r}, examples={len(self.examples)})"
