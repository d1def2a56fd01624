"""Entry point of the ``allure`` command."""

from __future__ import annotations

import sys

import typer

from allure.cli._serve_review import served_session, show_error
from allure.errors import AllureError
from allure.safe_text import visible

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
