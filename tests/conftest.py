"""Shared fixtures: the scripted OpenAI-compatible server (a real process on 127.0.0.1) and a small dataset."""

from __future__ import annotations

import _posixsubprocess
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli_run import TEST_KEY, allure, start_allure
from tests.specs import COLUMNS, audit_toml, memory_and_loop

if TYPE_CHECKING:
    from allure.store import RunRecord

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
EMBED_CACHE = Path(tempfile.gettempdir()) / f"allure-test-embeddings-{os.getpid()}"
"""The embedding cache of this test run (a fresh one each run: the first test to embed a text loads
the model, as on a fresh machine). Set here in the process that starts the run, so its xdist workers
and the processes they start inherit it; removed when the run ends."""
os.environ.setdefault("ALLURE_EMBED_CACHE", str(EMBED_CACHE))

HERE = Path(__file__).parent
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
"""``../shared`` beside the repository (the team's data and papers), found relative to this checkout."""


LANE_MARKS = ("integration", "model", "browser", "pg", "slow")
"""The marks ``make check`` leaves out: a test that starts a process or a server (``integration``),
the embedded model, the browser or PostgreSQL, or that takes seconds on its own (``slow``)."""

_FIXTURE_MARKS = {
    "scripted_server": ("integration",),
    "chroma_server": ("integration",),
    "pg_server": ("integration", "pg"),
}
"""Fixtures that start a process, and the marks every test using them (directly or not) gets."""


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and os.environ.get("ALLURE_EMBED_CACHE") == str(EMBED_CACHE):
        shutil.rmtree(EMBED_CACHE, ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--forbid-processes",
        action="store_true",
        help="fail a test not marked integration/model/browser/pg/slow that starts a process (make check)",
    )


