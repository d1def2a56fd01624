"""``allure judge export --format openai-messages``: the judge as plain chat messages any stack can send.

``openai-messages.json`` holds, per ICL block, the messages of a request (system turn, the few-shot
user/assistant turns, the user turn as a template with ``{task}``, ``{response}``, ...
placeholders in Python ``str.format`` syntax, literal braces doubled), which items get the block,
the request's sampling fields, the regex that reads the label from the reply, and the calibration
as a short formula with its numbers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from allure.judge._fixed import FittedValues
from allure.labels import label_list
from allure.models import IclExample

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.memory import RetrievalPolicy

PARSED = "label = the label the reply's regex captures (parsed_label)."
"""The formula of ``none``; a mode's own is its :attr:`~allure.calibrations.CalibratorFacts.formula`."""


def formula(mode: str) -> str:
    """What the calibration ``mode`` does to a reply, in words (``none``: :data:`PARSED`)."""
    from allure.calibrations import NONE, calibrator_class

    if mode == NONE:
        return PARSED
    return (
        calibrator_class(mode).formula
        or f"allure's calibration mode {mode!r} with the values here (no formula stated)."
    )


def _applies_to(policy: RetrievalPolicy, examples: Sequence[IclExample]) -> str:
    if not examples:
        return "an item for which the retrieval rule finds no example"
    kind = policy.kind
    if kind == "same_group":
        return f"items whose group is {examples[0].group!r}"
    if kind == "same_problem_type":
        return f"items whose problem type is {examples[0].problem_type!r}"
    if kind == "nearest":
        where = (
            "all items"
            if policy.group_by == "none"
            else f"items of problem type {examples[0].problem_type!r}"
        )
        return (
            f"{where} (nearest block; an item below min_similarity {policy.min_similarity:g} gets no example)"
        )
    return "every item"


def _requote(text: str, fill: dict[str, str]) -> str:
    """Fill ``fill``'s placeholders, keep the others as ``{name}`` and literal braces doubled."""
    from string import Formatter

    out = []
    for literal, name, spec, conv in Formatter().parse(text):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is None:
            continue
        if name in fill:
            out.append(fill[name].replace("{", "{{").replace("}", "}}"))
        else:
            out.append("{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)


def openai_messages(
    spec: AuditSpec,
    policy: RetrievalPolicy,
    blocks: dict[str, list[str]],
    examples: list[IclExample],
    fitted: FittedValues,
    readout: str | None = None,
) -> str:
    """``openai-messages.json``'s text (see the module); ``readout``: what the judge's learned read-out
    is (its ``describe``), when it applies one: these messages then give a label before it, and the
    file says so."""
    from allure.config import label_pattern_for
    from allure.prompts import load_prompt_set

    ev = spec.evaluator
    ps = load_prompt_set(ev.prompt).with_context(labels=label_list(spec.label_set), rubric=ev.rubric)
    by_id = {ex.id: ex for ex in examples}
    out_blocks = []
    for name, ids in sorted({**blocks, "zero-shot": []}.items()):
        exs = [by_id[i] for i in ids if i in by_id]
        turns = [{"role": "system", "content": ps.system_message().content}]
        for m in ps.example_messages(exs):
            turns.append({"role": "assistant" if m.type == "ai" else "user", "content": m.content})
        turns.append({"role": "user", "content": _requote(ps.user, {"labels": ps.labels})})
        out_blocks.append(
            {
                "block": name,
                "example_ids": ids,
                "applies_to": _applies_to(policy, exs),
                "messages": turns,
                "p_cf": list(fitted.p_cf.get(name, [])) or None,
            }
        )
    doc = {
        "about": (
            "Send, per item, the messages of its block with the last (user) turn filled by Python "
            "str.format (task, response, response_b, gold_answers: answers joined by ' OR ', rubric), "
            "with the request fields below; read the label with label_regex (the last match), then apply "
            "the calibration formula."
        ),
        "request": {
            "model": ev.model,
            "temperature": ev.temperature,
            "max_completion_tokens": ev.max_tokens,
            "seed": ev.seed,
            "logprobs": ev.logprobs,
            "top_logprobs": 5 if ev.logprobs else None,
        },
        "label_set": list(spec.label_set),
        "positive_label": spec.positive_label,
        "label_regex": label_pattern_for(spec, ps.assistant),
        "retrieval": policy.model_dump(mode="json"),
        "calibration": {
            "mode": fitted.mode,
            "formula": formula(fitted.mode),
            "prior": None if fitted.prior is None else list(fitted.prior),
            "offset": fitted.offset,
            **fitted.values,
        },
        "blocks": out_blocks,
    }
    if readout is not None:
        doc["readout"] = {
            "describe": readout,
            "note": (
                "this judge's labels come from a learned read-out applied after the calibration (readout.json, "
                "vote.json when it reads the memory's vote); these messages and formula give the label before "
                "it, which can differ: label with allure (allure judge label) to get the audited judge's"
            ),
        }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
