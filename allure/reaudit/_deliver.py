"""Where a re-audit's result goes besides the run store: JUnit XML, the record as JSON, the Markdown
summary and a webhook (:class:`ReauditOutputs`), written by the library so that a caller of
:func:`~allure.reaudit.run_reaudit` gets the same files as ``allure reaudit`` (whose options are
only these fields).

Bad outputs are refused before anything runs (:meth:`ReauditOutputs.checked`); a re-audit that
could not finish (the evaluator unavailable) still writes an ``interrupted`` JUnit and JSON file, so
CI shows what happened; a failed webhook never changes the result: it is said, and kept as the
record's ``notify_error``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from allure.errors import ReauditError
from allure.reaudit._outputs import (
    interrupted_json,
    interrupted_junit,
    junit_xml,
    markdown_summary,
    notify,
    resolve_webhook,
)
from allure.reaudit._record import ReauditRecord


@dataclass(frozen=True)
class ReauditOutputs:
    """The files and the webhook a re-audit delivers its result to (each optional)."""

    junit: Path | None = None
    """JUnit XML: a test case per gate check and problem type (``--junit``)."""
    json: Path | None = None
    """The re-audit record as JSON (``--json``)."""
    markdown: Path | None = None
    """The Markdown summary, for a PR comment (``--markdown``)."""
    notify: str | None = None
    """A webhook URL, or ``env:NAME`` to read it from ``$NAME``, POSTed the summary (``--notify``)."""

    def checked(self) -> ReauditOutputs:
        """These outputs with every path checked writable and the webhook resolved to its URL.

        Raises:
            OutputError: a path cannot be written (nothing is created).
            ReauditError: the webhook's variable is unset or its URL is not http(s).
        """
        from allure._io import check_writable

        for option, path in (("--junit", self.junit), ("--json", self.json), ("--markdown", self.markdown)):
            if path is not None:
                check_writable(path, option)
        return replace(
            self, notify=resolve_webhook(self.notify) if self.notify is not None else None
        )  # "" refused


def deliver(
    record: ReauditRecord, outputs: ReauditOutputs, *, fresh: bool, say: Callable[[str], None]
) -> tuple[ReauditRecord, dict[str, Path]]:
    """Notify the webhook (for a ``fresh`` record: one just made, not a skipped re-audit's last one),
    then write the files; the record as delivered (with ``notify_error`` when the POST failed) and
    the files written by name (``junit``, ``json``, ``markdown``)."""
    from allure._io import atomic_write_bytes

    if fresh and outputs.notify:
        try:
            notify(outputs.notify, record)
            say("notified the webhook")
        except ReauditError as exc:  # a chat outage must not hide the gate's result
            say(f"warning: {exc.render()}")
            record = record.model_copy(update={"notify_error": exc.render()})
    texts = {
        "junit": (outputs.junit, lambda: junit_xml(record)),
        "json": (outputs.json, lambda: record.model_dump_json(indent=2).encode("utf-8")),
        "markdown": (outputs.markdown, lambda: markdown_summary(record).encode("utf-8")),
    }
    written: dict[str, Path] = {}
    for name, (path, text) in texts.items():
        if path is not None:
            atomic_write_bytes(path, text())
            written[name] = path
    return record, written


def deliver_interrupted(target: str, reason: str, outputs: ReauditOutputs) -> dict[str, Path]:
    """Write the ``interrupted`` JUnit and JSON files of a re-audit that could not finish."""
    from allure._io import atomic_write_bytes

    written: dict[str, Path] = {}
    if outputs.junit is not None:
        atomic_write_bytes(outputs.junit, interrupted_junit(target, reason))
        written["junit"] = outputs.junit
    if outputs.json is not None:
        atomic_write_bytes(outputs.json, interrupted_json(target, reason))
        written["json"] = outputs.json
    return written
