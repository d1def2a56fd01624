"""A kind of evaluator backend (``[evaluator] kind = "NAME"``): its facts and how it is opened.

The rest of allure asks the kind, never its name: the runner its retry rule and concurrency limit,
a re-audit its identity (:meth:`BackendKind.model_name`, :meth:`~BackendKind.model_info`,
:meth:`~BackendKind.identity`) and its provider-drift probe default, the loop what must be in place
before a run (:meth:`~BackendKind.check`), every caller whether it is a replay
(``EvaluatorSpec.is_replay``). The registry is :mod:`allure.backends`.

This module and the built-in kinds' (:mod:`allure.evaluator._kinds`) import the runner only where
an evaluator is opened: the spec asks a kind's facts (``is_replay``) in processes that never label.

Adding a backend is one class: subclass :class:`BackendKind`, decorate it with
``@register_backend("NAME")``, write :meth:`~BackendKind.chat` (the :class:`ChatBackend` that
answers the prompts), and set the facts that differ from the defaults. One that starts a server
overrides :meth:`~BackendKind.open` as well (see ``LocalKind`` in :mod:`allure.evaluator._kinds`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from allure.backends import BackendFacts, backend_class
from allure.errors import SpecError
from allure.evaluator._backend import RetryKind, retry_kind

if TYPE_CHECKING:
    from allure.config import AuditSpec, EvaluatorSpec
    from allure.evaluator._backend import ChatBackend
    from allure.evaluator._options import EvaluatorOptions
    from allure.evaluator._runner import Evaluator
    from allure.evaluator._tokens import TokenCounter
    from allure.models import Item
    from allure.store import RunStore


class BackendKind(BackendFacts):
    """A backend kind: the :class:`~allure.backends.BackendFacts` class attributes, and methods with
    the defaults most backends want (override what differs)."""

    def retry_kind(self, exc: BaseException) -> RetryKind | None:
        """How the runner treats a failed call (default: :func:`allure.evaluator.retry_kind`, which
        reads allure's transport errors)."""
        return retry_kind(exc)

    def concurrency(self, ev: EvaluatorSpec) -> int:
        """Calls in flight at once (default: ``[evaluator] concurrency``)."""
        return ev.concurrency

    def model_name(self, spec: AuditSpec) -> str:
        """The model name its requests carry, stored with every call and a re-audit's fingerprint."""
        return spec.evaluator.model

    def model_info(self, spec: AuditSpec) -> dict[str, Any]:
        """What identifies the model behind the name, for a re-audit's fingerprint (may ask a
        server; never starts one). Default: the kind and the model name, asking nothing.

        Raises:
            EvaluatorUnavailableError: a server that must be asked cannot be reached.
        """
        return {"kind": self.name, "model": spec.evaluator.model}

    def identity(self, spec: AuditSpec) -> dict[str, Any]:
        """Settings beyond ``EvaluatorSpec.params()`` that change its output (part of the fingerprint)."""
        return {}

    def check(self, spec: AuditSpec) -> None:
        """Refuse, before a run starts, what cannot work (a missing key); default: nothing.

        Raises:
            EvaluatorError: what is missing, and the fix.
        """
        return None

    def warm(self, spec: AuditSpec) -> None:
        """Start loading what its first call needs while a run prepares (default: nothing)."""
        return None

    def options(self, spec: AuditSpec) -> EvaluatorOptions:
        """The evaluator's options from the spec, with this kind's retry rule and concurrency."""
        from allure.config import label_pattern_for
        from allure.evaluator._options import EvaluatorOptions
        from allure.labels import label_list
        from allure.prompts import load_prompt_set

        ev = spec.evaluator
        prompts = load_prompt_set(ev.prompt).with_context(labels=label_list(spec.label_set), rubric=ev.rubric)
        return EvaluatorOptions(
            model_name=self.model_name(spec),
            params=ev.params(),
            prompts=prompts,
            label_set=spec.label_set,
            label_pattern=label_pattern_for(spec, prompts.assistant),
            synonyms=spec.label_synonyms,
            positive_label=spec.positive_label,
            concurrency=self.concurrency(ev),
            timeout_s=ev.timeout_s,
            max_retries=ev.max_retries,
            retry_backoff_s=ev.retry_backoff_s,
            retry=self.retry_kind,
        )

    def token_counter(self, spec: AuditSpec, store: RunStore) -> TokenCounter | None:
        """What counts prompt tokens against ``max_prompt_tokens`` (default: ``None``, the runner's
        estimate where a budget is set)."""
        return None

    def chat(self, spec: AuditSpec, items: list[Item]) -> ChatBackend:
        """The backend that answers the prompts (what a new kind writes)."""
        raise NotImplementedError(f"backend kind {self.name!r} defines neither chat() nor open()")

    @contextmanager
    def open(
        self, spec: AuditSpec, store: RunStore, items: list[Item], *, lazy_start: bool = False
    ) -> Iterator[Evaluator]:
        """An :class:`Evaluator` for ``spec`` over ``items``, alive for the ``with`` block
        (``lazy_start``: start a server only when a call misses the store, where the kind has one)."""
        from allure.evaluator._runner import Evaluator

        evaluator = Evaluator(
            self.options(spec),
            store=store,
            backend=self.chat(spec, items),
            token_counter=self.token_counter(spec, store),
        )
        try:
            yield evaluator
        finally:
            evaluator.close()


def backend_kind(name: str) -> BackendKind:
    """The registered backend kind ``name`` (:func:`allure.backends.backend_class`), as an instance.

    Raises:
        SpecError: no backend is registered as ``name``, or it is not a :class:`BackendKind`.
    """
    cls = backend_class(name)
    if not issubclass(cls, BackendKind):
        raise SpecError(
            f"evaluator kind {name!r} ({cls.__module__}.{cls.__qualname__}) is not a BackendKind",
            where="[evaluator] kind",
            fix="subclass allure.evaluator.BackendKind in the backend's module",
        )
    return cls()
