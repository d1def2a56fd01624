"""Rephrasings written by the evaluator from a meta-prompt file (seed 001's LLM sampler).

The meta-prompt (a text file holding ``{text}`` once) is filled with each file of the prompt set
that a rephrasing may change, and the study's evaluator answers it at temperature 0.7 (free text,
every call stored and cached as the run ``rephrase-HASH``). The answers form the rephrasing, which
:func:`allure.prompts.check_rephrasing` must accept (same placeholders, same label instructions,
same answer format); a refused draft is kept with its reason and another sample is asked for, up to
:data:`ATTEMPTS` per rephrasing. Accepted ones are prompt sets ``NAME~llmQsSEED-HASH`` under
``PROJECT/.allure/prompts/``; one already there is re-used as it is (edits included) after the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from allure.errors import SpecError, StudyError
from allure.models import Item, stable_hash
from allure.prompts import (
    PROMPTS_DIR,
    PromptSet,
    Rephrasing,
    llm_rephrasing,
    load_checked,
    load_meta_prompt,
    meta_requests,
    prompt_set_hash,
    prompt_texts,
)
from allure.robustness._entail import ask_evaluator, free_text_spec, prompt_folder
from allure.robustness._reports import PromptVariant
from allure.studies import StudySource

ATTEMPTS = 3
"""Samples asked for per rephrasing before giving up."""

REPHRASER_PROMPT = {
    "system.txt": "You rewrite prompt templates for an LLM grader. Reply with the rewritten text only.",
    "user.txt": "{task}",
    "assistant.txt": "{label}",
}
"""The prompt set that carries the filled meta-prompt (written to ``PROJECT/.allure/prompts/rephraser/``)."""


def llm_variants(
    project: Path,
    src: StudySource,
    base: PromptSet,
    count: int,
    meta_prompt: str | Path,
    *,
    seed: int,
    labels: Sequence[object],
) -> list[tuple[PromptVariant, Rephrasing | None]]:
    """rho_2..rho_{count+1} written by the evaluator, with the rephrasings still to be written (``None``:
    re-used from disk).

    Raises:
        SpecError: The meta-prompt file is unusable, or a saved rephrasing fails the check.
        StudyError: No accepted draft for a rephrasing in :data:`ATTEMPTS` samples.
    """
    meta = load_meta_prompt(meta_prompt)
    tag = stable_hash(meta, length=6)
    requests = meta_requests(base, meta)
    items = {
        f: Item(id=f"{f}-{stable_hash(text, length=8)}", task=text, response="")
        for f, text in requests.items()
    }
    spec = free_text_spec(
        src.spec, prompt_folder(project, "rephraser", REPHRASER_PROMPT), temperature=0.7, max_tokens=1024
    )
    run_id = f"rephrase-{stable_hash(requests, spec.evaluator.model_dump(mode='json'), length=8)}"
    out: list[tuple[PromptVariant, Rephrasing | None]] = []
    for q in range(2, count + 2):
        name = f"{base.name}~llm{q}s{seed}-{tag}"
        folder = project / PROMPTS_DIR / name
        stub = PromptVariant(
            q=q, name=name, path=str(folder), hash="", method="llm", rules=[f"meta:{Path(meta_prompt).name}"]
        )
        if (folder / "user.txt").is_file():
            texts = prompt_texts(load_checked(folder, base, labels))
            out.append((stub.model_copy(update={"hash": prompt_set_hash(texts)}), None))
            continue
        rejected: list[str] = []
        for attempt in range(ATTEMPTS):
            sample = seed * 1000 + (q - 2) * ATTEMPTS + attempt
            got = ask_evaluator(project, spec, run_id, list(items.values()), sample=sample, free_text=True)
            answers = {f: got[it.id].raw_output if it.id in got else "" for f, it in items.items()}
            try:
                r = llm_rephrasing(base, name, answers, labels=labels, source=Path(meta_prompt).name)
            except SpecError as exc:
                rejected.append(f"sample {sample}: {exc.message}" + (f" ({exc.where})" if exc.where else ""))
                continue
            out.append((stub.model_copy(update={"hash": prompt_set_hash(r.texts), "rejected": rejected}), r))
            break
        else:
            raise StudyError(
                f"the evaluator wrote no acceptable rephrasing rho_{q} in {ATTEMPTS} samples: {'; '.join(rejected)}",
                where=str(meta_prompt),
                fix="make the meta-prompt insist on keeping every {placeholder} and quoted answer exactly, "
                "or use rule-based rephrasings (leave out --meta-prompt)",
            )
    return out
