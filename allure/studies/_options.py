"""The options every study takes: how it runs (:class:`RunOptions`) and where its items and memory
come from (:class:`StudyOptions`), and :func:`open_source`, which checks and opens them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, cast

from allure.errors import StudyError
from allure.memory import EpisodicMemory
from allure.studies._source import ItemSplit, StudySource, open_memory, resolve_source

Say = Callable[[str], None]
"""Receives status lines (the plan, one line per finished arm)."""

ArmProgress = Callable[[str, int, int], None]
"""Called with (arm name, done, total) as an arm's items are labelled."""


class RunOptions(TypedDict, total=False):
    """How a study runs; every key may be left out."""

    name: str | None
    """A study id to use instead of the one derived from its definition."""
    alpha: float
    """Family-wise significance level (Holm); 0.05 when left out."""
    say: Say | None
    """Receives status lines."""
    arm_progress: ArmProgress | None
    """Receives (arm, done, total) while an arm runs."""


class StudyOptions(RunOptions, total=False):
    """The options every study takes besides its own: where its items and memory come from, its
    context budget, and how it runs (:class:`RunOptions`); every key may be left out."""

    from_run: str | None
    """Audit run whose held-out items the study evaluates."""
    spec: str | Path | None
    """Audit spec (TOML) whose dataset the study evaluates instead."""
    split: ItemSplit | None
    """The items: ``heldout`` (default for ``from_run``), ``audit`` or ``all`` (default for ``spec``)."""
    memory: str | None
    """Memory location (default: the run's or the spec's)."""
    max_prompt_tokens: int | None
    """Context budget per prompt (default: the embedded server's context; unlimited for others)."""


def open_source(
    project: Path, options: StudyOptions, *, empty_memory: bool = False
) -> tuple[StudySource, EpisodicMemory, RunOptions]:
    """The items, the memory and the run options a study's ``options`` name.

    Args:
        project: The project folder.
        options: The study's options.
        empty_memory: Whether the kind runs on an empty memory (its class's ``empty_memory``, e.g.
            the learning curve, which reads the run's labelled items whether or not any was approved).

    Raises:
        TypeError: An option no study takes.
        StudyError: A context budget under 64 tokens, or an empty memory (unless ``empty_memory``).
    """
    unknown = sorted(set(options) - StudyOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    src = resolve_source(
        project,
        from_run=options.get("from_run"),
        spec_path=options.get("spec"),
        split=options.get("split"),
        memory=options.get("memory"),
    )
    max_prompt_tokens = options.get("max_prompt_tokens")
    if max_prompt_tokens is not None:
        if max_prompt_tokens < 64:
            raise StudyError(
                f"max_prompt_tokens={max_prompt_tokens} is too small",
                where="option --max-prompt-tokens",
                fix="pass at least 64 tokens, or leave it out for the server's context size",
            )
        ev = src.spec.evaluator.model_copy(update={"max_prompt_tokens": max_prompt_tokens})
        src.spec = src.spec.model_copy(update={"evaluator": ev})
    mem = open_memory(src)
    if mem.count() == 0 and not empty_memory:
        raise StudyError(
            "the memory holds no example: there is nothing to ablate or sample",
            where=src.memory_location,
            fix="run an audit and approve examples first (`allure audit`, `allure review`), or pass --memory",
        )
    run = {key: value for key, value in options.items() if key in RunOptions.__optional_keys__}
    return src, mem, cast(RunOptions, run)
