"""The run store: one SQLite database per project directory (``.allure/allure.db``).

It is the run log and the evaluator cache at once: every evaluator call is written
as soon as it returns, and an identical prompt (same model and parameters) is never
sent twice.
"""

from allure.store._db import DEFAULT_DB, CandidateStatus, RunRecord, RunStatus, RunStore, project_db_path

__all__ = ["DEFAULT_DB", "CandidateStatus", "RunRecord", "RunStatus", "RunStore", "project_db_path"]
