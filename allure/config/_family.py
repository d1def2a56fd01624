"""The run's declared family of adoption decisions, from its spec (issue 41 item 0; docs/DECISIONS.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allure.config._spec import AuditSpec
    from allure.metrics import DecisionFamily


def decision_family(spec: AuditSpec) -> DecisionFamily:
    """The run's declared family of adoption decisions (issue 41 item 0; docs/DECISIONS.md), from the
    spec alone, so the pass pipeline, the read-out step and the guard read the same levels:
    ``calibration = "auto"`` where it applies (its modes other than ``none``: ``contextual``,
    ``prior``, and ``offset`` with two labels), ``readout = "auto"`` (one test), and, with the guard
    on, up to ``max_iterations`` new memory versions (a run that starts with a memory tests that many;
    one that starts empty, one fewer: the count stays on the safe side)."""
    from allure.metrics import DecisionFamily

    ev, loop = spec.evaluator, spec.loop
    decides = loop.folds >= 2 or loop.dev_fraction > 0
    modes = (3 if len(spec.label_set) == 2 else 2) if ev.applied_calibration == "auto" and decides else 0
    return DecisionFamily.declare(
        loop.guard_alpha,
        calibration_modes=modes,
        readout=ev.applied_readout == "auto",
        memory_versions=loop.max_iterations if loop.guard else 0,
    )
