"""``allure judge export``: a finished run's judge written as a bundle (see :mod:`allure.judge._bundle`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from allure.judge._bundle import EXAMPLES, JUDGE_TOML, PROMPTS, BundleFiles, toml_text, write_bundle
from allure.judge._card import build_card, card_markdown
from allure.judge._fixed import FittedValues, block_name
from allure.judge._readout import READOUT, VOTERS, bundle_readout
from allure.judge._source import (
    JudgeSource,
    check_reproduces,
    fitted_calibration,
    pass_examples,
    pick_source,
    resolved_policy,
)
from allure.models import IclExample, stable_hash

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.memory import RetrievalPolicy
    from allure.prompts import PromptSet
    from allure.store import RunStore

ExportFormat = Literal["bundle", "openai-messages"]


@dataclass
class Exported:
    """What an export wrote."""

    id: str
    folder: Path
    card: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _prompt_files(ps: PromptSet) -> dict[str, str]:
    files = {"system.txt": ps.system, "user.txt": ps.user, "assistant.txt": ps.assistant}
    if ps.example_user:
        files["example_user.txt"] = ps.example_user
    return {k: v + "\n" for k, v in files.items()}


def judge_config(
    spec: AuditSpec,
    src: JudgeSource,
    policy: RetrievalPolicy,
    fitted: FittedValues,
    prompt_hash: str,
    examples: list[IclExample],
) -> dict[str, Any]:
    """``judge.toml``'s content: everything labelling needs besides the templates and examples."""
    from allure.judge._bundle import FORMAT, allure_version

    ev = spec.evaluator.model_dump(mode="json", exclude={"prompt"})
    cols = spec.dataset.columns.model_dump(mode="json", exclude_none=True)
    return {
        "format": FORMAT,
        "allure_version": allure_version(),
        "name": spec.name,
        "source": {
            "run_id": src.run.id,
            "iteration": src.iteration,
            "zero_shot": src.zero_shot,
            "adopted": src.iteration == src.active,
            "examples": len(examples),
        },
        "labels": {
            "label_set": list(spec.label_set),
            "positive_label": spec.positive_label,
            "synonyms": {k: list(v) for k, v in spec.label_synonyms.items()},
        },
        "evaluator": ev,
        "prompt": {"name": Path(spec.evaluator.prompt).name, "sha256": prompt_hash},
        "retrieval": policy.model_dump(mode="json"),
        "calibration": {"configured": spec.evaluator.calibration, **fitted.as_toml()},
        "dataset": {
            "format": spec.dataset.format,
            "gold_separator": spec.dataset.gold_separator,
            "swapped_labels_in": spec.dataset.swapped_labels_in,
            "columns": cols,
        },
    }


def bundle_content(
    store: RunStore, src: JudgeSource, project: Path, fmt: ExportFormat = "bundle"
) -> tuple[BundleFiles, dict[str, Any]]:
    """Every file of the bundle for ``src`` and its card."""
    from allure.prompts import load_prompt_set

    spec = src.spec
    ps = load_prompt_set(spec.evaluator.prompt)
    prompt_files = _prompt_files(ps)
    verdicts = store.verdicts(src.run.id, src.iteration)
    fitted = fitted_calibration(store, src)  # the values the pass stored, no refit
    # the current read-out (a refit after an approval), as a re-audit applies it
    readout = bundle_readout(src, store, project)
    check_reproduces(store, src, fitted, verdicts, readout.own if readout is not None else None)
    examples = pass_examples(store, src, project)
    policy = resolved_policy(store, src)
    config = judge_config(spec, src, policy, fitted, stable_hash(prompt_files), examples)
    if readout is not None:
        config["readout"] = readout.table
    card = build_card(store, src, fitted, len(examples), project, readout.card if readout else None)
    files = BundleFiles()
    files.add(JUDGE_TOML, toml_text(config))
    for name, text in prompt_files.items():
        files.add(f"{PROMPTS}/{name}", text)
    files.add(EXAMPLES, "".join(ex.model_dump_json() + "\n" for ex in examples))
    if readout is not None:
        files.add(READOUT, readout.text)
        if readout.voters is not None:
            files.add(VOTERS, readout.voters)
    files.add("card.json", json.dumps(card, indent=2, sort_keys=True) + "\n")
    files.add("card.md", card_markdown(card))
    blocks = {block_name(v.icl_ids): list(v.icl_ids) for i, v in verdicts.items() if not i.startswith("#")}
    files.add("blocks.json", json.dumps(blocks, indent=2, sort_keys=True) + "\n")
    if fmt == "openai-messages":
        from allure.judge._plain import openai_messages

        described = readout.card["describe"] if readout is not None else None
        files.add("openai-messages.json", openai_messages(spec, policy, blocks, examples, fitted, described))
    return files, card


def export_judge(
    project: Path,
    run_id: str | None,
    out: Path,
    *,
    iteration: int | None = None,
    zero_shot: bool = False,
    fmt: ExportFormat = "bundle",
) -> Exported:
    """Export a run's judge into ``out`` (a bundle; with ``openai-messages``, the plain messages too).

    Raises:
        JudgeError: The run cannot be exported (see :func:`pick_source`), or ``out`` cannot be written.
    """
    from allure.judge._bundle import allure_version
    from allure.store import open_project_store

    store = open_project_store(project, create=False)
    try:
        src = pick_source(store, run_id, iteration, zero_shot)
        files, card = bundle_content(store, src, project, fmt)
    finally:
        store.close()
    bid = write_bundle(out, files, allure_version())
    warnings = [card["first_line"]] if card["first_line"].startswith("WARNING") else []
    return Exported(id=bid, folder=out, card=card, warnings=warnings)
