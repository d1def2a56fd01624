"""One error hierarchy for allure.

Every error says what was wrong, where (file, line, field) and how to fix it.
The CLI turns any :class:`AllureError` into a message on stderr and its ``exit_code``
(2 for bad input or state; 1 for a run that failed, see :class:`EvaluationFailedError`).
"""

from __future__ import annotations

import difflib


class AllureError(Exception):
    """Base class of every error allure raises on purpose."""

    exit_code: int = 2
    """The CLI's exit status for this error."""

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.message = message
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        parts = []
        if self.where:
            parts.append(f"{self.where}: ")
        parts.append(self.message)
        if self.fix:
            parts.append(f"\n  fix: {self.fix}")
        return "".join(parts)


def closest_name(name: str, valid: list[str]) -> str | None:
    """The valid name closest to a misspelt ``name``, for a "did you mean" fix (``None`` when none is close)."""
    lowered = {v.lower(): v for v in valid}
    if name.lower() in lowered:
        return lowered[name.lower()]
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


class SpecError(AllureError):
    """The audit spec (TOML) or a setting is invalid."""


class DatasetError(AllureError):
    """A dataset file is missing, malformed or does not match the column mapping."""


class GoldCheckError(AllureError):
    """The gold check is misconfigured (e.g. a regex that does not compile)."""


class EvaluatorError(AllureError):
    """The evaluator cannot be built or reached."""


class EvaluationFailedError(EvaluatorError):
    """Too many evaluator calls of a pass failed: the run stopped with status ``failed`` (exit status 1)."""

    exit_code = 1


class ModelFilesError(EvaluatorError):
    """The embedded model's files are missing or corrupt."""


class MemoryStoreError(AllureError):
    """The episodic memory is missing, corrupt or was given bad input."""


class StoreError(AllureError):
    """The run store (SQLite) is missing, corrupt or does not know a run."""


class OutputError(AllureError):
    """A file allure was asked to write names a folder, or lies under a file."""


class ReviewError(AllureError):
    """A review decision is invalid or refers to an unknown candidate."""


class EvaluatorUnavailableError(EvaluatorError):
    """The evaluator could not be reached or started (a server that is down, a model that will not load)."""


class ReauditError(AllureError):
    """A re-audit was given bad input: an unknown frozen set, an invalid gate, a baseline of another set."""


class RunBusyError(StoreError):
    """Another live process holds the run's lease (one writer per run)."""


class StudyError(AllureError):
    """A study was given bad input (unknown study, empty memory, bad sizes, unknown cluster)."""


class ApiArgumentError(AllureError, TypeError):
    """A Python API call was given an argument of the wrong type (``allure.audit(5)``).

    Also a :class:`TypeError`, which is what Python code expects of a wrong argument type."""


class JudgeError(AllureError):
    """An exported judge (a bundle) cannot be written, read or applied: an edited or missing bundle,
    one from a newer allure, data without the columns its prompt needs, or a run that cannot be exported."""


class Terminated(SystemExit):
    """The process was asked to stop by a signal (SIGTERM: a scheduler's timeout, ``kill``, a service
    stopping) while it had something to unwind: a run it ends this way is *interrupted* (resumable),
    as after Ctrl-C, not failed. Its code is the shell's, ``128 + signal number``."""
