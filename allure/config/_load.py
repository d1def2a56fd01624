"""Reading an audit spec: TOML file -> dict -> :class:`AuditSpec`, every error naming its source,
line and field; and the checks that need more than the spec (the label pattern against the prompt set)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from allure.config._messages import bool_error, bool_for_number, spec_error
from allure.config._polarity import check_polarity_answers, check_polarity_prompt
from allure.config._spec import AuditSpec
from allure.errors import AllureError, SpecError
from allure.labels import default_label_pattern
from allure.records import check_file

if TYPE_CHECKING:
    pass


def parse_spec(
    data: dict[str, Any],
    *,
    source: str = "<spec>",
    base_dir: Path | None = None,
    strict: bool = True,
    text: str | None = None,
) -> AuditSpec:
    """Validate a spec dict; errors name the source and the field.

    Args:
        data: The spec as a dict (a parsed TOML file, or a stored run's spec).
        source: Where it came from, for error messages.
        base_dir: Folder relative dataset paths resolve against.
        strict: Refuse keys no model defines (a typo such as ``[evaluatr]``); a stored run's
            spec is read with ``strict=False`` so that keys from other allure versions are ignored.
        text: The TOML source, so that an unknown key's error names its line.

    Raises:
        SpecError: the spec is invalid.
    """
    bad = bool_for_number(data, AuditSpec)
    if bad is not None:
        value: Any = data
        for key in bad:
            value = value[key]
        raise bool_error(bad, value, AuditSpec, source=source, text=text)
    try:
        spec = AuditSpec.model_validate(data, extra="forbid" if strict else "ignore")
    except ValidationError as exc:
        raise spec_error(exc, AuditSpec, source=source, text=text) from exc
    except SpecError:
        raise
    except Exception as exc:  # sub-configs raise their own AllureErrors (e.g. a bad regex)
        if isinstance(exc, AllureError):
            raise SpecError(
                exc.message, where=f"{source}, {exc.where or ''}".rstrip(", "), fix=exc.fix
            ) from exc
        raise
    if base_dir is not None:
        spec.base_dir = str(base_dir.resolve())
    check_label_parsing(spec, source=source)
    check_polarity_prompt(spec, source=source, strict=strict)
    return spec


def replay_source(spec: AuditSpec) -> str:
    """What a replay evaluator reads, in words: ``recorded labels from column X`` (or outputs)."""
    cols = spec.dataset.columns
    if spec.dataset.format == "cogeval" or (cols.recorded_label is None and cols.recorded_output is None):
        return "recorded labels (CogEval: GPT-4's scores)"
    if cols.recorded_label is not None:
        return f"recorded labels from column {cols.recorded_label}"
    return f"recorded outputs from column {cols.recorded_output} (parsed)"


def label_pattern_for(spec: AuditSpec, assistant_template: str) -> str:
    """The evaluator's label pattern: the spec's own, or the default built from the label set and
    ``assistant_template`` (the prompt set's answer format)."""
    if spec.evaluator.label_pattern:
        return spec.evaluator.label_pattern
    return default_label_pattern(assistant_template, spec.vocabulary())


def check_label_parsing(spec: AuditSpec, *, source: str = "<spec>") -> None:
    """Check that the label pattern reads back every label from the prompt set's own answer format.

    Each label is rendered into the prompt set's assistant template (as an ICL example's answer
    is) and parsed with the evaluator's label pattern; a label that does not come back means
    every verdict with that label would be unparsed.

    Raises:
        SpecError: naming the first label that does not parse, and the fix.
    """
    from allure.labels import LabelParser
    from allure.prompts import load_prompt_set

    name = spec.evaluator.prompt
    if "/" in name or "\\" in name:  # a folder: as given (the working directory), else by the spec's folder
        here = Path(name)
        beside = Path(spec.base_dir) / name if spec.base_dir else here
        if not here.is_dir() and not beside.is_dir():
            return  # not checkable here; the evaluator reports a missing folder when it opens it
        name = str(here if here.is_dir() else beside)
    prompts = load_prompt_set(name)
    from allure.prompts import check_prompt_shape

    folder = Path(name) if Path(name).is_dir() else Path(f"prompt set {name}")
    try:
        check_prompt_shape(prompts, folder)
    except SpecError as exc:
        raise SpecError(
            exc.message, where=f"{source}, field 'evaluator.prompt' ({exc.where})", fix=exc.fix
        ) from exc
    pattern = label_pattern_for(spec, prompts.assistant)
    parser = LabelParser(pattern, spec.vocabulary())
    _check_forms_parse(spec, parser, prompts.assistant, pattern, source=source)
    check_polarity_answers(spec, parser, pattern, source=source)


def _check_forms_parse(spec: AuditSpec, parser: Any, assistant: str, pattern: str, *, source: str) -> None:
    """Every synonym and every label, written in the prompt set's answer format, reads back as its own
    label: a synonym holding another's form ("no hallucination" beside "hallucination") is read as the
    longest form that matches, and a label pattern that cuts it short is refused here."""
    synonyms = [(label, form) for label, forms in spec.vocabulary().synonyms.items() for form in forms]
    for label, form in [*synonyms, *((label, label) for label in spec.label_set)]:
        answer = assistant.format(label=form)
        got = parser.parse(answer)
        if got == label:
            continue
        if form != label:
            raise SpecError(
                f"the label pattern {pattern!r} reads synonym {form!r} of {label!r} in the answer "
                f"{answer!r} as {got!r}",
                where=f"{source}, field 'label_synonyms.{label}'",
                fix="remove label_pattern to use the one built from label_set (the longest form wins), "
                "or change it so that its group captures the whole synonym",
            )
        raise SpecError(
            f"the label pattern {pattern!r} cannot read label {label!r} from the prompt set's "
            f"answer {answer!r} (it reads {got!r})",
            where=f"{source}, field 'evaluator.label_pattern'",
            fix="remove label_pattern to use the one built from label_set, or change it so that its "
            f"group captures {label!r} (add synonyms under [label_synonyms] for other forms)",
        )


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate an audit spec TOML file.

    Raises:
        SpecError: missing file, TOML syntax error (with line), or an invalid field.
    """
    p = Path(path)
    check_file(
        p, error=SpecError, what="audit spec", fix="pass an existing TOML file, or run `allure audit --demo`"
    )
    try:
        text = p.read_text(encoding="utf-8-sig")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text (byte {exc.start}: {exc.reason})"
        raise SpecError(msg, where=str(p), fix="save the spec as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(
            f"TOML syntax error: {exc}", where=str(p), fix="correct the TOML at that line"
        ) from exc
    return parse_spec(data, source=str(p), base_dir=p.parent, text=text)
