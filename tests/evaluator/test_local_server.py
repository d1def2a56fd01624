"""The embedded evaluator against the real llama.cpp server and the real bundled models.

Grading goes through ``ChatOpenAI`` exactly as the runner uses it. The lifecycle tests run
a ``LocalServer`` inside a child Python process and check that Ctrl-C, SIGTERM, SIGKILL
of that process and a bad model file leave no server process and no listening port.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from allure.errors import EvaluatorError, ModelFilesError
from allure.evaluator.local import LocalServer, LocalServerSettings, ensure_model
from tests.cli_run import start_allure

pytestmark = pytest.mark.xdist_group("model")
"""Under ``pytest -n 2 --dist loadgroup``, this file's tests run on one worker, one after another:
two llama.cpp servers at once on 2 cores would slow each past its test's timeouts."""

SCORE = re.compile(r"score:\s*([01])")
INSTRUCTION = (
    "Grade the response. Reply with exactly 'score: 1' if the response's final answer "
    "matches the correct answer, else 'score: 0'.\n"
)
# (response, correct answer, expected score); the instruction comes first so the
# prompts share a cached prefix
ITEMS = [("1, 3", "1, 3", 1), ("2", "4", 0), ("7, 8", "7, 8", 1), ("A, B", "C", 0)]

HOLDER = """
import json, sys, time
from allure.evaluator.local import LocalServer, LocalServerSettings
with LocalServer(LocalServerSettings(model=sys.argv[1], ctx_size=1024, threads=1)) as srv:
    print(json.dumps({"pid": srv.pid, "url": srv.root_url, "log": str(srv.log_path)}), flush=True)
    while True:
        time.sleep(0.1)
"""


def _model_or_skip(name: str) -> str:
    try:
        ensure_model(name)
    except ModelFilesError as exc:
        pytest.skip(f"model {name!r} not available: {exc.render()}")
    return name


def _alive(pid: int) -> bool:
    if not Path("/proc/self").exists():  # no procfs: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie no longer runs or listens


