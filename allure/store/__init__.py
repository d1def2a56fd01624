"""The run store: one SQLite database per project directory (``.allure/allure.db``), or one
PostgreSQL database shared by a team (``[store] url`` / ``ALLURE_STORE_URL``; see ``_url`` and
``_backend``).

It is the run log and the evaluator cache at once: every evaluator call is written as soon as
it returns, and an identical prompt (same model and parameters) is never sent twice. The
schema carries a version (``PRAGMA user_version``); opening an older database migrates it in
place. :class:`RunStore` is the one handle; its parts live in one module per concern
(``_runs``: runs and items, ``_calls``: the call cache, ``_review``: candidates and decisions,
``_review_claims``: reviewers' claims on candidates and double review,
``_metrics``: metrics, ``_reaudits``: frozen sets and re-audits, ``_leases``: one writer per run
and claims on in-flight prompts; ``_schema``: versions and migrations).
"""

from allure.store._backend import advisory_key
from allure.store._heartbeat import HEARTBEAT_S
from allure.store._leases import LEASE_STALE_S, LeaseHolder, RunLease, pid_runs
from allure.store._pg_faults import ConnectionLostError, as_lost, pg_connect, reconnect_s
from allure.store._readouts import current_readout, pass_readout, readout_refit, refit_key
from allure.store._review import CLAIM_STALE_S, CandidateStatus, verdict_of
from allure.store._review_claims import CLAIM_BATCH, DoubleReview, ReviewClaims
from allure.store._runs import RunRecord, RunStatus
from allure.store._schema import SCHEMA_VERSION, schema_version
from allure.store._store import DEFAULT_DB, RunStore, open_project_store, project_db_path
from allure.store._url import StoreSpec, display_url, remember_store_url, store_url

__all__ = [
    "reconnect_s",
    "ConnectionLostError",
    "as_lost",
    "pg_connect",
    "pid_runs",
    "DEFAULT_DB",
    "HEARTBEAT_S",
    "LEASE_STALE_S",
    "SCHEMA_VERSION",
    "CLAIM_BATCH",
    "CLAIM_STALE_S",
    "CandidateStatus",
    "DoubleReview",
    "ReviewClaims",
    "verdict_of",
    "LeaseHolder",
    "RunLease",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "current_readout",
    "pass_readout",
    "readout_refit",
    "refit_key",
    "StoreSpec",
    "advisory_key",
    "display_url",
    "open_project_store",
    "project_db_path",
    "remember_store_url",
    "store_url",
    "schema_version",
]
