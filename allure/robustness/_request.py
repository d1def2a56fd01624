"""ReQuest (seed 000, Section 2.1): ask the evaluator for the grading procedure it followed, run it, compare.

1. The ReQuest prompt (:data:`REQUEST_PROMPT`) shows the evaluator its own prompt set (system and
   user templates) and asks for the exact procedure it followed to decide the label (one call,
   stored and cached as a run ``STUDY-request`` of its own).
2. The procedure is appended to the original system prompt (braces escaped) and stored as a prompt
   set ``NAME~request-HASH`` under ``PROJECT/.allure/prompts/``, checked like any rephrasing.
3. Two arms over the same frozen items, both with the spec's memory policy (or both zero-shot):
   ``original`` and ``procedure``; PerRR (macro-F1) and PreRR (mean Jaccard) of ``procedure`` against ``original``.

Inter-model: run the study with another evaluator's spec and ``procedure_from`` set to a procedure
prompt set written by the first (its ``rephrasing.json`` names the model that wrote it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Unpack

from allure._text_errors import read_json_file
from allure.errors import StudyError
from allure.models import Item, stable_hash
from allure.prompts import (
    PROMPTS_DIR,
    Rephrasing,
    check_rephrasing,
    find_prompt_set,
    load_checked,
    load_prompt_set,
    prompt_set_hash,
    prompt_texts,
    write_prompt_set,
)
from allure.robustness._base import RobustStudy, run_robust
from allure.robustness._entail import ask_evaluator, free_text_spec, prompt_folder
from allure.robustness._reports import RequestReport
from allure.robustness._reproducibility import agreement
from allure.studies import ArmLabels, ArmSpec, ParamType, StudyContext, StudyOptions, StudyRecord, StudySource
from allure.studies.figures import fmt

REQUEST_PROMPT = {
    "system.txt": "You explain how you grade. Reply with the procedure only.",
    "user.txt": (
        "You were given this grading prompt:\n\n{task}\n\n"
        "Write the exact step-by-step procedure you followed to decide the label, so that another "
        "grader following only these steps reaches the same labels. Number the steps."
    ),
    "assistant.txt": "{label}",
}
"""The ReQuest prompt set (written to ``PROJECT/.allure/prompts/request/``)."""

PROCEDURE_HEADER = "\n\nFollow this grading procedure exactly:\n"
"""What separates the original system prompt from the procedure in the robustness-check prompt."""


def procedure_texts(original: dict[str, str], procedure: str) -> dict[str, str]:
    """The original prompt set's texts with ``procedure`` appended to its system prompt (braces escaped)."""
    escaped = procedure.strip().replace("{", "{{").replace("}", "}}")
    return {**original, "system.txt": original["system.txt"].rstrip() + PROCEDURE_HEADER + escaped}


def _written_by(folder: str) -> str:
    meta = Path(folder) / "rephrasing.json"
    data = (
        read_json_file(meta, error=StudyError, what="prompt set's rephrasing.json") if meta.is_file() else {}
    )
    method = data.get("method", "") if isinstance(data, dict) else ""
    return (
        method.removeprefix("request:")
        if isinstance(method, str) and method.startswith("request:")
        else "unknown"
    )


class RequestOptions(StudyOptions, total=False):
    """The keyword arguments of :func:`request_study`: the study's own (its ``params``) and the
    :class:`~allure.studies.StudyOptions`; the defaults are :meth:`RequestStudy.prepare`'s."""

    procedure_from: str | None
    zero_shot: bool


def request_study(project: str | Path = ".", **options: Unpack[RequestOptions]) -> RequestRecord:
    """ReQuest with the study's evaluator (see the module docstring).

    Args:
        procedure_from: A procedure prompt set written by an earlier request study (inter-model);
            default: ask this evaluator.
        zero_shot: Run both arms without the memory's examples (as the ReQuest paper does; default no).
        options: as :func:`~allure.robustness.sensitivity_study` takes them (``from_run``, ``spec``, ...).

    Returns:
        The :class:`RequestRecord`.

    Raises:
        StudyError: No source, an empty memory; the procedure is empty.
        SpecError: The procedure prompt set lost a placeholder or a label instruction.
    """
    result = run_robust(RequestStudy, project, options)
    assert isinstance(result, RequestRecord)
    return result


