"""The fingerprint of a re-audit: everything its result depends on, and what changed since another.

Prompt set (hash and the texts, for a diff summary), model name and the model information the
server reports (``GET /models``; for the embedded evaluator the pinned GGUF file, read without
starting the server), evaluator parameters (including the label pattern and the retrieval
policy), memory version and size, frozen-set version and the allure version.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel

from allure import __version__
from allure.config import AuditSpec
from allure.models import stable_hash

COMPARED = (
    "prompt_hash",
    "model",
    "model_info",
    "evaluator",
    "memory_version",
    "set_version",
    "allure_version",
    "judge",
    "readout",
)
"""Fields whose change makes ``--if-changed`` run a re-audit."""


class Fingerprint(BaseModel):
    """What a re-audit measured."""

    prompt_set: str
    """Name of the prompt set (built-in name or folder name)."""
    prompt_hash: str
    """sha256 (hex, 16) over the prompt set's three templates."""
    prompts: dict[str, str]
    """The templates' texts by file name (``system.txt``, ``user.txt``, ``assistant.txt``)."""
    model: str
    """The evaluator model name sent with every request."""
    model_info: dict[str, Any]
    """What the server reports about the model (``GET /models``), or the embedded model's pinned file."""
    evaluator: dict[str, Any]
    """Evaluator parameters that change its output (kind, sampling, label pattern, retrieval policy)."""
    memory_version: str
    """Content hash of the episodic memory."""
    memory_size: int
    """Examples in the memory."""
    set_name: str
    """The frozen set."""
    set_version: int
    """The frozen set's version."""
    set_hash: str
    """The frozen set's content hash."""
    allure_version: str
    """The allure version that ran the re-audit."""
    judge: str = ""
    """The exported judge's bundle id (``reaudit --judge``); empty: the spec's evaluator."""
    readout: str = ""
    """The stored read-out applied last (run, iteration, date of its fit); empty: none."""


def prompt_texts(prompt: str) -> tuple[str, dict[str, str]]:
    """The name and the three template texts of a prompt set (validated as the evaluator loads it)."""
    from allure.prompts import load_prompt_set

    ps = load_prompt_set(prompt)
    return ps.name, {"system.txt": ps.system, "user.txt": ps.user, "assistant.txt": ps.assistant}


def evaluator_params(spec: AuditSpec) -> dict[str, Any]:
    """The evaluator parameters a re-audit's labels depend on (with the backend kind's own, ``identity``)."""
    from allure.evaluator import backend_kind

    ev = spec.evaluator
    return {
        **ev.params(),
        "label_pattern": ev.label_pattern,
        "label_set": list(spec.label_set),
        "retrieval": spec.memory.retrieval.model_dump(mode="json"),
        **backend_kind(ev.kind).identity(spec),
    }


def model_name(spec: AuditSpec) -> str:
    """The model name requests carry (the backend kind's: the embedded server's alias for ``local``)."""
    from allure.evaluator import backend_kind

    return backend_kind(spec.evaluator.kind).model_name(spec)


def model_info(spec: AuditSpec) -> dict[str, Any]:
    """Model information for the fingerprint, from the backend kind (an ``openai`` server is asked;
    the embedded one is never started; a kind of its own says what it knows, asking nothing by default).

    Raises:
        EvaluatorUnavailableError: the kind's server cannot be reached.
    """
    from allure.evaluator import backend_kind

    return backend_kind(spec.evaluator.kind).model_info(spec)


def prompt_diff(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """One line per changed template: ``user.txt: +2 -1 lines``."""
    out = []
    for fname in sorted(old.keys() | new.keys()):
        a, b = old.get(fname, "").splitlines(), new.get(fname, "").splitlines()
        if a == b:
            continue
        plus = minus = 0
        for line in difflib.unified_diff(a, b, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
        out.append(f"{fname}: +{plus} -{minus} lines")
    return out


def changes(old: Fingerprint | None, new: Fingerprint) -> list[str]:
    """What differs between two fingerprints, one short line each (empty: nothing changed)."""
    if old is None:
        return []
    out = []
    if old.prompt_hash != new.prompt_hash:
        diff = prompt_diff(old.prompts, new.prompts)
        out.append(f"prompt {old.prompt_hash[:8]} -> {new.prompt_hash[:8]} ({'; '.join(diff) or 'renamed'})")
    if old.model != new.model:
        out.append(f"model {old.model} -> {new.model}")
    elif old.model_info != new.model_info:
        out.append("model info changed")
    if old.evaluator != new.evaluator:
        keys = sorted(
            k
            for k in old.evaluator.keys() | new.evaluator.keys()
            if old.evaluator.get(k) != new.evaluator.get(k)
        )
        out.append(f"evaluator parameters: {', '.join(keys)}")
    if old.memory_version != new.memory_version:
        out.append(f"memory {old.memory_size} -> {new.memory_size} examples ({new.memory_version[:8]})")
    if old.set_version != new.set_version:
        out.append(f"set v{old.set_version} -> v{new.set_version}")
    if old.judge != new.judge:
        out.append(f"judge {old.judge or '(the spec)'} -> {new.judge or '(the spec)'}")
    if old.readout != new.readout:
        out.append(f"read-out {old.readout or '(none)'} -> {new.readout or '(none)'}")
    if old.allure_version != new.allure_version:
        out.append(f"allure {old.allure_version} -> {new.allure_version}")
    return out


def same(old: Fingerprint | None, new: Fingerprint) -> bool:
    """Whether nothing that :data:`COMPARED` names differs."""
    return old is not None and all(getattr(old, f) == getattr(new, f) for f in COMPARED)


def build_fingerprint(
    spec: AuditSpec,
    *,
    memory_version: str,
    memory_size: int,
    set_name: str,
    set_version: int,
    set_hash: str,
    judge: str = "",
    readout: str = "",
) -> Fingerprint:
    """The fingerprint of re-auditing a set with ``spec`` now.

    Raises:
        SpecError: the prompt set cannot be loaded.
        EvaluatorUnavailableError: an ``openai`` server cannot be reached.
    """
    name, texts = prompt_texts(spec.evaluator.prompt)
    return Fingerprint(
        prompt_set=name,
        prompt_hash=stable_hash(texts),
        prompts=texts,
        model=model_name(spec),
        model_info=model_info(spec),
        evaluator=evaluator_params(spec),
        memory_version=memory_version,
        memory_size=memory_size,
        set_name=set_name,
        set_version=set_version,
        set_hash=set_hash,
        allure_version=__version__,
        judge=judge,
        readout=readout,
    )
