"""Scheduled re-audits: frozen item sets, the regression gate, history (``allure freeze|reaudit|history``).

- :func:`freeze_run`, :func:`freeze_items`, :func:`load_frozen_set`: named, versioned item sets.
- :func:`run_reaudit`: score a set with the evaluator a spec names now; gate against a baseline.
- :func:`markdown_summary`, :func:`junit_xml`, :func:`notify`: outputs for PRs, CI and chat;
  :class:`ReauditOutputs` (``run_reaudit(outputs=...)``) writes them and POSTs the webhook.
- :func:`probe_size`, :func:`judge_drift`: the provider-drift probe (fresh calls beside stored ones).
- :func:`history_rows`, :func:`history_csv`, :func:`history_plot`: a set's re-audits over time.
"""

from allure.reaudit._deliver import ReauditOutputs, deliver, deliver_interrupted
from allure.reaudit._fingerprint import Fingerprint, changes, prompt_diff
from allure.reaudit._frozen import (
    FrozenItem,
    FrozenSet,
    freeze_items,
    freeze_run,
    load_frozen_set,
    set_content_hash,
    spec_items,
)
from allure.reaudit._gate import CheckKind, Flip, GateCheck, GateResult, GateStatus, evaluate_gate
from allure.reaudit._history import HistoryRow, history_csv, history_plot, history_rows
from allure.reaudit._lock import LOCK_FILE, ReauditBusyError, reaudit_lock
from allure.reaudit._outputs import (
    headline,
    interrupted_json,
    interrupted_junit,
    junit_xml,
    markdown_summary,
    notify,
    notify_text,
    resolve_webhook,
)
from allure.reaudit._probe import ProbeResult, judge_drift, probe_size
from allure.reaudit._record import (
    EXIT_BAD_INPUT,
    EXIT_BUSY,
    EXIT_PASS,
    EXIT_REGRESSION,
    EXIT_UNAVAILABLE,
    ReauditRecord,
    ReauditStats,
)
from allure.reaudit._run import ReauditOutcome, load_records, run_reaudit

__all__ = [
    "ReauditOutputs",
    "deliver",
    "deliver_interrupted",
    "EXIT_BAD_INPUT",
    "EXIT_BUSY",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "EXIT_UNAVAILABLE",
    "LOCK_FILE",
    "CheckKind",
    "Fingerprint",
    "Flip",
    "FrozenItem",
    "FrozenSet",
    "GateCheck",
    "GateResult",
    "GateStatus",
    "HistoryRow",
    "ProbeResult",
    "ReauditBusyError",
    "ReauditOutcome",
    "ReauditRecord",
    "ReauditStats",
    "changes",
    "evaluate_gate",
    "freeze_items",
    "freeze_run",
    "headline",
    "history_csv",
    "history_plot",
    "history_rows",
    "interrupted_json",
    "interrupted_junit",
    "judge_drift",
    "junit_xml",
    "load_frozen_set",
    "load_records",
    "reaudit_lock",
    "markdown_summary",
    "notify",
    "notify_text",
    "probe_size",
    "prompt_diff",
    "resolve_webhook",
    "run_reaudit",
    "set_content_hash",
    "spec_items",
]
