"""A study of your own arms (``kind = "arms"``): each compared with a reference arm, with the shared
record and files and ``comparison.png`` (each arm's change against the reference).

From Python the arms are :class:`~allure.studies.ArmSpec` values; from the command line, a JSON file
of them: ``allure study run arms --param file=arms.json [--param reference=NAME]``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationError

from allure.errors import StudyError, closest_name
from allure.studies._params import ParamType, read_params
from allure.studies._protocol import ArmLabels, StudyContext
from allure.studies._record import ArmSpec, StudyRecord
from allure.studies._write import comparison_png, study_markdown, write_study


@dataclass
class ArmsStudy:
    """Arms you define (validated selection's candidates, a benchmark's conditions), as a
    :class:`~allure.studies.Study`; the reference arm is ``reference`` or the first arm."""

    kind: ClassVar[str] = "arms"
    result: ClassVar[type[StudyRecord]] = StudyRecord
    params: ClassVar[dict[str, ParamType]] = {"file": "text", "reference": "text"}
    arm_list: list[ArmSpec]
    reference: str | None = None
    extra: object = None
    """Anything else that tells two such studies apart (part of the id)."""

    @classmethod
    def build(cls, context: StudyContext) -> ArmsStudy:
        """From ``--param file=ARMS.json`` (a JSON list of arms) and ``--param reference=NAME``."""
        own = read_params(cls.kind, context.params, cls.params)
        if "file" not in own:
            raise StudyError(
                "the arms study needs its arms",
                where="allure study run arms",
                fix="pass --param file=ARMS.json, a JSON list of arms such as "
                '[{"name": "zero-shot", "example_ids": []}, {"name": "full", "policy": {"kind": "all"}}]',
            )
        return cls(read_arms(Path(own["file"])), own.get("reference"))

    def arms(self) -> list[ArmSpec]:
        return self.arm_list

    def reference_arm(self) -> str:
        return self.reference or self.arm_list[0].name

    def definition(self) -> object:
        return self.extra

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        return record

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        text = study_markdown(result, plots=["comparison.png"])
        return write_study(result, folder, text, {"comparison.png": comparison_png(result, "Arms")})


def read_arms(path: Path) -> list[ArmSpec]:
    """The arms in the JSON file ``path`` (a list of :class:`ArmSpec` objects).

    Raises:
        StudyError: No such file, bad JSON (with its line), or an arm that is not an ``ArmSpec``
            (with its position and field).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(
            f"cannot read the arms ({exc.strerror})", where=str(path), fix="pass an existing JSON file"
        ) from exc
    except json.JSONDecodeError as exc:
        raise StudyError(
            f"not JSON: {exc.msg}", where=f"{path}:{exc.lineno}", fix="write the arms as a JSON list"
        ) from exc
    if not isinstance(data, list) or not data:
        raise StudyError(
            "the arms are not a non-empty JSON list", where=str(path), fix="write a list of arms"
        )
    arms = []
    for n, arm in enumerate(data):
        _check_keys(path, n, arm)
        try:
            arms.append(ArmSpec.model_validate(arm))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "(the arm)"
            raise StudyError(
                f"arm {n + 1}: {err['msg']}",
                where=f"{path}, arm {n + 1}, field '{field}'",
                fix="give each arm a name and ArmSpec fields (example_ids, policy, prompt, ...)",
            ) from None
    return arms


def _check_keys(path: Path, n: int, arm: object) -> None:
    """Refuse an arm that is not an object, or has a key :class:`ArmSpec` does not know."""
    if not isinstance(arm, dict):
        raise StudyError(
            f"arm {n + 1} is not an object", where=f"{path}, arm {n + 1}", fix='e.g. {"name": "full"}'
        )
    valid = list(ArmSpec.model_fields)
    for key in arm:
        if key not in valid:
            guess = closest_name(key, valid)
            raise StudyError(
                f"unknown key {key!r} in arm {n + 1}",
                where=f"{path}, arm {n + 1}, field '{key}'",
                fix=(f"did you mean `{guess}`? " if guess else "") + f"valid keys: {', '.join(valid)}",
            )
