"""Entailment probabilities P(entailment | premise, hypothesis) for text consistency (seed 002).

Two judges: an NLI model loaded with ``transformers`` from a local checkpoint folder (nothing is
downloaded: ``local_files_only``), or the evaluator LLM itself with the entailment prompt set
below, through the evaluator's runner, so every judgment is stored and cached like any other call
(P is the label probability from the logprobs when the server returns them, else 0 or 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import StoreError, StudyError
from allure.models import Item, Verdict, stable_hash
from allure.prompts import PROMPTS_DIR, Rephrasing, write_prompt_set
from allure.store import open_project_store
from allure.studies import StudySource

if TYPE_CHECKING:
    from allure.config import AuditSpec

Entail = Callable[[list[tuple[str, str]]], list[float]]
"""(premise, hypothesis) pairs -> P(entailment) for each."""

ENTAILMENT_PROMPT = {
    "system.txt": "You judge textual entailment between two answers. Reply in the requested format only.",
    "user.txt": (
        "Premise:\n{task}\n\nHypothesis:\n{response}\n\n"
        "Does the premise entail the hypothesis? Answer with X one of {labels}."
    ),
    "assistant.txt": "entailment: {label}",
}
"""The evaluator's entailment prompt set (written to ``PROJECT/.allure/prompts/entailment/``)."""


def nli_entailment(path: str | Path, *, batch_size: int = 16) -> Entail:
    """P(entailment) from the NLI checkpoint at ``path`` (its config names an ``entailment`` label).

    Raises:
        StudyError: The folder is missing, does not load, or names no entailment label.
    """
    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise StudyError(
            f"no model checkpoint at {folder} (config.json missing)",
            where="option --nli",
            fix="pass a local folder saved with save_pretrained (model and tokenizer), e.g. an MNLI model",
        )
    try:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        why = f"cannot load the NLI model ({type(exc).__name__}: {exc})"
        raise StudyError(why, where=str(folder), fix="save the model and its tokenizer there") from exc
    names = {int(k): str(v).lower() for k, v in model.config.id2label.items()}
    entail = [k for k, v in names.items() if v.startswith("entail")]
    if not entail:
        raise StudyError(
            f"the model's labels {sorted(names.values())} name no entailment class",
            where=f"{folder}/config.json id2label",
            fix="use an NLI checkpoint (labels entailment / neutral / contradiction)",
        )
    model.eval()

    def judge(pairs: list[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            enc = tok(
                [p for p, _ in chunk],
                [h for _, h in chunk],
                padding=True,
                truncation=True,
                return_tensors="pt",
            )
            with torch.no_grad():
                probs = torch.softmax(model(**enc).logits, dim=-1)
            out += [float(v) for v in probs[:, entail[0]]]
        return out

    return judge


def ask_evaluator(
    project: Path,
    spec: AuditSpec,
    run_id: str,
    items: list[Item],
    *,
    sample: int | None = None,
    free_text: bool = False,
) -> dict[str, Verdict]:
    """Label ``items`` with ``spec``'s evaluator as a run of its own (``run_id``, listed with the studies),
    every call stored and cached.

    ``sample``: a sample index (see :attr:`allure.evaluator.PassOptions.sample`). ``free_text``: the
    answer is read from the raw output, so an answer without a label is not asked again.
    """
    from allure.evaluator import PassOptions, open_evaluator

    store = open_project_store(project)
    try:
        try:
            store.get_run(run_id)
        except StoreError:
            store.create_run(spec.model_dump(mode="json"), run_id=run_id)
        store.add_items(run_id, items, {it.id: "heldout" for it in items}, {})
        with open_evaluator(spec, store, items, lazy_start=True) as e:  # every call stored: no server
            if free_text:
                e.retry_unparsed = 0
            verdicts = e.evaluate(
                run_id,
                1 if sample is None else 1 + sample,
                items,
                lambda _: [],
                options=PassOptions(sample=sample),
            ).verdicts
        # listed with the studies (hidden from `allure runs`), not as an audit run left running
        store.update_run(run_id, status="done", info={"kind": "study", "study_kind": "helper"})
        return verdicts
    finally:
        store.close()


def prompt_folder(project: Path, name: str, texts: dict[str, str]) -> Path:
    """``PROJECT/.allure/prompts/NAME/`` holding ``texts`` (written once; a user's edits are kept)."""
    folder = project / PROMPTS_DIR / name
    if not (folder / "user.txt").is_file():
        write_prompt_set(folder, Rephrasing(name, dict(texts), "", "given"))
    return folder


def free_text_spec(spec: AuditSpec, folder: Path, *, temperature: float, max_tokens: int) -> AuditSpec:
    """``spec`` with its evaluator answering free text with the prompt set at ``folder``."""
    ev = spec.evaluator
    update = {
        "prompt": str(folder),
        "temperature": temperature,
        "max_tokens": max(ev.max_tokens, max_tokens),
        "local": ev.local.model_copy(update={"deterministic": False}),
    }
    return spec.model_copy(update={"evaluator": ev.model_copy(update=update)})


def evaluator_entailment(project: Path, src: StudySource, study_id: str) -> Entail:
    """P(entailment) judged by the study's evaluator at temperature 0 with :data:`ENTAILMENT_PROMPT`.

    The judgments are a run of their own in the run store (``STUDY-entailment``), cached by prompt.
    """
    folder = prompt_folder(project, "entailment", ENTAILMENT_PROMPT)
    ev = src.spec.evaluator.model_copy(
        update={"prompt": str(folder), "temperature": 0.0, "label_pattern": ""}
    )
    spec = src.spec.model_copy(
        update={"evaluator": ev, "label_set": ["no", "yes"], "positive_label": "yes", "label_synonyms": {}}
    )

    def judge(pairs: list[tuple[str, str]]) -> list[float]:
        items = [Item(id=stable_hash(p, h, length=16), task=p, response=h) for p, h in pairs]
        unique = list({it.id: it for it in items}.values())
        verdicts = ask_evaluator(project, spec, f"{study_id}-entailment", unique)
        return [_probability(verdicts.get(it.id)) for it in items]

    return judge


def _probability(v: Any) -> float:
    if v is None or v.label is None:
        return 0.0
    if v.prob_positive is not None:
        return float(v.prob_positive)
    return 1.0 if v.label == "yes" else 0.0