def _gone(pid: int, url: str, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        return False
    while True:  # nothing listens: refused. A reset is a listener closing as it goes: ask again
        try:
            httpx.get(url + "/health", timeout=2.0)
        except httpx.ConnectError:
            return True
        except (httpx.ReadError, httpx.RemoteProtocolError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def default_server() -> Iterator[LocalServer]:
    _model_or_skip("qwen2.5-coder-1.5b")
    with LocalServer(LocalServerSettings(ctx_size=2048, threads=2)) as srv:
        yield srv
    assert not srv.running


def _ctrl_c_interrupts() -> None:
    """In the child: SIGINT at its default, so Python turns it into KeyboardInterrupt.

    A shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT
    ignored: without this, the Ctrl-C tests fail whenever the suite itself runs in the background.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def holder() -> Iterator[tuple[subprocess.Popen[str], int, str, Path]]:
    model = _model_or_skip("qwen2.5-0.5b")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, model],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_interrupts,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(5)
        pytest.fail(f"holder process failed: {proc.stderr.read() if proc.stderr else ''}")
    info = json.loads(line)
    assert _alive(info["pid"])
    assert httpx.get(info["url"] + "/health", timeout=5).status_code == 200
    assert Path(info["log"]).is_file()
    yield proc, info["pid"], info["url"], Path(info["log"])
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.integration
@pytest.mark.model
def test_grades_through_chat_openai_with_logprobs(default_server: LocalServer) -> None:
    from langchain_openai import ChatOpenAI

    assert default_server.base_url.endswith("/v1")
    assert default_server.base_url.startswith("http://127.0.0.1:")
    llm = ChatOpenAI(
        model=default_server.model_name,
        base_url=default_server.base_url,
        api_key="local",
        temperature=0,
        max_tokens=8,
        logprobs=True,
        top_logprobs=5,
        extra_body=default_server.extra_body(),
    )
    correct = 0
    for response, answer, expected in ITEMS:
        msg = llm.invoke(f"{INSTRUCTION}Response: Answer: {response}\nCorrect answer: {answer}")
        assert isinstance(msg.content, str)
        match = SCORE.search(msg.content)
        assert match, f"unparseable grade: {msg.content!r}"
        correct += int(match.group(1)) == expected
        tokens = msg.response_metadata["logprobs"]["content"]
        assert tokens and len(tokens[0]["top_logprobs"]) == 5
        assert all(t["logprob"] <= 0.0 for t in tokens)
    # hand-made items a 1.5B coder model grades 4/4 at temperature 0; allow one miss
    assert correct >= 3


@pytest.mark.integration
@pytest.mark.model
def test_stop_leaves_no_process_or_port() -> None:
    _model_or_skip("qwen2.5-0.5b")
    srv = LocalServer(LocalServerSettings(model="qwen2.5-0.5b", ctx_size=1024, threads=1))
    with srv:
        pid, url = srv.pid, srv.root_url
        assert pid is not None and _alive(pid)
        assert srv.model_name == "qwen2.5-0.5b"
        log = srv.log_path
        assert log is not None and "load_model" in log.read_text(errors="replace")
    assert _gone(pid, url, within_s=1)
    assert not log.exists()
    srv.stop()  # twice is fine


@pytest.mark.integration
@pytest.mark.model
def test_deterministic_mode_turns_prompt_cache_off() -> None:
    _model_or_skip("qwen2.5-0.5b")
    settings = LocalServerSettings(model="qwen2.5-0.5b", ctx_size=1024, threads=1, deterministic=True, seed=7)
    with LocalServer(settings) as srv:
        assert srv.extra_body() == {"cache_prompt": False, "seed": 7, "temperature": 0.0}
        body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 3, **srv.extra_body()}
        timings = [httpx.post(srv.base_url + "/chat/completions", json=body, timeout=60).json()["timings"]]
        timings.append(
            httpx.post(srv.base_url + "/chat/completions", json=body, timeout=60).json()["timings"]
        )
    # with caching the second identical prompt would be served from cache (cache_n > 0)
    assert [t["cache_n"] for t in timings] == [0, 0]


@pytest.mark.integration
@pytest.mark.model
@pytest.mark.parametrize(
    ("sig", "returncode"),
    [
        (signal.SIGINT, -signal.SIGINT),
        (signal.SIGTERM, 128 + signal.SIGTERM),
        (signal.SIGKILL, -signal.SIGKILL),
    ],
)
def test_holder_signal_leaves_no_server(
    holder: tuple[subprocess.Popen[str], int, str, Path], sig: signal.Signals, returncode: int
) -> None:
    proc, pid, url, log = holder
    proc.send_signal(sig)
    # SIGINT/SIGTERM: unwinding stops the server; SIGKILL: the server sees its stdin close
    assert proc.wait(timeout=15) == returncode
    assert _gone(pid, url, within_s=10)
    assert not log.exists()  # removed by the parent, or by the server when the parent was killed


@pytest.mark.integration
@pytest.mark.model
def test_cli_serve_stops_on_ctrl_c() -> None:
    model = _model_or_skip("qwen2.5-0.5b")
    proc = start_allure(
        "serve", "--model", model, "--threads", "1", "--ctx-size", "1024", preexec_fn=_ctrl_c_interrupts
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("base_url: http://127.0.0.1:"), first
        base_url = first.split()[1]
        assert httpx.get(base_url + "/models", timeout=10).status_code == 200
        servers = _children(proc.pid)
        assert len(servers) == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "stopping" in err
    assert _gone(servers[0], base_url.removesuffix("/v1"), within_s=5)


@pytest.mark.integration
def test_bad_gguf_fails_cleanly_with_the_log(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + bytes(200))
    srv = LocalServer(LocalServerSettings(model=str(bad), threads=1, startup_timeout_s=30))
    with pytest.raises(EvaluatorError) as info:
        srv.start()
    assert "exited with status" in info.value.message
    # the server's own log lines come with it (under load the last one may be the server's summary)
    assert "failed to load model" in info.value.message or "Failed to init server" in info.value.message
    assert not srv.running and srv.pid is None
    leftovers = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _cmdline_mentions(p, str(bad))]
    assert leftovers == []


def _cmdline_mentions(path: Path, needle: str) -> bool:
    try:
        return needle in path.read_bytes().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


@pytest.mark.integration
@pytest.mark.model
def test_a_server_killed_mid_run_is_restarted_and_no_verdict_is_lost(tmp_path: Path) -> None:
    """SIGKILL the llama.cpp process after two verdicts: the evaluator restarts it on the same port."""
    from allure.config import AuditSpec, EvaluatorSpec, LocalSpec
    from allure.dataset import demo_spec
    from allure.evaluator import open_evaluator
    from allure.models import Item
    from allure.store import RunStore

    model = _model_or_skip("qwen2.5-0.5b")
    spec = AuditSpec(
        dataset=demo_spec(),
        evaluator=EvaluatorSpec(
            kind="local",
            model=model,
            local=LocalSpec(ctx_size=1024, threads=2),
            max_tokens=8,
            retry_backoff_s=0.01,
        ),
    )
    items = [
        Item(
            id=f"i{k}",
            task="Shortest path from room 1?",
            response=f"Answer: 1, {k}",
            gold_answers=["Answer: 1, 3"],
        )
        for k in range(5)
    ]
    store = RunStore(tmp_path / "a.db")
    killed: list[int] = []
    with open_evaluator(spec, store, items) as ev:
        server = ev.server
        first_pid, first_url = server.pid, server.root_url

        def progress(done: int, total: int) -> None:
            if done == 2 and not killed:
                os.kill(first_pid, signal.SIGKILL)
                killed.append(first_pid)
                while _alive(first_pid):
                    time.sleep(0.05)

        res = ev.evaluate("r", 1, items, lambda _item: [], progress=progress)
        assert killed and server.running and server.pid != first_pid
        assert server.root_url == first_url  # same port, so the ChatOpenAI client still reaches it
        second_pid = server.pid
    # every item answered (a 0.5B model may still word one without a label: that is not a failure here)
    assert len(items) > 0 and all(res.verdicts[it.id].status in ("ok", "unparsed") for it in items)
    assert res.stats.server_restarts == 1 and res.stats.errors == 0
    assert len(store.lookup_calls(v.prompt_hash for v in res.verdicts.values())) == 5
    assert second_pid is not None and _gone(second_pid, first_url, within_s=5)
