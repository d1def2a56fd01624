"""allure: audit and improve LLM-as-a-judge evaluators with the ALLURE loop.

Python API (imported on first use): :func:`open_project` gives a project's runs, whose items,
verdicts, metrics and candidates are tables with ``to_pandas()``; :func:`audit` starts an audit
from a spec file, a spec dict or a DataFrame plus a spec dict; :func:`load_judge` loads an exported
judge (``allure judge export``) that labels new data (``label(df)``, ``as_runnable()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.api import Project, Run, Table, audit, open_project
    from allure.judge import load_judge

__version__ = "0.1.0"

_WHERE = {
    **{name: "api" for name in ("Project", "Run", "Table", "audit", "open_project")},
    "load_judge": "judge",
}

__all__ = ["Project", "Run", "Table", "__version__", "audit", "load_judge", "open_project"]

__getattr__ = lazy_exports(__name__, _WHERE)
