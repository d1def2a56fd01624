"""A re-audit for people and machines: Markdown summary, JUnit XML, webhook notification.

The JUnit file has one test case per gate check (``min``, ``max_drop``) and one per problem
type, so a CI system shows which check or which kind of task regressed. The webhook gets a
Slack-compatible JSON body (``{"text": ...}``); its URL is never written to a log or an error.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from allure.errors import ReauditError
from allure.metrics import SplitMetrics
from allure.reaudit._gate import metric_value
from allure.safe_text import markdown_cell as md
from allure.safe_text import markdown_code as code
from allure.safe_text import xml_text
from allure.urls import url_problem

if TYPE_CHECKING:
    from allure.reaudit._record import ReauditRecord

SUMMARY_METRICS = ("accuracy", "f1", "kappa")
"""Metrics the summary and the history show (with their 95% intervals)."""

MAX_FLIPS_LISTED = 20
"""Flipped items listed in the summary (all are in the JSON record)."""


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def metric_with_ci(metrics: SplitMetrics, name: str) -> str:
    """``0.812 [0.700, 0.900]`` (the value and its bootstrap interval)."""
    v = metric_value(metrics, name)
    ci = getattr(metrics.ci, name, None)
    if v is None:
        return "n/a"
    return f"{v:.3f} [{ci.low:.3f}, {ci.high:.3f}]" if ci else f"{v:.3f}"


def headline(record: ReauditRecord) -> str:
    """One line: verdict, set, accuracy, baseline."""
    word = "PASS" if record.status == "pass" else "REGRESSION"
    failed = ", ".join(c.name for c in record.gate.failed)
    acc = metric_with_ci(record.metrics, "accuracy")
    base = f" vs baseline {record.gate.baseline_id}" if record.gate.baseline_id else " (no baseline yet)"
    tail = f"; failed: {failed}" if failed else ""
    return f"allure re-audit {word}: set {record.set_name} v{record.set_version}, accuracy {acc}{base}{tail}"


def markdown_summary(record: ReauditRecord) -> str:
    """A Markdown summary fit for a pull-request comment."""
    g = record.gate
    icon = "✅" if record.status == "pass" else "❌"
    lines = [
        f"## {icon} allure re-audit: {'pass' if record.status == 'pass' else 'REGRESSION'}",
        "",
        f"Set {code(record.set_name)} v{record.set_version} ({record.stats.items} items), re-audit {code(record.id)} "
        f"at {record.created_at}; baseline: {code(g.baseline_id) if g.baseline_id else 'none yet'}.",
        "",
        "| metric | now [95% interval] |",
        "|---|---|",
        *(f"| {m} | {metric_with_ci(record.metrics, m)} |" for m in SUMMARY_METRICS),
        "",
        "| gate check | result | detail |",
        "|---|---|---|",
        *(f"| {md(c.name)} | {'pass' if c.passed else '**FAIL**'} | {md(c.message)} |" for c in g.checks),
        "",
    ]
    if record.probe is not None:
        word = "⚠️ **Provider drift:**" if record.probe.drift else "**Provider probe:**"
        lines += [f"{word} {md(record.probe.sentence())}.", ""]
    if record.fresh_reason:
        lines += [
            f"**Fresh calls** ({md(record.fresh_reason)}): every item was asked again; stored beside the old calls.",
            "",
        ]
    if record.changes:
        lines += ["**Changed since the last re-audit:** " + "; ".join(md(c) for c in record.changes), ""]
    if record.prompt_diff:
        lines += ["**Prompt diff against the baseline:** " + "; ".join(md(d) for d in record.prompt_diff), ""]
    if record.set_change:
        lines += [f"**Frozen set:** {md(record.set_change)}", ""]
    if g.flips_to_wrong:
        lines += [
            f"**{len(g.flips_to_wrong)} item(s) flipped from right to wrong** "
            f"({g.flips_to_right} from wrong to right):",
            "",
            "| item | problem type | reference | baseline | now | failure mode |",
            "|---|---|---|---|---|---|",
        ]
        for f in g.flips_to_wrong[:MAX_FLIPS_LISTED]:
            now = "unparsed" if f.label is None else str(f.label)
            lines.append(
                f"| {code(f.item_id)} | {md(f.problem_type)} | {md(f.reference_label)} | {md(f.baseline_label)} "
                f"| {md(now)} | {md(f.failure_mode)} |"
            )
        if len(g.flips_to_wrong) > MAX_FLIPS_LISTED:
            lines.append(
                f"| ... {len(g.flips_to_wrong) - MAX_FLIPS_LISTED} more in the JSON record | | | | | |"
            )
        lines.append("")
    elif g.baseline_id:
        lines += [f"No item flipped from right to wrong ({g.flips_to_right} from wrong to right).", ""]
    s = record.stats
    lines.append(
        f"Cost: {s.calls} evaluator call(s), {s.cache_hits} from the run store; "
        f"evaluator started: {'yes' if s.evaluator_started else 'no'}; model {code(record.fingerprint.model)}, "
        f"prompt {code(record.fingerprint.prompt_set)} ({record.fingerprint.prompt_hash[:8]}), "
        f"memory {record.fingerprint.memory_size} examples, allure {record.fingerprint.allure_version}."
    )
    return "\n".join(lines) + "\n"


def junit_xml(record: ReauditRecord) -> bytes:
    """JUnit XML: one test case per gate check and per problem type; failed checks carry a ``<failure>``."""
    g = record.gate
    suite_name = xml_text(f"allure.reaudit.{record.set_name}")
    failures = len(g.failed)
    root = ET.Element("testsuites", name="allure reaudit", tests=str(len(g.checks)), failures=str(failures))
    suite = ET.SubElement(
        root,
        "testsuite",
        name=suite_name,
        tests=str(len(g.checks)),
        failures=str(failures),
        errors="0",
        skipped="0",
        timestamp=xml_text(record.created_at),
        time=f"{record.stats.wall_s:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for k, v in (
        ("reaudit_id", record.id),
        ("baseline_id", g.baseline_id),
        ("set_version", str(record.set_version)),
        ("prompt_hash", record.fingerprint.prompt_hash),
        ("model", record.fingerprint.model),
        ("memory_version", record.fingerprint.memory_version),
        ("alpha", str(g.alpha)),
        ("generation", record.generation or "stored"),
        ("provider_drift", "unknown" if record.probe is None else str(record.probe.drift).lower()),
    ):
        ET.SubElement(props, "property", name=k, value=xml_text(v))
    flips_by_type: dict[str, list[str]] = {}
    for f in g.flips_to_wrong:
        flips_by_type.setdefault(xml_text(f.problem_type or "(none)"), []).append(
            xml_text(f"{f.item_id} ({f.failure_mode})")
        )
    for c in g.checks:
        kind = "problem_type" if c.kind == "problem_type" else "gate"
        name = xml_text(c.name.removeprefix("problem_type ") if c.kind == "problem_type" else c.name)
        message = xml_text(c.message)
        case = ET.SubElement(suite, "testcase", classname=f"{suite_name}.{kind}", name=name, time="0")
        if not c.passed:
            fail = ET.SubElement(case, "failure", message=message, type="regression")
            detail = [message]
            if c.kind == "problem_type":
                flipped = flips_by_type.get(name, [])
                if flipped:
                    detail.append("flipped right->wrong: " + ", ".join(flipped))
            fail.text = "\n".join(detail)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = message
    if record.probe is not None:
        case = ET.SubElement(
            suite, "testcase", classname=f"{suite_name}.probe", name="provider drift", time="0"
        )
        out = ET.SubElement(case, "system-out" if not record.probe.drift else "system-err")
        out.text = xml_text(record.probe.sentence())
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def interrupted_json(target: str, reason: str) -> bytes:
    """The ``--json`` document of a re-audit that could not finish (exit status 3): marked
    ``interrupted``, with the reason, so that CI shows something."""
    import json

    from allure.models import utcnow

    doc = {"status": "interrupted", "target": target, "reason": reason, "created_at": utcnow()}
    return json.dumps(doc, indent=2).encode("utf-8")


def interrupted_junit(target: str, reason: str) -> bytes:
    """JUnit XML of a re-audit that could not finish (exit status 3): one test case in error."""
    name = xml_text(f"allure.reaudit.{target}")
    root = ET.Element("testsuites", name="allure reaudit", tests="1", failures="0", errors="1")
    suite = ET.SubElement(root, "testsuite", name=name, tests="1", failures="0", errors="1", skipped="0")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="status", value="interrupted")
    case = ET.SubElement(
        suite, "testcase", classname=f"{name}.evaluator", name="evaluator available", time="0"
    )
    err = ET.SubElement(
        case, "error", message=xml_text(reason.splitlines()[0] if reason else ""), type="interrupted"
    )
    err.text = xml_text(reason)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def resolve_webhook(spec: str) -> str:
    """The webhook URL: ``spec`` itself, or the value of environment variable ``NAME`` for ``env:NAME``.

    Raises:
        ReauditError: the variable is not set, or the URL is not http(s) (the URL is not echoed).
    """
    url = spec.strip()
    if not url:
        raise ReauditError(
            "the webhook URL is empty",
            where="--notify",
            fix="pass an http(s) URL such as https://hooks.example/T0/B0, or env:NAME; leave --notify out for no webhook",
        )
    if url.startswith("env:"):
        name = url[4:]
        if not name:
            raise ReauditError(
                "--notify env: names no environment variable",
                where="--notify",
                fix="pass env:NAME, NAME the variable that holds the webhook URL",
            )
        url = os.environ.get(name, "")
        if not url:
            raise ReauditError(
                f"environment variable {name} is not set",
                where="--notify",
                fix=f"export {name}=https://hooks.example/... or pass the URL itself",
            )
    problem = url_problem(url)
    if problem:
        raise ReauditError(
            f"the webhook URL is not usable: {problem}",
            where="--notify",
            fix="pass an http(s) URL such as https://hooks.example/T0/B0, or env:NAME naming a variable that holds one",
        )
    return url


def notify_text(record: ReauditRecord) -> str:
    """The webhook message: the headline, failed checks, flipped items (Slack ``mrkdwn``)."""
    lines = [headline(record)]
    for c in record.gate.failed:
        lines.append(f"• {c.name}: {c.message}")
    flips = record.gate.flips_to_wrong
    if flips:
        shown = ", ".join(f"{f.item_id} ({f.problem_type}, {f.failure_mode})" for f in flips[:10])
        more = f" and {len(flips) - 10} more" if len(flips) > 10 else ""
        lines.append(f"Flipped right->wrong: {shown}{more}")
    if record.changes:
        lines.append("Changed: " + "; ".join(record.changes))
    return "\n".join(lines)


def notify(url: str, record: ReauditRecord, *, timeout_s: float = 10.0) -> None:
    """POST the summary to a webhook as JSON (``text`` for Slack, plus machine-readable fields).

    Raises:
        ReauditError: the POST failed or was refused (the message names no URL).
    """
    from allure._http import HttpError, post_json

    body = {
        "text": notify_text(record),
        "allure": {
            "reaudit_id": record.id,
            "set": record.set_name,
            "set_version": record.set_version,
            "status": record.status,
            "failed_checks": [c.name for c in record.gate.failed],
            "accuracy": metric_value(record.metrics, "accuracy"),
        },
    }
    try:
        resp = post_json(url, body, timeout_s=timeout_s)
    except HttpError as exc:
        raise ReauditError(
            f"the webhook POST failed ({exc.kind})", where="--notify", fix="check the webhook URL"
        ) from None
    if resp.status_code >= 300:
        raise ReauditError(
            f"the webhook answered HTTP {resp.status_code}", where="--notify", fix="check the webhook URL"
        )


def write_record_files(record: ReauditRecord, project: Path) -> dict[str, Path]:
    """Write ``summary.md`` and ``reaudit.json`` under ``.allure/reaudits/ID/`` (atomically)."""
    from allure._io import atomic_write_bytes
    from allure.reaudit._record import REAUDITS_DIR

    folder = project / REAUDITS_DIR / record.id
    md, js = folder / "summary.md", folder / "reaudit.json"
    atomic_write_bytes(md, markdown_summary(record).encode("utf-8"))
    atomic_write_bytes(js, record.model_dump_json(indent=2).encode("utf-8"))
    return {"summary": md, "json": js}
