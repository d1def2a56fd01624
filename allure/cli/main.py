"""Entry point of the ``allure`` command."""

from __future__ import annotations

import os
import signal
import sys

if os.environ.get("TEXTUAL_DRIVER") == "textual.drivers.web_driver:WebDriver":  # a served review tab
    # SIGTERM is the session guard's alone (allure.cli._served_app): blocked before any import starts
    # a thread (numpy's BLAS pool does), since a thread that does not block it could take it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

import typer  # noqa: E402

from allure.cli._serve_review import served_session, show_error  # noqa: E402
from allure.errors import AllureError  # noqa: E402
from allure.safe_text import visible  # noqa: E402

app = typer.Typer(
    rich_markup_mode=None,  # help texts are plain: '[reaudit]' stays, never read as markup
    name="allure",
    help="Audit and improve LLM-as-a-judge evaluators (the ALLURE loop).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    """Each command module exposes ``register(app)``."""
    from allure.cli import (
        audit,
        doctor,
        freeze,
        history,
        init,
        judge,
        memory,
        prompts,
        reaudit,
        resume,
        review,
        serve,
        store,
        study,
        study_robust,
    )

    for module in (
        init,
        audit,
        resume,
        review,
        memory,
        serve,
        freeze,
        reaudit,
        history,
        judge,
        study,
        study_robust,
        prompts,
        doctor,
        store,
    ):
        module.register(app)


_register()


def main() -> None:
    """Run the CLI; an :class:`AllureError` becomes a clear message and its exit status (2, or 1 for a failed run)."""
    try:
        app()
    except AllureError as exc:
        typer.secho(f"error: {visible(exc.render())}", fg="red", err=True)
        if served_session():  # a browser tab of `allure review --serve`: show it on the page too
            show_error(exc.render())
        sys.exit(exc.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