def _module_fixture_users(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once per module (a project built, a server started)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in ("module", "class") for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the users of :data:`_FIXTURE_MARKS`' fixtures, and the PostgreSQL arm of ``backend``.

    Under ``pytest -n 2 --dist loadgroup`` (``make test``), a module whose tests share a module-scoped
    fixture is one ``xdist_group``: its tests run on one worker, so the fixture is built once, not
    once per worker (a test already in a group keeps it)."""
    for item in items:
        if _module_fixture_users(item) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
        names = set(getattr(item, "fixturenames", ()))
        marks = {m for name, ms in _FIXTURE_MARKS.items() if name in names for m in ms}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "postgresql":
            marks |= {"integration", "pg"}
        for mark in sorted(marks):
            item.add_marker(mark)


_STARTED = pytest.StashKey[list[str]]()
"""The process starters a test called under ``--forbid-processes``."""

_PROCESS_STARTERS = (
    (subprocess, "_fork_exec"),  # subprocess and asyncio's (bound at import)
    (_posixsubprocess, "fork_exec"),  # multiprocessing's spawn
    (os, "fork"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
)


_PROBES = {"lscpu", "fc-list"}
"""Programs a library runs to read the machine (joblib's count of physical cores; matplotlib's list
of the system's fonts, once, when it first builds its font cache on a new machine: 16 tests of a fresh
machine's first `make check` failed on it), not a process a test starts: allowed under
``--forbid-processes``."""


def _probe(argv: object) -> bool:
    """Whether ``argv`` (``_fork_exec``'s first argument) runs one of :data:`_PROBES`."""
    if not isinstance(argv, (list, tuple)) or not argv:
        return False
    first = argv[0].decode() if isinstance(argv[0], bytes) else str(argv[0])
    return os.path.basename(first) in _PROBES


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``--forbid-processes``, a test without a lane mark that starts a process fails, naming
    the mark to add (its module's ``pytestmark``), so ``make check`` stays free of processes."""
    if not item.config.getoption("--forbid-processes") or any(item.get_closest_marker(m) for m in LANE_MARKS):
        yield
        return
    started: list[str] = []
    originals = [(mod, name, getattr(mod, name)) for mod, name in _PROCESS_STARTERS if hasattr(mod, name)]

    def refuse(name: str, original: Callable[..., object]) -> Callable[..., object]:
        def starter(*args: object, **kwargs: object) -> object:
            if name == "_fork_exec" and _probe(args[0]):
                return original(*args, **kwargs)
            started.append(name)
            raise RuntimeError(
                f"{item.nodeid} started a process ({name}) but is not marked: add "
                "`pytestmark = pytest.mark.integration` to its module (or mark the test), "
                "so `make check` leaves it to `make test`"
            )

        return starter

    for mod, name, original in originals:
        setattr(mod, name, refuse(name, original))
    item.stash[_STARTED] = started
    try:
        yield
    finally:
        for mod, name, original in originals:
            setattr(mod, name, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A process refused by :func:`pytest_runtest_protocol` fails the test even where the code
    under test caught the error."""
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_STARTED, [])
    if started and report.passed and call.when != "teardown":
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a process ({started[0]}) but is not marked integration/model/"
            "browser/pg/slow: add `pytestmark = pytest.mark.integration` to its module"
        )


def shared_file(relative: str) -> Path:
    """A file under ``../shared``; a test that needs it fails (never skips) when it is missing."""
    path = SHARED / relative
    if not path.is_file():
        pytest.fail(f"{path} is missing: this test needs ../shared beside the repository ({relative})")
    return path


@dataclass
class ScriptedServer:
    """Handle on a running scripted server; ``with start_scripted_server(...) as srv:`` stops it after."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_scripted_server(tmp: Path, *args: str) -> ScriptedServer:
    """Start ``tests/scripted_server.py`` and wait for its port."""
    port_file, log = tmp / f"port-{time.time_ns()}", tmp / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "scripted_server.py"),
            "--port-file",
            str(port_file),
            "--log",
            str(log),
            *args,
        ]
    )
    deadline = time.time() + 20
    while not port_file.exists():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError("scripted server did not start")
        time.sleep(0.05)
    return ScriptedServer(proc, int(port_file.read_text()), log)


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[ScriptedServer]:
    srv = start_scripted_server(tmp_path)
    try:
        yield srv
    finally:
        srv.stop()


def write_dataset(path: Path, n_per_type: int = 6) -> Path:
    """A small path-finding dataset: per problem type, correct answers, 'Room'-keyword wrong answers, plain wrong ones."""
    rows = []
    for t, ptype in enumerate(("1stepPath", "2stepPath")):
        for j in range(n_per_type):
            i = j + 40 * t  # distinct rooms per problem type, so no two rows read the same
            gold = f"Answer: 1, {i + 3}"
            kind = j % 3
            if kind == 0:
                response = f"Answer: 1, {i + 3}"
            elif kind == 1:
                response = (
                    f"Answer: Room 1, Room {i + 9}"  # wrong, but mentions 'room': fools the scripted judge
                )
            else:
                response = f"Answer: 1, {i + 20}"
            rows.append(
                {
                    "uid": f"{ptype}-{j}",
                    "question": f"From room 1 what is the shortest path to room {i + 3}?",
                    "answer": response,
                    "gold": [gold],
                    "kind": ptype,
                    "model": f"gen-{j % 2}",
                    "judge": int(kind != 2),  # a recorded gullible judge: fooled by 'Room
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def write_spec(
    tmp: Path,
    base_url: str,
    *,
    calibration: str = "none",
    readout: str | None = None,
    tail: str = "",
    **loop: object,
) -> Path:
    """An audit spec for the small dataset against ``base_url``.

    ``calibration`` is ``none`` unless asked: the scripted tests count calls, and the default
    (``auto``) adds 3 content-free calls per ICL block (tested in ``tests/graphs/test_calibration_loop.py``).
    ``readout``: the evaluator's ``readout`` line (left out: the default); ``tail``: tables appended."""
    data = write_dataset(tmp / "items.jsonl")
    evaluator = (
        f'kind = "openai"\nmodel = "scripted"\nbase_url = "{base_url}"\napi_key_env = "ALLURE_TEST_KEY"\n'
        f'concurrency = 1\nmax_retries = 2\nretry_backoff_s = 0.05\ncalibration = "{calibration}"'
    ) + (f'\nreadout = "{readout}"' if readout is not None else "")
    loop = {"max_iterations": 2, "heldout_fraction": 0.34, **loop}
    spec = tmp / "audit.toml"
    spec.write_text(
        audit_toml(
            "scripted",
            path=data.name,
            columns=[c for c in COLUMNS if c != "recorded_label"],
            evaluator=evaluator,
            rest=memory_and_loop(memory=str(tmp / "memory"), **loop),
        )
        + tail
    )
    return spec


def replay_spec_text(tmp: Path, *, project_memory: bool = True, auto_approve: bool = False) -> str:
    """:func:`write_spec`'s spec as a replay of the dataset's recorded labels (no server): the text.

    ``project_memory``: the memory in the project's ``.allure/memory``; ``auto_approve``: the loop
    approves its candidates itself."""
    text = (
        write_spec(tmp, "http://127.0.0.1:9/v1")
        .read_text()
        .replace('kind = "openai"', 'kind = "replay"')
        .replace('generator = "model"', 'generator = "model"\nrecorded_label = "judge"')
    )
    if project_memory:
        text = text.replace(f'location = "{tmp / "memory"}"', 'location = ".allure/memory"')
    if auto_approve:
        text = text.replace('name = "scripted"', 'name = "scripted"\nauto_approve = true')
    return text


def write_replay_spec(tmp: Path, *, project_memory: bool = True, auto_approve: bool = False) -> Path:
    """:func:`replay_spec_text` written as ``tmp/audit.toml``."""
    spec = tmp / "audit.toml"
    spec.write_text(replay_spec_text(tmp, project_memory=project_memory, auto_approve=auto_approve))
    return spec


def approve_by_import(root: Path, run_id: str, env: dict[str, str | None] | None = None) -> None:
    """Approve every pending candidate of a paused run the way an auditor without a terminal does:
    ``review --export``, then ``review --import`` of an approval each (the run is not resumed)."""
    res = allure("review", run_id, "--export", "pending.jsonl", cwd=root, env=env)
    assert res.returncode == 0, res.stderr
    ids = [json.loads(x)["id"] for x in (root / "pending.jsonl").read_text().splitlines()]
    (root / "decisions.jsonl").write_text(
        "".join(json.dumps({"candidate_id": i, "decision": "approve"}) + "\n" for i in ids)
    )
    res = allure("review", run_id, "--import", "decisions.jsonl", cwd=root, env=env)
    assert res.returncode == 0, res.stderr


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0, poll: float = 0.2) -> None:
    """Poll ``check`` until it holds (a process, a terminal or a browser catching up); fail loudly,
    naming ``what``, after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def kill_audit_mid_run(tmp: Path, srv: ScriptedServer, env: dict[str, str], after: int = 6) -> Path:
    """Start ``allure audit --auto-approve`` on :func:`write_spec`'s spec against ``srv`` in ``tmp``
    and SIGKILL it once the server has answered ``after`` requests; returns the spec."""
    spec = write_spec(tmp, srv.base_url)
    proc = start_allure(
        "audit", str(spec), "--auto-approve", "--project", str(tmp), cwd=tmp, env=env, output=False
    )
    try:
        wait_for(
            lambda: len(srv.requests()) >= after or proc.poll() is not None,
            f"the server to answer {after} requests",
            timeout=120,
            poll=0.05,
        )
        assert proc.poll() is None, f"the audit ended (status {proc.returncode}) before {after} requests"
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    return spec


def copy_project(project: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A fresh copy of a ``(project root, run id)`` built once for a module, for one test to change."""
    root = tmp_path / "p"
    shutil.copytree(project[0], root)
    return root, project[1]


def only_run(project: Path) -> RunRecord:
    """The one run of ``project``'s store (a test that ran one audit there)."""
    from allure.store import RunStore, project_db_path

    store = RunStore(project_db_path(project), create=False)
    try:
        (run,) = store.list_runs()
    finally:
        store.close()
    return run


# --- shared by tests that repeated these lines (issue 42, item 2): a server fixture, a resume ---


def server_fixture(name: str, *args: str) -> Any:
    """A pytest fixture called ``name``: a scripted server started with ``args`` for one test
    (``server = server_fixture("server", "--lean", "0.25")`` at a module's top)."""

    def fixture(tmp_path: Path) -> Iterator[ScriptedServer]:
        srv = start_scripted_server(tmp_path, *args)
        try:
            yield srv
        finally:
            srv.stop()

    return pytest.fixture(name=name)(fixture)


PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY")


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Set the proxy variables to just these: ``proxy_env(HTTPS_PROXY="http://p:3128", NO_PROXY="x")``
    unsets every other one of :data:`PROXY_VARIABLES` for the test."""

    def set_only(**values: str) -> None:
        for name in PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_only


def resume_with(root: Path, run_id: str, decisions: Path) -> subprocess.CompletedProcess[str]:
    """``allure resume RUN --decisions FILE`` in project ``root`` (the scripted server's key set)."""
    return allure(
        "resume", run_id, "--decisions", str(decisions), "--project", str(root), cwd=root, env=TEST_KEY
    )
