"""One family of adoption decisions a run (issue 41 item 0; docs/DECISIONS.md).

Before any candidate is scored, a run declares what it may adopt: the calibration modes ``auto``
tests against ``none``, the learned read-out ``auto`` tests against the parsed labels, and each new
memory version the guard tests against the active judge, up to ``max_iterations``. The run's
family-wise level ``alpha`` (``[loop] guard_alpha``) is split across these *kinds* of decision by
Bonferroni, in equal shares:

- ``calibration``: its share is the level of Holm's procedure over the modes tested in a pass;
- ``readout``: its share is the level of the one test of a pass;
- ``memory``: its share is split over the versions the run may test and, for each, over the
  configurations a pass may end with (its memory with each calibration mode ``auto`` could pick,
  with or without the read-out): the guard tests the configuration the pass chose on the same
  items, so it is counted as one of that many tests (a union bound over what could be chosen).

The shares sum to ``alpha``, so, by the union bound, the chance that the run adopts anything that
is not better is at most ``alpha``, whatever the dependence between the tests (they read the same
items). A kind the spec does not enable takes no share. In passes after the first, a pass's own
calibration and read-out choices select the configuration the guard then tests (counted above);
they use their kind's level too, so one line says one rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from allure.metrics._common import MetricsError

DecisionKind = Literal["calibration", "readout", "memory"]
"""What a decision may adopt: a calibration mode, the learned read-out, a new memory version."""

KINDS: tuple[DecisionKind, ...] = ("calibration", "readout", "memory")


@dataclass(frozen=True)
class DecisionPoint:
    """One kind of decision the run declared, and the level each of its tests gets."""

    kind: DecisionKind
    share: float
    """The part of the run's ``alpha`` this kind may spend."""
    tests: int
    """How many one-sided tests the share covers (calibration: the modes, Holm within a pass;
    read-out: 1; memory: versions times configurations)."""
    level: float
    """What a caller compares with: calibration: the level of Holm's procedure over the modes; the
    read-out: the test's level; memory: the guard's level for one version (``share / tests``)."""


@dataclass(frozen=True)
class DecisionFamily:
    """The run's declared family: every kind it may adopt, and each one's level (module docstring)."""

    alpha: float
    points: tuple[DecisionPoint, ...] = ()

    @classmethod
    def declare(
        cls,
        alpha: float,
        *,
        calibration_modes: int = 0,
        readout: bool = False,
        memory_versions: int = 0,
    ) -> DecisionFamily:
        """The family of a run, from what its spec lets it adopt.

        Args:
            alpha: The run's family-wise level (``[loop] guard_alpha``).
            calibration_modes: Modes ``calibration = "auto"`` tests against ``none`` (0: not ``auto``).
            readout: Whether ``readout = "auto"`` tests the read-out against the parsed labels.
            memory_versions: New memory versions the guard may test (0: the guard is off).

        Raises:
            MetricsError: ``alpha`` is not in (0, 1), or a count is negative.
        """
        if not 0.0 < alpha < 1.0:
            raise MetricsError(
                f"alpha={alpha} must lie strictly between 0 and 1",
                where="argument 'alpha' ([loop] guard_alpha)",
                fix="pass alpha=0.05",
            )
        if calibration_modes < 0 or memory_versions < 0:
            raise MetricsError(
                f"calibration_modes={calibration_modes}, memory_versions={memory_versions}: counts cannot be negative",
                where="DecisionFamily.declare",
                fix="pass 0 for a kind the run does not decide",
            )
        configurations = (1 + calibration_modes) * (2 if readout else 1)
        tests: dict[DecisionKind, int] = {
            "calibration": calibration_modes,
            "readout": 1 if readout else 0,
            "memory": memory_versions * configurations,
        }
        present = [k for k in KINDS if tests[k] > 0]
        share = alpha / len(present) if present else 0.0
        points = tuple(
            DecisionPoint(k, share, tests[k], share / tests[k] if k == "memory" else share) for k in present
        )
        return cls(alpha, points)

    def point(self, kind: DecisionKind) -> DecisionPoint | None:
        """The declared point of ``kind`` (``None``: the run does not decide it)."""
        return next((p for p in self.points if p.kind == kind), None)

    def level(self, kind: DecisionKind) -> float:
        """The level a test of ``kind`` is compared with (``alpha`` itself for a kind not declared:
        a caller outside a run, e.g. a study arm, deciding alone)."""
        p = self.point(kind)
        return self.alpha if p is None else p.level

    @property
    def candidates(self) -> int:
        """One-sided tests declared in all (calibration modes of a pass, the read-out, and the memory
        versions times their configurations)."""
        return sum(p.tests for p in self.points)

    def adjusted(self, kind: DecisionKind) -> str:
        """How a decision line states its level: ``alpha 0.0167 (read-out's share of the run's 0.05)``."""
        return f"alpha {self.level(kind):.3g} ({_NAMES[kind]}'s share of the run's {self.alpha:g})"

    def describe(self) -> str:
        """``decisions: 8 candidates declared, family-wise alpha 0.05 (calibration: 3 modes, Holm at
        0.0167; read-out: 1 test at 0.0167; memory: 3 versions x 8 configurations at 0.000694)``."""
        if not self.points:
            return "decisions: none declared (no calibration or read-out auto, guard off)"
        parts = []
        for p in self.points:
            if p.kind == "calibration":
                parts.append(
                    f"calibration: {p.tests} mode{'' if p.tests == 1 else 's'}, Holm at {p.level:.3g}"
                )
            elif p.kind == "readout":
                parts.append(f"read-out: 1 test at {p.level:.3g}")
            else:
                tests = "1 test" if p.tests == 1 else f"{p.tests} version x configuration tests"
                parts.append(f"memory: {tests} at {p.level:.3g}")
        plural = "" if self.candidates == 1 else "s"
        return (
            f"decisions: {self.candidates} candidate{plural} declared, family-wise alpha {self.alpha:g} "
            f"({'; '.join(parts)})"
        )


_NAMES: dict[DecisionKind, str] = {"calibration": "calibration", "readout": "read-out", "memory": "memory"}
