"""The fingerprint of a re-audit: everything its result depends on, and what changed since another.

Prompt set (hash and the texts, for a diff summary), model name and the model information the
server reports (``GET /models``; for the embedded evaluator the pinned GGUF file, read without
starting the server), evaluator parameters (including the label pattern and the retrieval
policy), memory version and size, frozen-set version and the allure version.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from allure import __version__
from allure.config import AuditSpec
from allure.errors import EvaluatorUnavailableError
from allure.models import stable_hash
from allure.urls import redact_url

COMPARED = (
    "prompt_hash",
    "model",
    "model_info",
    "evaluator",
    "memory_version",
    "set_version",
    "allure_version",
    "judge",
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


def prompt_texts(prompt: str) -> tuple[str, dict[str, str]]:
    """The name and the three template texts of a prompt set (validated as the evaluator loads it)."""
    from allure.prompts import load_prompt_set

    ps = load_prompt_set(prompt)
    return ps.name, {"system.txt": ps.system, "user.txt": ps.user, "assistant.txt": ps.assistant}


def server_model_info(
    base_url: str, model: str, api_key_env: str, *, timeout_s: float = 5.0
) -> dict[str, Any]:
    """The ``GET {base_url}/models`` entry of ``model`` (or the list of served ids when it is absent).

    Raises:
        EvaluatorUnavailableError: the server cannot be reached, times out or answers 5xx.
    """
    from allure._http import HttpError, get

    headers = {}
    key = os.environ.get(api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = base_url.rstrip("/") + "/models"
    try:
        resp = get(url, headers=headers, timeout_s=timeout_s)
    except HttpError as exc:
        raise EvaluatorUnavailableError(
            f"the evaluator server does not answer ({exc.kind})",
            where=f"evaluator.base_url {redact_url(base_url)}",
            fix="start the server (or check the URL); a re-audit needs it to confirm the model",
        ) from exc
    if resp.status_code >= 500:
        raise EvaluatorUnavailableError(
            f"the evaluator server answers HTTP {resp.status_code}",
            where=f"evaluator.base_url {redact_url(base_url)}",
            fix="wait for the server to recover, then re-run",
        )
    if resp.status_code != 200:
        return {"status": resp.status_code}
    try:
        data = resp.json().get("data") or []
    except (ValueError, AttributeError):
        return {"status": 200, "unreadable": True}
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == model:
            return {k: v for k, v in entry.items() if isinstance(v, str | int | float | bool)}
    return {"served": sorted(str(e.get("id")) for e in data if isinstance(e, dict))}


def local_model_info(model: str) -> dict[str, Any]:
    """The embedded model's identity without starting it: the pinned file of a built-in, or a GGUF's size and time."""
    from allure.evaluator.local import BUILTIN_MODELS

    if model in BUILTIN_MODELS:
        b = BUILTIN_MODELS[model]
        return {"builtin": b.name, "file": b.filename, "sha256": b.sha256, "upstream": b.upstream}
    p = Path(model)
    if p.is_file():
        st = p.stat()
        return {"file": p.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return {"file": p.name, "missing": True}


def evaluator_params(spec: AuditSpec) -> dict[str, Any]:
    """The evaluator parameters a re-audit's labels depend on."""
    ev = spec.evaluator
    out: dict[str, Any] = {
        **ev.params(),
        "label_pattern": ev.label_pattern,
        "label_set": list(spec.label_set),
        "retrieval": spec.memory.retrieval.model_dump(mode="json"),
    }
    if ev.kind == "openai":
        out["base_url"] = redact_url(ev.base_url) if ev.base_url else ev.base_url
    if ev.kind == "local":
        out["deterministic"] = ev.local.deterministic
    return out


def model_name(spec: AuditSpec) -> str:
    """The model name requests carry (the embedded server's alias for ``local``)."""
    ev = spec.evaluator
    if ev.kind == "replay":
        return "replay"
    if ev.kind == "local":
        from allure.evaluator.local import LocalServerSettings

        return LocalServerSettings(model=ev.model).alias
    return ev.model


def model_info(spec: AuditSpec) -> dict[str, Any]:
    """Model information for the fingerprint (asks an ``openai`` server; never starts the embedded one).

    Raises:
        EvaluatorUnavailableError: an ``openai`` server cannot be reached.
    """
    ev = spec.evaluator
    if ev.kind == "replay":
        return {"kind": "replay"}
    if ev.kind == "local":
        return local_model_info(ev.model)
    base = ev.base_url or "https://api.openai.com/v1"
    return server_model_info(base, ev.model, ev.api_key_env)


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
    )
