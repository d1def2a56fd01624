"""The read-out's polarity variant (issue 34; ``[evaluator] polarity_prompt``).

The judge's question asked in the opposite polarity ("is the response free of hallucination?"):
one zero-shot call per item (ids suffixed :data:`REVERSED`, so they never mix with the item's own
verdict; grouped for the prefix cache as any pass is), stored and cached in the run store like the
main order's calls. Its label log-odds, read back through ``polarity_labels``, give the feature
``z_reversed``: a judge that says "yes" to both questions has a yes-bias that ``z`` and
``z_reversed`` carry with opposite signs, so a read-out on both cancels it, as swapping the two
responses cancels a position bias.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from allure.labels import Label
from allure.models import Item, Verdict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator import EvalResult, Evaluator, PassOptions
    from allure.prompts import PromptSet

REVERSED = "#reversed"
"""Suffix of the ids of the reversed question's items."""


@dataclass(frozen=True)
class PolarityVariant:
    """The reversed question: its prompt set and what each of its answers means for the judge."""

    prompts: PromptSet
    meaning: Mapping[str, Label]
    """The reversed question's answer (as a string) -> the judge's label it means."""

    def items(self, items: Sequence[Item]) -> list[Item]:
        """The items as the reversed question asks them (ids suffixed :data:`REVERSED`)."""
        return [it.model_copy(update={"id": it.id + REVERSED}) for it in items]

    def read_back(self, verdict: Verdict) -> Verdict:
        """A reversed verdict in the judge's terms: its label mapped through :attr:`meaning`, its
        label probabilities moved to the labels they mean (two labels swapped: ``prob_positive``
        becomes ``1 - prob_positive``); the answer's own label kept as ``raw_label``."""
        lab = verdict.label
        update: dict[str, object] = {
            "label": None if lab is None else self.meaning.get(str(lab)),
            "raw_label": lab,
        }
        if verdict.label_probs is not None:
            update["label_probs"] = {str(self.meaning.get(k, k)): p for k, p in verdict.label_probs.items()}
        swapped = any(str(v) != k for k, v in self.meaning.items())
        if verdict.prob_positive is not None and swapped:
            update["prob_positive"] = 1.0 - verdict.prob_positive
        return verdict.model_copy(update=update)

    def ask(
        self,
        ev: Evaluator,
        run_id: str,
        iteration: int,
        items: Sequence[Item],
        *,
        options: PassOptions | None = None,
        claim_token: str = "",
    ) -> tuple[EvalResult, dict[str, Verdict]]:
        """One zero-shot call per item (the pass's sample and generation kept); the result, and
        item id (the original's) -> its reversed verdict read back in the judge's terms (:meth:`read_back`)."""
        from allure.evaluator import PassOptions

        opts = replace(options, prompts=self.prompts) if options else PassOptions(prompts=self.prompts)
        result = ev.evaluate(
            run_id, iteration, self.items(items), lambda _item: [], claim_token=claim_token, options=opts
        )
        n = len(REVERSED)
        return result, {i[:-n]: self.read_back(v) for i, v in result.verdicts.items() if i.endswith(REVERSED)}


def polarity_variant(spec: AuditSpec) -> PolarityVariant | None:
    """The spec's polarity variant (``None``: no ``polarity_prompt``, not a two-label judge, or a replay).

    Raises:
        SpecError: the polarity prompt's folder or files (:func:`allure.config.load_polarity_prompt`).
    """
    from allure.config import load_polarity_prompt
    from allure.labels import label_list

    if spec.evaluator.is_replay or len(spec.label_set) != 2:
        return None
    prompts = load_polarity_prompt(spec)
    if prompts is None:
        return None
    by_str = {str(lab): lab for lab in spec.label_set}
    meaning = {str(k): by_str[str(v)] for k, v in spec.evaluator.polarity_labels.items()}
    return PolarityVariant(prompts.with_context(labels=label_list(spec.label_set)), meaning)
