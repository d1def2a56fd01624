"""A study's source built from an audit spec the way the integration tests build it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.graphs.prepare import PreparedAudit
    from allure.studies import StudySource


def study_source(spec: AuditSpec, root: Path) -> tuple[PreparedAudit, StudySource]:
    """The audit's prepared items (read from ``root``) and a :class:`StudySource` over all of them,
    with the memory at ``root/memory`` and ``audit.toml`` as the recorded spec. The imports are
    lazy, as in the tests that call this, so collecting them stays cheap."""
    from allure.graphs.prepare import prepare_audit
    from allure.studies import StudySource

    prepared = prepare_audit(spec, root)
    src = StudySource(
        spec=spec,
        items=prepared.items,
        reference=prepared.references,
        splits=prepared.splits,
        source={"spec": "audit.toml"},
        memory_location=str(root / "memory"),
    )
    return prepared, src
