"""A small two-type dataset, a re-audit spec against a server, and the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

from tests.cli_run import run_cli
from tests.specs import audit_toml

ENV = {**os.environ, "ALLURE_TEST_KEY": "test-key", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}

MARKER = "Be generous with two-step paths."
"""A prompt edit the scripted server answers worse to (on the ``2stepPath`` items)."""
WORSE_ON = "in two steps"
"""Task wording of the ``2stepPath`` items only."""


@contextmanager
def webhook_receiver() -> Iterator[tuple[int, list[dict]]]:
    """A real webhook receiver on 127.0.0.1: yields its port and the JSON bodies POSTed to it (any
    path, answered ``200 ok``); shut down on exit."""
    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()


def allure(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``allure ARGS`` in ``cwd`` through the one CLI helper (:func:`tests.cli_run.run_cli`), with
    :data:`ENV` (or ``env``); kept for the tests outside ``tests/reaudit`` that call it."""
    return run_cli(cwd, *args, project=False, env=env or ENV, timeout=timeout)


def reaudit_in(tmp: Path, spec: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``allure reaudit SPEC --project TMP ARGS`` run in ``tmp``."""
    return run_cli(tmp, "reaudit", str(spec), "--project", str(tmp), *args, project=False)


def write_items(path: Path, n_per_type: int = 12) -> Path:
    """Per type: a third correct, a third wrong but saying 'Room' (fools the zero-shot judge), a third plainly wrong."""
    rows = []
    for t, (ptype, wording) in enumerate((("1stepPath", "in one step"), ("2stepPath", "in two steps"))):
        for j in range(n_per_type):
            i = j + 40 * t
            kind = j % 3
            response = {
                0: f"Answer: 1, {i + 3}",
                1: f"Answer: Room 1, Room {i + 9}",
                2: f"Answer: 1, {i + 20}",
            }[kind]
            rows.append(
                {
                    "uid": f"{ptype}-{j}",
                    "question": f"From room 1, reach room {i + 3} {wording}. What is the path?",
                    "answer": response,
                    "gold": [f"Answer: 1, {i + 3}"],
                    "kind": ptype,
                    "model": f"gen-{j % 2}",
                    "judge": int(kind != 2),
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def copy_prompts(dest: Path) -> Path:
    """A copy of the built-in grader prompt set that a test can edit."""
    src = Path(str(resources.files("allure.prompts").joinpath("grader")))
    shutil.copytree(src, dest)
    return dest


def write_reaudit_spec(
    tmp: Path,
    base_url: str | None,
    *,
    name: str = "reaudit.toml",
    set_name: str = "nightly",
    gate: str = "",
    kind: str = "openai",
    extra: str = "",
    probe: int | None = 0,
) -> Path:
    """A spec with [reaudit] (set over all items) and a [gate]; ``kind = "replay"`` needs no server.

    ``probe``: ``[reaudit] probe`` (0 by default here, so that call counts are the main pass's;
    ``None`` leaves it out, the kind's default)."""
    data = tmp / "items.jsonl"
    if not data.exists():
        write_items(data)
    prompts = tmp / "prompts"
    if not prompts.exists():
        copy_prompts(prompts)
    evaluator = (
        f'kind = "openai"\nmodel = "scripted"\nbase_url = "{base_url}"\napi_key_env = "ALLURE_TEST_KEY"\n'
        f"concurrency = 1\nmax_retries = 1\nretry_backoff_s = 0.05\ntimeout_s = 10\n"
        if kind == "openai"
        else 'kind = "replay"\n'
    )
    gate = gate or "[gate]\nalpha = 0.05\n[gate.min]\naccuracy = 0.3\n[gate.max_drop]\naccuracy = 0.05\n"
    spec = tmp / name
    spec.write_text(
        audit_toml(
            "scripted",
            path=data.name,
            evaluator=f'{evaluator}prompt = "{prompts}"',
            rest=f'[memory]\nlocation = "{tmp / "memory"}"\n\n[reaudit]\nset = "{set_name}"\nsplit = "all"\n'
            f"{'' if probe is None else f'probe = {probe}'}\n\n{gate}\n{extra}\n",
        )
    )
    return spec
