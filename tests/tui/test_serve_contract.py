"""What ``allure review --serve`` takes from textual-serve beyond its public ``Server(...).serve()``:
``cli/_serve_review.py`` overrides the private ``Server._make_app`` (to add its middleware and serve
on its own socket), ``handle_index`` and ``on_startup``, and renders the package's
``app_index.html`` itself. ``pyproject.toml`` bounds textual-serve to the minor version these were
checked against; this test fails, naming what moved, when an installed version breaks them."""

from __future__ import annotations

import asyncio
import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import jinja2
import textual_serve
from aiohttp import web
from jinja2 import meta
from packaging.requirements import Requirement
from textual_serve.server import Server

from allure.cli._serve_review import _FONT_LINK

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_VARIABLES = {"config", "app_websocket_url", "font_size", "application", "ping_url"}
"""The variables ``app_index.html`` may use: those ``handle_index`` fills (``ping_url`` left empty)."""


def _requirement() -> Requirement:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(Requirement(d) for d in deps if Requirement(d).name == "textual-serve")


def test_the_installed_textual_serve_is_within_the_bound_pyproject_sets() -> None:
    req = _requirement()
    assert any(s.operator == "<" for s in req.specifier), f"{req} has no upper bound"
    assert req.specifier.contains(version("textual-serve")), (version("textual-serve"), str(req))


def test_the_private_server_parts_the_review_overrides_are_there() -> None:
    params = list(inspect.signature(Server.__init__).parameters)
    assert params[:5] == ["self", "command", "host", "port", "title"], params
    assert inspect.iscoroutinefunction(Server._make_app)
    assert list(inspect.signature(Server._make_app).parameters) == ["self"]
    for name, args in (("handle_index", ["self", "request"]), ("on_startup", ["self", "app"])):
        method = getattr(Server, name)
        assert inspect.iscoroutinefunction(method), name
        assert list(inspect.signature(method).parameters) == args, name

    class Probe(Server):
        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            raise NotImplementedError

    async def make() -> web.Application:
        return await Probe("true", host="127.0.0.1", port=1, title="t")._make_app()

    app = asyncio.run(make())
    assert isinstance(app, web.Application)
    routes = {r.name: r for r in app.router.routes() if r.name}
    assert {"index", "websocket", "static"} <= set(routes), sorted(routes)
    assert routes["index"].handler.__func__ is Probe.handle_index  # type: ignore[attr-defined]
    assert any(getattr(cb, "__func__", None) is Server.on_startup for cb in app.on_startup)


def test_the_page_template_uses_only_what_the_review_gives_it() -> None:
    page = (Path(textual_serve.__file__).parent / "templates" / "app_index.html").read_text(encoding="utf-8")
    assert _FONT_LINK.search(page), "the Google Fonts link the review serves locally is gone"
    used = meta.find_undeclared_variables(jinja2.Environment().parse(page))
    assert used <= TEMPLATE_VARIABLES, sorted(used - TEMPLATE_VARIABLES)
    assert re.search(r"config\.static\.url", page) and "app_websocket_url" in page
