"""A reviewer process for the multi-reviewer tests: claims and decides candidates through the library
until none is left for it, then prints the ids it decided (JSON).

``python -m tests.store.reviewer_worker DB URL RUN REVIEWER BATCH START`` (``URL`` ``-`` for SQLite;
``START``: the Unix time at which to begin, so that the processes start together; each decision
then takes a few milliseconds, as a person's would take longer, so that the reviewers overlap).
"""

from __future__ import annotations

import json
import sys
import time

from allure.models import ReviewDecision
from allure.store import ReviewClaims, RunStore


def main(db: str, url: str, run_id: str, reviewer: str, batch: int, start: float) -> list[str]:
    """Decide (approve) every candidate this reviewer gets; returns their ids in order."""
    store = RunStore(db, create=False, url=None if url == "-" else url)
    time.sleep(max(0.0, start - time.time()))
    decided: list[str] = []
    with ReviewClaims(store, run_id, reviewer, batch=batch) as claims:
        while got := claims.take():
            for ex in got:
                dec = ReviewDecision(candidate_id=ex.id, decision="approve", reviewer=reviewer)
                store.record_decision(run_id, dec, claim_token=claims.token)
                decided.append(ex.id)
                time.sleep(0.005)
    store.close()
    return decided


if __name__ == "__main__":
    print(
        json.dumps(
            main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
        )
    )
