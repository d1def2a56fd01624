"""What an audit will ask its judge, before it runs (``allure audit --plan``; :func:`plan_audit`).

The first pass is known in full before anything is sent: every item's prompt (and, as the loop asks
them, a pair's swapped order when the spec swaps positions, and the reversed question when a
polarity prompt is set and a read-out may read it), and the content-free calls that calibration
sends for the zero-shot block when a mode it tries reads them (``contextual``, ``prior``, ``auto``). Each is looked up in the run
store, as the pass itself would, so a spec run before plans 0 calls. A later pass puts the approved
examples in its prompts, which depend on the review: the plan gives its most calls (one an item, as
many orders as the first) and says so, or 0 when ``max_examples = 0`` keeps examples out of the
prompts (they are the first pass's). Nothing is sent, no run is made and no server is started.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allure.config import AuditSpec


@dataclass(frozen=True)
class AuditPlan:
    """An audit's calls, counted before it runs (see the module)."""

    items: int
    """Items the spec loads."""
    orders: int
    """Calls an item in a pass: 1, 2 with a pair's swapped order, one more with the reversed question."""
    first_pass: int
    """Calls of the first pass (the items' in every order, and the content-free calls)."""
    not_stored: int
    """Of those, the calls the run store cannot answer (each one is sent)."""
    later_passes: int
    """Passes after the first (``max_iterations - 1``)."""
    later_pass_calls: int
    """Most calls of one later pass (0: its prompts are the first pass's, answered by the store)."""
    stored_latency_s: float | None
    """Mean seconds of the stored calls the first pass would re-use (``None``: none stored)."""
    content_free_per_block: int = 0
    """Content-free calls calibration sends per distinct example block (0: none)."""
    replay: bool = False
    """A replay: every pass reads the recorded verdicts, nothing is sent."""

    def lines(self) -> list[str]:
        """The plan in words, one line a fact."""
        if self.replay:
            return [
                f"a replay: every pass reads the {self.items} items' recorded verdicts, no call is sent "
                f"({self.later_passes + 1} passes at most)"
            ]
        orders = "" if self.orders == 1 else f" ({self.orders} calls an item)"
        out = [
            f"pass 1: {self.first_pass} calls{orders} for {self.items} items, "
            f"{self.first_pass - self.not_stored} answered by the run store, {self.not_stored} to send"
        ]
        if self.stored_latency_s is not None and self.not_stored:
            minutes = self.not_stored * self.stored_latency_s / 60
            out.append(
                f"  at the stored calls' mean {self.stored_latency_s:.1f} s a call: about {minutes:.0f} min"
            )
        later = "pass 2" if self.later_passes == 1 else f"passes 2 to {self.later_passes + 1}"
        if self.later_passes and self.later_pass_calls:
            free = (
                f", and {self.content_free_per_block} content-free calls per distinct example block"
                if self.content_free_per_block
                else ""
            )
            out.append(
                f"{later}: up to {self.later_pass_calls} calls each{free}; their prompts carry the approved "
                "examples, so how many are new is known only after the review (a prompt with examples is "
                "longer: each call slower than pass 1's)"
            )
        elif self.later_passes:
            out.append(
                f"{later}: no call (max_examples = 0: the prompts are pass 1's, answered by the run store; "
                "the memory only votes in the read-out)"
            )
        return out


def _sends_content_free(mode: str) -> bool:
    """Whether a pass calibrated by ``mode`` sends content-free calls: as the pass decides, when a mode
    it tries reads ``p_cf`` (``auto`` tries every registered mode)."""
    from allure.calibrations import AUTO, NONE, calibrator_class, mode_names

    tried = mode_names() if mode == AUTO else [] if mode == NONE else [mode]
    return any(calibrator_class(m).reads_p_cf for m in tried)


def plan_audit(spec: AuditSpec, project_dir: Path) -> AuditPlan:
    """Count ``spec``'s calls against ``project_dir``'s run store (see the module); sends nothing.

    Raises:
        DatasetError: The dataset is missing or malformed.
        StoreError: The run store cannot be opened.
    """
    from allure.evaluator import open_evaluator
    from allure.graphs.prepare import prepare_audit
    from allure.metrics import CONTENT_FREE
    from allure.passes import content_free_item, extra_calls, swapped_order
    from allure.passes.readout import PassReadout
    from allure.prompts import load_prompt_set
    from allure.store import open_project_store, project_db_path

    items = prepare_audit(spec, project_dir).items
    ev_spec = spec.evaluator
    later = spec.loop.max_iterations - 1
    if ev_spec.is_replay:
        return AuditPlan(len(items), 1, 0, 0, later, 0, None, replay=True)
    pairwise = load_prompt_set(ev_spec.prompt).pairwise
    # the loop's pass: its read-out step (when one is applied) may read both extra orders, and the
    # loop asks the swapped order for its report's position figures (the plan's one rule decides)
    readout = (
        None
        if ev_spec.applied_readout == "none"
        else PassReadout(
            mode=ev_spec.applied_readout,
            labels=tuple(spec.label_set),
            positive=spec.positive_label,
            fit_ids=frozenset(),
            references={},
            dev_ids=frozenset(),
            not_fit=frozenset(),
        )
    )
    swap, polarity = extra_calls(
        spec,
        items,
        pairwise=pairwise,
        debias=ev_spec.position_debias != "none",
        readout=readout,
        positions=True,
    )
    asked = [*items, *swapped_order(items, spec.label_set)] if swap else list(items)
    free = []
    if _sends_content_free(ev_spec.applied_calibration) and items:
        free = [content_free_item(items[0], "plan", k, text) for k, text in enumerate(CONTENT_FREE)]
    with ExitStack() as stack:
        where = project_dir
        if not spec.store.url and not project_db_path(project_dir).is_file():
            where = Path(stack.enter_context(TemporaryDirectory()))  # nothing stored: leave no store behind
        store = open_project_store(where, create=True, url=spec.store.url)
        stack.callback(store.close)
        ev = stack.enter_context(open_evaluator(spec, store, items, lazy_start=True))
        main = ev.plan(asked + free, lambda _: [])
        reversed_ = None
        if polarity is not None:
            from allure.evaluator import PassOptions

            reversed_ = ev.plan(polarity.items(items), lambda _: [], PassOptions(prompts=polarity.prompts))
    per_pass = len(asked) + (len(items) if polarity is not None else 0)
    calls = main.items + (reversed_.items if reversed_ is not None else 0)
    not_stored = main.uncached + (reversed_.uncached if reversed_ is not None else 0)
    no_examples = spec.memory.retrieval.max_examples == 0
    return AuditPlan(
        items=len(items),
        orders=per_pass // max(len(items), 1),
        first_pass=calls,
        not_stored=not_stored,
        later_passes=later,
        later_pass_calls=0 if no_examples else len(asked),
        stored_latency_s=main.cached_latency_s,
        content_free_per_block=len(free),
    )
