"""Entry point of the ``allure`` command."""

from __future__ import annotations

import sys

import typer

from allure.errors import AllureError

app = typer.Typer(
    name="allure",
    help="Audit and improve LLM-as-a-judge evaluators (the ALLURE loop).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Each command module exposes ``register(app)``. One line per module, keep sorted.
    # --- command registrations (helpers: add your one line here) ---
    from allure.cli import audit, resume

    audit.register(app)
    resume.register(app)
    from allure.cli import memory; memory.register(app)  # noqa: E702, I001
    from allure.cli import review; review.register(app)  # noqa: E702, I001
    from allure.cli import serve; serve.register(app)  # noqa: E702, I001


_register()


def main() -> None:
    """Run the CLI; an :class:`AllureError` becomes a clear message and exit status 2."""
    try:
        app()
    except AllureError as exc:
        typer.secho(f"error: {exc.render()}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
