"""The audited judge as an artifact: exported from a finished run as a versioned bundle, loaded
back, and applied to new data with the audit's own pass.

- :func:`export_judge` (``allure judge export``): a run's adopted (or zero-shot) judge as a folder
  (``judge.toml``, prompts, examples, card), named by its content hash; ``openai-messages`` adds
  the plain chat messages any stack can send.
- :func:`load_judge` (``allure.load_judge``): the bundle read and checked, a :class:`JudgeBundle`
  with ``label(df)``, ``alabel``, ``as_runnable()`` (a LangChain ``Runnable``) and ``card``.
- :func:`label_data` (``allure judge label``): a data file labelled with the judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.judge._api import Judge, load_judge
    from allure.judge._export import Exported, ExportFormat, export_judge
    from allure.judge._judge import JudgeBundle
    from allure.judge._label import Labelled, label_data, label_items
    from allure.judge._pass import JudgePassOutcome, judge_pass
    from allure.judge._runnable import JudgeRunnable, JudgeVerdict

_WHERE = {
    "Exported": "_export",
    "ExportFormat": "_export",
    "export_judge": "_export",
    "JudgeBundle": "_judge",
    "Judge": "_api",
    "load_judge": "_api",
    "Labelled": "_label",
    "label_data": "_label",
    "label_items": "_label",
    "JudgePassOutcome": "_pass",
    "judge_pass": "_pass",
    "JudgeRunnable": "_runnable",
    "JudgeVerdict": "_runnable",
}

__all__ = [
    "ExportFormat",
    "Exported",
    "Judge",
    "JudgeBundle",
    "JudgePassOutcome",
    "JudgeRunnable",
    "JudgeVerdict",
    "Labelled",
    "export_judge",
    "label_data",
    "judge_pass",
    "label_items",
    "load_judge",
]

__getattr__ = lazy_exports(__name__, _WHERE)
