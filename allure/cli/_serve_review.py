"""``allure review RUN --serve``: the review app as a web page (textual-serve), one app per browser tab.

Each browser session runs ``allure review RUN --project ABS ...`` itself (this interpreter, the same
project and store, the options given to ``--serve`` but the serving ones) with Textual's web
driver; the decisions go to the run store exactly as in a terminal. The page works with no
internet: the font textual-serve's page fetches from Google Fonts is served from the files the
package ships. There is no authentication: the server listens on the loopback address unless
``--allow-remote``; it answers only requests naming its own address (no DNS rebinding) and
websocket connections opened by its own page (no other web site can drive the review).
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from allure.cli._common import echo
from allure.errors import ReviewError

if TYPE_CHECKING:
    from aiohttp import web

WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""``$TEXTUAL_DRIVER`` in the app process textual-serve starts for a browser session."""

SERVING_OPTIONS = frozenset({"run", "project", "serve", "host", "port", "allow_remote", "export", "import_"})
"""Parameters of ``allure review`` a browser session does not get as given (``run`` and ``project``
are passed resolved)."""

_FONT_LINK = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*>", re.S)
_LOCAL_FONT = """<style>
      @font-face { font-family: "Roboto Mono"; font-style: normal;
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic;
        src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
    </style>"""


def served_session() -> bool:
    """Whether this process is a browser session of ``allure review --serve`` (Textual's web driver)."""
    return os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER


def show_error(text: str) -> None:
    """Show an error in a browser session's page (a browser tab cannot read stderr) until closed."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Static

    from allure.safe_text import visible

    class ErrorPage(App[None]):
        TITLE = "allure review: cannot open"
        BINDINGS = [("q", "quit", "Close")]

        def compose(self) -> ComposeResult:
            yield Static(Text("error: " + visible(text), style="bold red"), id="error")
            yield Static(Text("\npress q to close; reload the page to try again"))
            yield Footer()

    ErrorPage().run()


def session_command(run_id: str, project: Path, ctx: typer.Context) -> str:
    """The shell command of one browser session: ``allure review RUN --project ABS`` with the options
    given on this command line or in the environment (those of :data:`SERVING_OPTIONS` left out)."""
    argv = [sys.executable, "-m", "allure.cli.main", "review", run_id, "--project", str(project.resolve())]
    for param in ctx.command.params:
        name = param.name
        if param.param_type_name != "option" or name is None or name in SERVING_OPTIONS:
            continue
        source = ctx.get_parameter_source(name)
        if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        value = ctx.params.get(name)
        flag = max(param.opts, key=len)
        negative = getattr(param, "secondary_opts", None) or []
        if getattr(param, "is_flag", False) and isinstance(value, bool):
            if value or negative:
                argv.append(flag if value else max(negative, key=len))
        elif value is not None:
            for one in value if param.multiple else [value]:
                argv += [flag, str(one)]
    return shlex.join(argv)


def _loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise ReviewError(
            f"cannot resolve host {host!r}: {exc}",
            where="option '--host'",
            fix="use 127.0.0.1 (the default), or an address of this machine",
        ) from None
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def bind(host: str, port: int, *, allow_remote: bool) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: a free one).

    Raises:
        ReviewError: ``host`` is not a loopback address and ``allow_remote`` is false, cannot be
            resolved, or the port is in use or not allowed.
    """
    if not _loopback(host) and not allow_remote:
        raise ReviewError(
            f"--host {host} would let other machines open the review, and it has no authentication",
            where="option '--host'",
            fix="keep the default 127.0.0.1 (reach it through an SSH tunnel: ssh -L PORT:127.0.0.1:PORT), "
            "or add --allow-remote on a network you trust",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ReviewError(
                f"port {port} on {host} is in use",
                where="option '--port'",
                fix="pick another --port, or --port 0 for a free one",
            ) from None
        raise ReviewError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            where="options '--host' / '--port'",
            fix="use --host 127.0.0.1 and a port above 1023 (or 0 for a free one)",
        ) from None
    return sock


def serve_review(
    ctx: typer.Context, run_id: str, project: Path, host: str, port: int, allow_remote: bool
) -> None:
    """Serve the review of ``run_id`` until Ctrl+C (SIGINT) or SIGTERM; one app process per session."""
    sock = bind(host, port, allow_remote=allow_remote)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    command = session_command(run_id, project, ctx)
    echo(f"reviewing {run_id} at {url}  (Ctrl+C stops)")
    echo(
        "no authentication: anyone who can open this address can record decisions"
        + ("" if _loopback(host) else "; the page is plain HTTP on the network"),
        err=True,
        fg="yellow",
    )
    sys.stdout.flush()
    _run(command, sock, host, bound, f"allure review {run_id}", allow_remote)


def _run(command: str, sock: socket.socket, host: str, port: int, title: str, remote: bool) -> None:
    import asyncio

    import jinja2
    import textual_serve
    from aiohttp import web
    from textual_serve.server import Server

    logging.getLogger("textual-serve").addHandler(logging.StreamHandler(sys.stderr))
    logging.getLogger("textual-serve").setLevel(logging.WARNING)
    templates = Path(textual_serve.__file__).parent / "templates"

    def page(name: str) -> str:
        text = (templates / name).read_text(encoding="utf-8")
        return _FONT_LINK.sub(_LOCAL_FONT, text) if name == "app_index.html" else text

    names = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", f"[{host}]", host)}

    @web.middleware
    async def same_origin(request: web.Request, handler: Any) -> web.StreamResponse:
        if not remote and request.host not in names:
            raise web.HTTPForbidden(text="unknown host name (open the address allure printed)")
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin not in (f"http://{request.host}", f"https://{request.host}"):
            raise web.HTTPForbidden(text="the review's websocket is only for its own page")
        return await handler(request)

    class ReviewServer(Server):
        """textual-serve's server with the page's URLs taken from the request and no font CDN."""

        async def _make_app(self) -> web.Application:
            import aiohttp_jinja2

            app = await super()._make_app()
            app.middlewares.append(same_origin)
            aiohttp_jinja2.setup(app, loader=jinja2.FunctionLoader(page))
            return app

        async def on_startup(self, app: web.Application) -> None:
            return None

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            import aiohttp_jinja2

            secure = request.scheme == "https"
            context = {
                "font_size": max(6, min(64, _int(request.query.get("fontsize"), 16))),
                "app_websocket_url": f"{'wss' if secure else 'ws'}://{request.host}/ws",
                "config": {"static": {"url": f"{request.scheme}://{request.host}/static/"}},
                "application": {"name": title},
            }
            return aiohttp_jinja2.render_template("app_index.html", request, context)

    server = ReviewServer(command, host=host, port=port, title=title)
    web.run_app(server._make_app(), sock=sock, print=None, loop=asyncio.new_event_loop())


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
