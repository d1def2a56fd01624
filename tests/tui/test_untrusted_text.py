"""Responses and tasks are untrusted: markup and escape sequences are shown, never obeyed."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from allure.models import IclExample
from allure.store import project_db_path
from allure.tui import create_app, literal, visible
from tests.tui.review_helpers import TRICKY, make_run, screen_text

RUN = "run-review"


def test_visible_replaces_controls_but_keeps_newline_and_tab() -> None:
    assert visible("a\x1b[31mb\x1b[0m") == "a␛[31mb␛[0m"
    assert visible("x\ty\nz") == "x\ty\nz"
    assert visible("bell\x07 del\x7f csi\x9b cr\r nul\x00") == "bell␇ del␡ csi\\x9b cr␍ nul␀"
    assert visible("plain [bold]text[/]") == "plain [bold]text[/]"


def test_literal_never_parses_markup() -> None:
    text = literal("[bold red]x[/] [link=file:///etc/passwd]y[/link]")
    assert isinstance(text, Text)
    assert text.plain == "[bold red]x[/] [link=file:///etc/passwd]y[/link]"
    assert text.spans == [] and not text.style


async def test_tricky_response_is_shown_as_plain_text(tmp_path: Path) -> None:
    store = make_run(tmp_path, 1)
    ex = store.candidates(RUN)[0]
    tricky = IclExample(
        **{
            **ex.model_dump(),
            "id": "icl-tricky",
            "response": TRICKY,
            "task": "[i]task[/i] \x1b]8;;http://evil\x1b\\",
            "evaluator_output": "[b]score: 1[/b]",
        }
    )
    store.add_candidates(RUN, 1, [tricky])
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("j", "t")  # the second candidate, task expanded
        assert app._current == "icl-tricky"
        text = screen_text(app)
        assert "[bold red]x[/] [link=file:///etc/passwd]y[/link] ␛[31mred␛[0m" in text
        assert "[i]task[/i] ␛]8;;http://evil␛\\" in text
        assert "[b]score: 1[/b]" in text
        assert "\x1b" not in text
        for wid in ("#response", "#task"):
            shown = app.query_one(wid, Static).visual
            spans = getattr(shown, "spans", [])
            assert not [s for s in spans if "link" in str(s.style) or "red" in str(s.style)], wid
        svg = app.export_screenshot()
        assert "file:///etc/passwd]y[/link]" in svg.replace("&#160;", " ")
        assert "<a " not in svg  # no hyperlink was drawn
    store.close()
    assert project_db_path(tmp_path).exists()
