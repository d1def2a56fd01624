"""The prompt variants rho_1..rho_Q of the robustness studies, checked, and their arms.

rho_1 is the spec's prompt set; the others are rule-based rephrasings (written to
``PROJECT/.allure/prompts/`` and re-used from there, so an edit a user makes is honoured and
checked), LLM-written ones (:mod:`allure.robustness._llm_rephrase`) or prompt set folders given by
the user; every one is checked (placeholders, label instructions, answer format) before anything is
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from allure.errors import StudyError
from allure.prompts import (
    MAX_REPHRASINGS,
    PROMPTS_DIR,
    Rephrasing,
    find_prompt_set,
    load_checked,
    load_prompt_set,
    prompt_set_hash,
    prompt_texts,
    rule_rephrasings,
)
from allure.robustness._reports import PromptVariant
from allure.studies import ArmSpec, ParamType, StudySource

CONDITIONS = ("memory", "zero-shot")
"""The two conditions, in arm order."""

TOP = 10
"""How many items and pairs the report lists."""

VARIANT_PARAMS: dict[str, ParamType] = {"rephrasings": "int", "prompts": "names", "seed": "int"}
"""The ``--param`` keys of the kinds that run prompt variants (the arguments of :func:`prompt_variants`)."""


def short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def prompt_variants(
    project: Path,
    src: StudySource,
    *,
    rephrasings: int | None,
    prompts: Sequence[str] | None,
    seed: int,
    optional: bool = False,
    meta_prompt: str | Path | None = None,
) -> tuple[list[PromptVariant], list[tuple[Path, Rephrasing]]]:
    """rho_1..rho_Q, checked, and the rephrasings still to be written (no prompt set is written here).

    With ``optional``, neither source gives rho_1 alone. With ``meta_prompt``, rho_2..rho_Q are
    written by the evaluator from that meta-prompt file (:mod:`allure.robustness._llm_rephrase`).

    Raises:
        StudyError: Neither (unless ``optional``) or both of ``rephrasings`` and ``prompts``, or ``Q < 2``.
        SpecError: A rephrasing lost a placeholder or a label instruction.
    """
    none = rephrasings is None and prompts is None
    if (rephrasings is None) == (prompts is None) and not (optional and none):
        raise StudyError(
            "a sensitivity study needs exactly one source of rephrasings",
            where="options --rephrasings / --prompts",
            fix="pass --rephrasings Q (rule-based, rho_1 = the original) or --prompts SET,SET,... (your own)",
        )
    labels = list(src.spec.label_set)
    base_name = src.spec.evaluator.prompt
    base = load_prompt_set(base_name)
    out = [PromptVariant(q=1, name=base.name, path=base_name, hash=prompt_set_hash(prompt_texts(base)))]
    pending: list[tuple[Path, Rephrasing]] = []
    if none:
        return out, pending
    if prompts is not None:
        if len(prompts) < 1:
            raise StudyError("no prompt set given", where="option --prompts", fix="pass at least one")
        for q, name in enumerate(prompts, start=2):
            path = find_prompt_set(project, name)
            ps = load_checked(path, base, labels, where="option --prompts")
            out.append(
                PromptVariant(
                    q=q, name=ps.name, path=path, hash=prompt_set_hash(prompt_texts(ps)), method="given"
                )
            )
        return out, pending
    assert rephrasings is not None
    if not 2 <= rephrasings <= MAX_REPHRASINGS + 1:
        raise StudyError(
            f"--rephrasings {rephrasings}: Q counts the original prompt, so it is 2 to {MAX_REPHRASINGS + 1}",
            where="option --rephrasings (-q)",
            fix="pass --rephrasings 4 (the original and 3 rule-based rephrasings)",
        )
    if meta_prompt is not None:
        from allure.robustness._llm_rephrase import llm_variants

        for v, made in llm_variants(
            project, src, base, rephrasings - 1, meta_prompt, seed=seed, labels=labels
        ):
            out.append(v)
            pending += [(Path(v.path), made)] if made is not None else []
        return out, pending
    for r in rule_rephrasings(base, rephrasings - 1, seed=seed, labels=labels, option="--rephrasings (-q)"):
        folder = project / PROMPTS_DIR / r.name
        if (folder / "user.txt").is_file():
            ps = load_checked(folder, base, labels)  # re-use (and check) what is on disk, edits included
            texts = prompt_texts(ps)
        else:
            texts = r.texts
            pending.append((folder, r))
        out.append(
            PromptVariant(
                q=len(out) + 1,
                name=r.name,
                path=str(folder),
                hash=prompt_set_hash(texts),
                method="rules",
                rules=list(r.rules),
            )
        )
    return out, pending


def sensitivity_arms(variants: Sequence[PromptVariant], src: StudySource) -> list[ArmSpec]:
    """``rho_q +memory`` and ``rho_q zero-shot`` per rephrasing."""
    arms = []
    for v in variants:
        prompt = None if v.q == 1 else v.path
        tag = f"rho{v.q}"
        arms.append(
            ArmSpec(
                name=f"{tag} +memory",
                policy=src.spec.memory.retrieval,
                prompt=prompt,
                prompt_hash=v.hash,
                rephrasing=v.q,
                with_memory=True,
            )
        )
        arms.append(
            ArmSpec(
                name=f"{tag} zero-shot",
                example_ids=[],
                prompt=prompt,
                prompt_hash=v.hash,
                rephrasing=v.q,
                with_memory=False,
            )
        )
    return arms