def _procedure(
    proj: Path, src: StudySource, procedure_from: str | None
) -> tuple[str, dict[str, str], str, str]:
    """The procedure, its prompt set's texts, the model that wrote it and the prompt set's folder:
    read from the prompt set ``procedure_from``, or asked of the evaluator and written as a prompt set."""
    spec = src.spec
    base = load_prompt_set(spec.evaluator.prompt)
    original = prompt_texts(base)
    labels = list(spec.label_set)
    if procedure_from is not None:
        folder = find_prompt_set(proj, procedure_from)
        texts = prompt_texts(load_checked(folder, base, labels, where="option --procedure-from"))
        procedure = texts["system.txt"].partition(PROCEDURE_HEADER.strip())[2].strip() or texts["system.txt"]
        written_by = _written_by(folder)
    else:
        asking = prompt_folder(proj, "request", REQUEST_PROMPT)
        shown = f"System prompt:\n{original['system.txt']}\n\nUser prompt:\n{original['user.txt']}"
        item = Item(id=stable_hash(shown, length=16), task=shown, response="")
        rid = f"request-{stable_hash(src.source, spec.evaluator.model_dump(mode='json'), shown, length=8)}"
        asker = free_text_spec(spec, asking, temperature=0.0, max_tokens=512)
        got = ask_evaluator(proj, asker, rid, [item], free_text=True)
        procedure = (got[item.id].raw_output or "").strip() if item.id in got else ""
        if not procedure:
            raise StudyError(
                "the evaluator wrote no procedure",
                where=f"run {rid}",
                fix="check that the evaluator answers free text (e.g. max_tokens in [evaluator] large enough)",
            )
        texts = procedure_texts(original, procedure)
        written_by = got[item.id].model
        name = f"{base.name}~request-{prompt_set_hash(texts)[:8]}"
        check_rephrasing(original, texts, labels, where=name)
        folder = str(proj / PROMPTS_DIR / name)
        if not (Path(folder) / "user.txt").is_file():
            write_prompt_set(Path(folder), Rephrasing(name, texts, base.name, f"request:{written_by}"))
    return procedure, texts, written_by, folder


class RequestRecord(StudyRecord):
    """``study.json`` of a ReQuest study: the shared record and its :class:`RequestReport`."""

    kind: str = "request"
    request: RequestReport
    """The procedure, and PerRR/PreRR of running it against the original prompt."""


@dataclass
class RequestStudy(RobustStudy):
    """The ReQuest study as a :class:`~allure.studies.Study`: arms ``original`` and ``procedure``."""

    kind: ClassVar[str] = "request"
    result: ClassVar[type[StudyRecord]] = RequestRecord
    params: ClassVar[dict[str, ParamType]] = {"procedure_from": "text", "zero_shot": "flag"}
    src: StudySource
    procedure: str
    """The grading procedure the evaluator wrote (or the one given)."""
    written_by: str
    """The model that wrote it."""
    folder: str
    """The prompt set that runs the procedure."""

    @classmethod
    def prepare(
        cls, context: StudyContext, *, procedure_from: str | None = None, zero_shot: bool = False
    ) -> RequestStudy:
        """The procedure (asked of the evaluator, or read from ``procedure_from``) as a prompt set, and
        the arms ``original`` and ``procedure``, as :func:`request_study` takes them."""
        src = context.source
        procedure, texts, written_by, folder = _procedure(context.project, src, procedure_from)
        fixed: list[str] | None = [] if zero_shot else None
        policy = None if zero_shot else src.spec.memory.retrieval
        arms = [
            ArmSpec(name="original", policy=policy, example_ids=fixed),
            ArmSpec(
                name="procedure",
                policy=policy,
                example_ids=fixed,
                prompt=folder,
                prompt_hash=prompt_set_hash(texts),
            ),
        ]

        return cls(arms, src, procedure, written_by, folder)

    def report(self, record: StudyRecord, labels: ArmLabels) -> RequestReport:
        src, written_by = self.src, self.written_by
        ids = [it.id for it in src.items]
        result = agreement(
            f"{record.id}@original",
            f"{record.id}@procedure",
            [src.reference.get(i) for i in ids],
            dict(zip(ids, labels["original"], strict=True)),
            dict(zip(ids, labels["procedure"], strict=True)),
            [written_by, str(record.evaluator.get("model", ""))],
            list(src.spec.label_set),
        )
        return RequestReport(
            procedure=self.procedure,
            written_by=written_by,
            procedure_prompt=self.folder,
            reproducibility=result,
        )

    def findings(self, report: RequestReport) -> list[str]:
        x = report.reproducibility
        return [
            f"ReQuest ({x.kind}): running the procedure the evaluator wrote gives PerRR = "
            f"{fmt(x.perrr)}, PreRR = {fmt(x.prerr)} against the original prompt "
            f"({len(x.disagreements)} item(s) labelled differently)"
        ]

    def markdown(self, report: RequestReport) -> list[str]:
        return request_markdown(report)


def request_markdown(r: RequestReport) -> list[str]:
    """The ReQuest section of ``study.md``: the procedure and PerRR/PreRR."""
    x = r.reproducibility
    return [
        "",
        f"## ReQuest: the procedure {r.written_by} says it followed",
        "",
        *[f"> {line}" for line in r.procedure.splitlines()],
        "",
        f"Run as the prompt set `{r.procedure_prompt}` ({x.kind}, {' vs '.join(x.models)}): "
        f"macro-F1 {fmt(x.f1_a)} (original) vs {fmt(x.f1_b)} (procedure), PerRR = {fmt(x.perrr)}, "
        f"PreRR = {fmt(x.prerr)}; {len(x.disagreements)} item(s) labelled differently"
        + (f": {', '.join(x.disagreements[:20])}" if x.disagreements else ""),
    ]
