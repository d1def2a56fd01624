"""The read-out's polarity variant (``[evaluator] polarity_prompt``): where its prompt folder is,
and the checks at load that need the folder (the spec alone checks ``polarity_labels``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import SpecError

if TYPE_CHECKING:
    from allure.config._spec import AuditSpec
    from allure.prompts import PromptSet

FIELD = "evaluator.polarity_prompt"


def polarity_folder(spec: AuditSpec) -> Path | None:
    """The polarity prompt's folder: as given (the working directory), else beside the spec;
    ``None`` when the spec has none or it is in neither place."""
    name = spec.evaluator.polarity_prompt
    if name is None:
        return None
    here = Path(name)
    beside = Path(spec.base_dir) / name if spec.base_dir else here
    return next((p for p in (here, beside) if p.is_dir()), None)


def load_polarity_prompt(spec: AuditSpec, *, source: str = "<spec>") -> PromptSet | None:
    """The reversed question's prompt set (``None``: no polarity variant).

    Raises:
        SpecError: the folder is missing, a file is missing or malformed, or a template uses
            ``{rubric}`` (the judge's own question) or shows two responses.
    """
    from allure.prompts import load_prompt_set

    name = spec.evaluator.polarity_prompt
    if name is None:
        return None
    folder = polarity_folder(spec)
    where = f"{source}, field '{FIELD}'"
    if folder is None:
        raise SpecError(
            f"polarity prompt folder {name!r} not found",
            where=where,
            fix="give a folder holding system.txt, user.txt and assistant.txt (relative to the spec's folder)",
        )
    prompts = load_prompt_set(str(folder), where=FIELD)
    for part, text in (("system.txt", prompts.system), ("user.txt", prompts.user)):
        if "{rubric}" in text:
            raise SpecError(
                f"{part} of the polarity prompt uses {{rubric}}, the judge's own question",
                where=f"{where} ({folder / part})",
                fix="write the reversed question's rubric into the polarity prompt's text instead",
            )
    if prompts.pairwise:
        raise SpecError(
            "the polarity prompt shows two responses ({response_b})",
            where=f"{where} ({folder / 'user.txt'})",
            fix="the polarity variant is for single-response judges: remove polarity_prompt",
        )
    return prompts


def check_polarity_answers(spec: AuditSpec, parser: Any, pattern: str, *, source: str = "<spec>") -> None:
    """The judge's label ``parser`` (its ``pattern``) reads every label back from the polarity
    prompt's answer format: the reversed answers are parsed as the judge's are (a folder not
    found is left to :func:`check_polarity_prompt`).

    Raises:
        SpecError: a label that does not come back.
    """
    from allure.prompts import load_prompt_set

    folder = polarity_folder(spec)
    if folder is None:
        return
    assistant = load_prompt_set(str(folder), where=FIELD).assistant
    for label in spec.label_set:
        answer = assistant.format(label=label)
        if parser.parse(answer) != label:
            raise SpecError(
                f"the judge's label pattern {pattern!r} cannot read label {label!r} from the polarity "
                f"prompt's answer {answer!r}",
                where=f"{source}, field '{FIELD}' ({folder / 'assistant.txt'})",
                fix="answer in the judge's format (the judge's prompt's assistant.txt)",
            )


def check_polarity_prompt(spec: AuditSpec, *, source: str = "<spec>", strict: bool = True) -> None:
    """:func:`load_polarity_prompt` at load (a stored run's spec, ``strict`` false, skips a folder
    that has moved since)."""
    if spec.evaluator.polarity_prompt is None or (not strict and polarity_folder(spec) is None):
        return
    load_polarity_prompt(spec, source=source)
