"""The jobs a worker sends, claimed in the run store as the send loop reads them.

Several workers (processes, hosts) that share a store split a pass's uncached prompts by claiming
them (``RunStore.claim_calls``). A :class:`ClaimFeed` is the iterator the send loop's workers take
their next job from:

- alone on the store, it claims every prompt at once (one round trip) and hands them out in order;
  every :attr:`check_s` it looks whether another worker has joined;
- shared (from the start, or once another worker joins: it then releases the claims it has not
  handed out), it claims :attr:`batch` prompts at a time, the next batch when the last is handed
  out, inside the same send loop: no worker waits for the end of a batch, no connection is closed
  between batches.

The feed ends when nothing more can be claimed: the prompts left are stored by, or in flight in,
another worker (the runner links them once stored). Claims are kept until the runner releases
them all at the end of the pass; a call is stored before that, so a worker that finds a prompt
claimed by a live worker finds it stored once that worker has sent it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allure.evaluator._prompting import Job
    from allure.store import RunStore


def others_alive(store: RunStore, token: str) -> bool:
    """Whether a live worker other than the lease ``token`` shares the store."""
    return any(h.token != token and h.alive() for h in store.lease_holders())


class ClaimFeed:
    """The jobs among ``jobs`` (distinct prompts, in send order) that this worker claims, as it sends them.

    Args:
        store: The run store the claims are kept in.
        token: This worker's lease token.
        jobs: The jobs to claim and hand out.
        batch: Prompts claimed at a time while shared.
        check_s: How often a worker alone looks for another.
        shared: Whether another live worker shares the store already.
    """

    def __init__(
        self, store: RunStore, token: str, jobs: list[Job], *, batch: int, check_s: float, shared: bool
    ) -> None:
        self.store = store
        self.token = token
        self.jobs = jobs
        self.batch = max(1, batch)
        self.check_s = check_s
        self.shared = shared
        self._next_check = 0.0

    def _joined(self) -> bool:
        now = time.monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + self.check_s
        if others_alive(self.store, self.token):
            self.shared = True
        return self.shared

    def __iter__(self) -> Iterator[Job]:
        rest = list(self.jobs)
        self._next_check = time.monotonic() + self.check_s
        while rest:
            mine = self.store.claim_calls(
                self.token, [j.prompt_hash for j in rest], limit=self.batch if self.shared else None
            )
            if not mine:
                return
            last = max(i for i, j in enumerate(rest) if j.prompt_hash in mine)
            todo = [j for j in rest[: last + 1] if j.prompt_hash in mine]
            # the prompts before the last one claimed were all tried: those not claimed are another
            # worker's (or stored); the runner waits for them once the feed ends
            rest = rest[last + 1 :]
            for k, job in enumerate(todo):
                if not self.shared and self._joined():
                    unsent = todo[k:]
                    self.store.release_claims(self.token, [j.prompt_hash for j in unsent])
                    rest = unsent + rest
                    break
                yield job
