"""allure's per-call overhead against a plain async HTTP client, on a server that is not the bottleneck.

For each (concurrency, server latency) case the same N request bodies are sent

- (a) by a plain ``httpx.AsyncClient`` (bounded by a semaphore, one pooled connection per slot),
  and, for reference, by a plain ``aiohttp`` session;
- (b) by ``allure audit`` with an ``openai`` evaluator in a fresh project (empty cache and memory),
  one pass over N items.

The server is ``benchmarks/fast_openai_server.py`` (several processes on 127.0.0.1, a fixed
completion with logprobs, an optional fixed latency per call that uses no CPU). The script
prints calls/s for each client, the ratio allure/raw (allure's evaluate phase against the
raw httpx client), allure's load, evaluate and report times, and a profile of allure's
evaluator path run in this process (cProfile, which slows everything it watches about 2x:
read its figures as shares). The machine's load average is printed with each case, since
other processes on a shared machine change every calls/s figure.

The bar (issue 17, against raw aiohttp since issue 28): allure/raw >= 0.8 at concurrency 64 with
0 ms, >= 0.95 at concurrency 16 with 50 ms, over >= 5,000 calls each; the raw client >= 1,000
calls/s at 0 ms. httpx itself costs 2 to 6 ms of CPU per call on the 2-core benchmark machine
(anyio and h11 under cProfile), so it cannot show the server's ceiling there; aiohttp can: the bar
is read against it; both ratios are printed. allure itself sends over its own HTTP/1.1 connections
(``allure/_http1.py``, about a fifth of aiohttp's CPU a call), so the ratio can exceed 1.

Usage::

    python benchmarks/bench_client_overhead.py [--n 5000] [--cases 64:0,16:50] [--rounds 1]
        [--workers 2] [--profile-n 2000] [--no-profile] [--readout-none]

With ``--rounds R`` (R >= 2) the arms alternate R times and the bar is read on the **median of the
rounds' ratios** (allure and raw aiohttp timed back to back within a round, under the same load): a
5,000-call pass at 0 ms lasts about a second, so one round's ratio swings from 0.5 to 1.1 on a shared
2-core machine and the fastest round of each arm (the headline with one round) can pair a lucky raw
round with an unlucky allure one. Each round's ratio is printed.

``--readout-none`` times a second allure arm with ``readout = "none"`` in each round: the default
(``auto``) fits, decides and applies the learned read-out before the pass ends.

No download, no install: the server uses the standard library (and uvloop when installed).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).with_name("fast_openai_server.py")
KEY_ENV = "ALLURE_BENCH_KEY"


# -- the server -------------------------------------------------------------------------------------
class Server:
    """The fast server in a child process group; ``stop()`` ends it."""

    def __init__(self, tmp: Path, delay_ms: float, workers: int) -> None:
        port_file = tmp / f"port-{time.time_ns()}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(SERVER),
                "--port-file",
                str(port_file),
                "--workers",
                str(workers),
            ]
            + ["--delay-ms", str(delay_ms)],
            start_new_session=True,
        )
        deadline = time.time() + 30
        while not port_file.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError("the benchmark server did not start")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)


# -- the data -----------------------------------------------------------------------------------------
def write_dataset(path: Path, n: int) -> None:
    """``n`` distinct items made from the shipped CogEval demo rows (real task and response lengths)."""
    from allure.dataset import demo_spec, load_items

    base = load_items(demo_spec())
    seen: set[tuple[str, str]] = set()  # the demo repeats some (task, response) pairs: every prompt differs
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            it = base[i % len(base)]
            response = it.response
            if i >= len(base) or (it.task, response) in seen:
                response = f"{response}\n(variant {i})"
            seen.add((it.task, response))
            row = {
                "id": f"{it.id}-{i}",
                "task": it.task,
                "response": response,
                "gold": it.gold_answers,
                "problem_type": it.problem_type,
                "generator": it.generator,
            }
            fh.write(json.dumps(row) + "\n")


def write_spec(
    project: Path, data: Path, base_url: str, concurrency: int, readout: str | None = None
) -> Path:
    """One zero-shot pass over every item, no held-out split, nothing to review; ``readout``: the
    spec's ``[evaluator] readout`` (``None``: the default, ``auto``)."""
    project.mkdir(parents=True, exist_ok=True)
    spec = project / "audit.toml"
    spec.write_text(
        f"""name = "client-overhead"
[dataset]
path = "{data}"
format = "jsonl"
[dataset.columns]
id = "id"
task = "task"
response = "response"
gold_answers = "gold"
problem_type = "problem_type"
generator = "generator"
[evaluator]
kind = "openai"
model = "bench-model"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
concurrency = {concurrency}
max_retries = 0
calibration = "none"  # the per-call cost of the same N requests (auto would add 3 content-free calls)
{"" if readout is None else f'readout = "{readout}"'}
[memory]
location = "{project / "memory"}"
[loop]
max_iterations = 1
heldout_fraction = 0.0
bootstrap_resamples = 100
max_candidates = 50
"""
    )
    return spec


def request_bodies(spec_path: Path) -> list[bytes]:
    """The JSON bodies allure's backend sends for the spec's items (zero-shot prompts), byte for byte."""
    from allure.config import load_spec
    from allure.dataset import load_items
    from allure.evaluator import open_evaluator
    from allure.store import RunStore

    os.environ.setdefault(KEY_ENV, "bench")
    spec = load_spec(spec_path)
    items = load_items(spec.dataset, base_dir=spec_path.parent, label_set=spec.label_set)
    store = RunStore(spec_path.parent / "bodies.db")
    try:
        with open_evaluator(spec, store, items) as ev:
            o = ev.options
            settings = {
                "temperature": o.temperature,
                "max_tokens": o.max_tokens,
                "logprobs": o.logprobs,
                "seed": o.seed,
            }
            return [ev.backend.request_json(ev.prompts.render(it, []), **settings) for it in items]  # type: ignore[attr-defined]
    finally:
        store.close()


# -- (a) the raw clients --------------------------------------------------------------------------------
async def _raw_httpx(url: str, bodies: list[bytes], concurrency: int) -> float:
    import httpx

    sem = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def one(body: bytes) -> None:
            async with sem:
                resp = await client.post(url, content=body, headers=headers)
                resp.raise_for_status()
                resp.json()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - t0


async def _raw_aiohttp(url: str, bodies: list[bytes], concurrency: int) -> float:
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def one(body: bytes) -> None:
            async with sem, session.post(url, data=body, headers=headers) as resp:
                resp.raise_for_status()
                await resp.json()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - t0


def raw(kind: str, base_url: str, bodies: list[bytes], concurrency: int) -> dict[str, float]:
    """Send ``bodies`` with a plain client; calls/s and client CPU ms per call."""
    fn = _raw_httpx if kind == "httpx" else _raw_aiohttp
    c0 = time.process_time()
    wall = asyncio.run(fn(base_url + "/chat/completions", bodies, concurrency))
    cpu = time.process_time() - c0
    return {
        "calls_s": len(bodies) / wall,
        "wall_s": wall,
        "cpu_ms": 1000 * cpu / len(bodies),
    }


# -- (b) allure audit -----------------------------------------------------------------------------------
def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a live process has used so far, from /proc (NaN where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_allure(spec: Path, project: Path, root: Path = ROOT) -> dict[str, Any]:
    """``allure audit SPEC`` from the checkout ``root`` in a subprocess; phase times from its status lines."""
    env = {
        **os.environ,
        KEY_ENV: "bench",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "allure.cli.main",
            "audit",
            str(spec),
            "--project",
            str(project),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,  # `python -m` puts the working directory first on sys.path: it must be root's checkout
    )
    lines: list[tuple[float, str]] = []
    cpu_at: dict[str, float] = {}
    assert proc.stderr is not None
    for raw_line in proc.stderr:
        lines.append((time.perf_counter() - t0, raw_line.rstrip()))
        for mark in ("iteration 1: evaluating", " calls, "):
            if mark in raw_line and mark not in cpu_at:
                cpu_at[mark] = _cpu_seconds(proc.pid)
    proc.wait()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError("allure audit failed:\n" + "\n".join(x for _, x in lines[-20:]))

    def at(text: str) -> float:
        return next(t for t, x in lines if text in x)

    def line(text: str) -> str:
        return next(x for _, x in lines if text in x)

    evaluating, evaluated = at("iteration 1: evaluating"), at(" calls, ")
    stopped = at("stopped:")
    calls = int(line(" calls, ").split(": ", 1)[1].split(" calls")[0])
    eval_s = evaluated - evaluating
    eval_cpu = cpu_at.get(" calls, ", float("nan")) - cpu_at.get("iteration 1: evaluating", float("nan"))
    return {
        "calls": calls,
        "cpu_ms": 1000 * eval_cpu / calls,
        "calls_s": calls / eval_s,
        "wall_s": wall,
        "start_load_s": at(" held out"),
        "eval_s": eval_s,
        "after_eval_s": stopped - evaluated,
        "exit_s": wall - stopped,
    }


# -- where the time goes ------------------------------------------------------------------------------------
async def _pool(n_workers: int, jobs: list[Any], call: Any) -> None:
    todo = iter(jobs)

    async def worker() -> None:
        for job in todo:
            await call(job)

    await asyncio.gather(*(worker() for _ in range(n_workers)))


def _timed(coro_fn: Any) -> tuple[float, float]:
    """Run ``coro_fn()`` in a uvloop event loop (as allure's evaluator does); wall and CPU seconds."""
    import uvloop

    c0, t0 = time.process_time(), time.perf_counter()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(coro_fn())
    return time.perf_counter() - t0, time.process_time() - c0


def layers(spec_path: Path, n: int, tmp: Path) -> list[tuple[str, float, float]]:
    """The same calls through each client layer, in this process, one after another.

    Returns ``(layer, calls/s, CPU ms per call)`` rows: raw aiohttp; the OpenAI SDK as it comes
    (``AsyncOpenAI``, its own httpx client); LangChain's ``ChatOpenAI.ainvoke`` (which allure used
    before; skipped when ``langchain-openai`` is not installed); allure's chat model
    (``OpenAIBackend.complete``); allure's ``Evaluator`` (prompts, cache lookup, parsing,
    store writes on top of its backend) with a fresh store.
    """
    import aiohttp
    import openai

    from allure.config import load_spec
    from allure.dataset import load_items
    from allure.evaluator import build_openai_backend, open_evaluator
    from allure.prompts import load_prompt_set
    from allure.store import RunStore

    os.environ[KEY_ENV] = "bench"
    spec = load_spec(spec_path)
    ev = spec.evaluator
    conc = ev.concurrency
    items = load_items(spec.dataset, base_dir=spec_path.parent, label_set=spec.label_set)[:n]
    prompts = load_prompt_set(ev.prompt)
    messages = [prompts.render(it, []) for it in items]

    def chat() -> Any:
        return build_openai_backend(
            model=ev.model, base_url=ev.base_url, api_key_env=KEY_ENV, temperature=ev.temperature,
            max_tokens=ev.max_tokens, seed=ev.seed, logprobs=ev.logprobs, timeout_s=ev.timeout_s,
            max_connections=conc,
        )  # fmt: skip

    payloads = [chat().request_body(m) for m in messages]
    bodies = [json.dumps(p).encode() for p in payloads]
    url = f"{ev.base_url}/chat/completions"
    rows = []

    async def raw_aiohttp() -> None:
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as session:

            async def call(body: bytes) -> None:
                async with session.post(url, data=body, headers=headers) as resp:
                    json.loads(await resp.read())

            await _pool(conc, bodies, call)

    async def sdk() -> None:
        client = openai.AsyncOpenAI(
            base_url=ev.base_url, api_key="bench", max_retries=0, timeout=ev.timeout_s
        )

        async def call(payload: dict[str, Any]) -> None:
            await client.chat.completions.create(**payload)

        await _pool(conc, payloads, call)
        await client.close()

    async def chat_openai() -> None:
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(
            model=ev.model, base_url=ev.base_url, api_key="bench", temperature=ev.temperature,  # type: ignore[arg-type]
            max_tokens=ev.max_tokens, seed=ev.seed, logprobs=ev.logprobs, top_logprobs=5, max_retries=0,  # type: ignore[call-arg]
        )  # fmt: skip

        async def call(msgs: Any) -> None:
            await model.ainvoke(msgs)

        await _pool(conc, messages, call)

    async def ours() -> None:
        async with chat() as backend:  # the backend closes its own connections

            async def call(msgs: Any) -> None:
                await backend.complete(msgs)

            await _pool(conc, messages, call)

    steps = [
        ("raw aiohttp (json.loads of the reply)", raw_aiohttp),
        ("OpenAI SDK chat.completions.create", sdk),
        ("LangChain ChatOpenAI.ainvoke (not used)", chat_openai),
        ("allure OpenAIBackend.complete", ours),
    ]
    for name, fn in steps:
        try:
            wall, cpu = _timed(fn)
        except ImportError as exc:
            print(f"  ({name}: skipped, {exc})")
            continue
        rows.append((name, n / wall, 1000 * cpu / n))

    store = RunStore(tmp / f"layers-{time.time_ns()}.db")
    run_id = store.create_run({})
    c0, t0 = time.process_time(), time.perf_counter()
    with open_evaluator(spec, store, items) as evaluator:
        result = evaluator.evaluate(run_id, 1, items, lambda item: [])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    store.close()
    assert result.stats.calls == n, result.stats
    rows.append(("allure Evaluator.evaluate (fresh store)", n / wall, 1000 * cpu / n))

    # the evaluator's own cost: the same pass with a backend that answers at once (no HTTP)
    from allure.evaluator import ChatBackend, Evaluator, Reply, Usage

    reply = Reply(text="score: 1", logprobs=None, usage=Usage(100, 3, 0))

    class Instant(ChatBackend):
        async def complete(self, messages: Any, **_settings: Any) -> Reply:
            await asyncio.sleep(0)
            return reply

    store = RunStore(tmp / f"layers-instant-{time.time_ns()}.db")
    run_id = store.create_run({})
    c0, t0 = time.process_time(), time.perf_counter()
    with open_evaluator(spec, store, items) as evaluator:
        instant = Evaluator(evaluator.options, store=store, backend=Instant())
        result = instant.evaluate(run_id, 1, items, lambda item: [])
        instant.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    store.close()
    assert result.stats.calls == n, result.stats
    rows.append(("allure Evaluator, a backend with no HTTP", n / wall, 1000 * cpu / n))
    return rows


ALLURE_PARTS = [
    ("prompt building (render + hash)", ["_prompting.py:build_jobs"]),
    ("cache lookup", ["_calls.py:lookup_calls", "_db.py:lookup_calls"]),
    ("request bodies (messages -> JSON)", ["_openai.py:request_json"]),
    ("parsing (reply, label, logprobs, Verdict)", ["_openai.py:parse_reply", "_provenance.py:verdict"]),
    # since issue 28 the writes run in the pass's store thread, which cProfile does not watch: the
    # layer "a backend with no HTTP" above shows their cost (CPU of all threads)
    ("store writes (batched; main thread only)", ["_provenance.py:store_many", "_provenance.py:record"]),
]


def _own(stats: pstats.Stats, key: str) -> float:
    """Cumulative seconds of the functions ``file:name`` names (synchronous functions only)."""
    file_part, func = key.rsplit(":", 1)
    total = 0.0
    for (fname, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if name == func and fname.replace("\\", "/").endswith(file_part):
            total += row[3]
    return total


def profile_allure_parts(spec_path: Path, n: int, tmp: Path) -> list[tuple[str, float]]:
    """cProfile of one evaluator pass: ms per call in allure's own synchronous parts (profiler-inflated)."""
    from allure.config import load_spec
    from allure.dataset import load_items
    from allure.evaluator import open_evaluator
    from allure.store import RunStore

    os.environ[KEY_ENV] = "bench"
    spec = load_spec(spec_path)
    items = load_items(spec.dataset, base_dir=spec_path.parent, label_set=spec.label_set)[:n]
    store = RunStore(tmp / f"profile-{time.time_ns()}.db")
    run_id = store.create_run({})
    prof = cProfile.Profile()
    prof.enable()
    with open_evaluator(spec, store, items) as evaluator:
        result = evaluator.evaluate(run_id, 1, items, lambda item: [])
    prof.disable()
    store.close()
    calls = result.stats.calls
    stats = pstats.Stats(prof)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    out = [("all CPU time under the profiler", 1000 * total / calls)]
    out += [(label, 1000 * sum(_own(stats, k) for k in keys) / calls) for label, keys in ALLURE_PARTS]
    return out


# -- main --------------------------------------------------------------------------------------------------
def _ratio(per_round: list[dict[str, dict[str, Any]]], arm: str) -> float:
    """The median over the rounds of ``arm``'s calls/s against raw aiohttp's in the same round."""
    return statistics.median(x[arm]["calls_s"] / x["aiohttp"]["calls_s"] for x in per_round)


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="calls per case")
    ap.add_argument(
        "--cases",
        default="64:0,16:50",
        help="concurrency:latency_ms pairs, comma-separated",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat each case; from 2 on, the bar reads the median of the rounds' ratios",
    )
    ap.add_argument("--workers", type=int, default=2, help="server processes")
    ap.add_argument("--profile-n", type=int, default=2000, help="calls in the profiled pass")
    ap.add_argument("--no-profile", action="store_true", help="skip the profile")
    ap.add_argument("--keep", action="store_true", help="keep the temporary projects")
    ap.add_argument(
        "--readout-none",
        action="store_true",
        help="also time allure with [evaluator] readout = none in each round (the read-out's share)",
    )
    ap.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="another allure checkout to time the same way (before/after)",
    )
    args = ap.parse_args()
    cases = [tuple(float(x) for x in c.split(":")) for c in args.cases.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="allure-overhead-"))
    data = tmp / "items.jsonl"
    t0 = time.perf_counter()
    write_dataset(data, args.n)
    print(f"dataset: {args.n} items ({time.perf_counter() - t0:.1f} s to write); {_load()}")
    summary = []
    none_summary: list[tuple[int, float, float]] = []
    try:
        for conc_f, delay in cases:
            conc = int(conc_f)
            server = Server(tmp, delay, args.workers)
            try:
                spec0 = write_spec(tmp / "bodies", data, server.base_url, conc)
                bodies = request_bodies(spec0)
                best: dict[str, dict[str, Any]] = {}
                per_round: list[dict[str, dict[str, Any]]] = []
                for r in range(args.rounds):
                    per_round.append({})
                    extra = (("compare",) if args.compare else ()) + (
                        ("readout-none",) if args.readout_none else ()
                    )
                    for kind in ("httpx", "aiohttp", "allure", *extra):
                        if kind in ("allure", "compare", "readout-none"):
                            project = tmp / f"{kind}-c{conc}-d{delay:g}-r{r}"
                            root = args.compare if kind == "compare" else ROOT
                            readout = "none" if kind == "readout-none" else None
                            res = run_allure(
                                write_spec(project, data, server.base_url, conc, readout),
                                project,
                                root,
                            )
                            if res["calls"] != len(bodies):
                                raise RuntimeError(f"allure made {res['calls']} calls, not {len(bodies)}")
                        else:
                            res = raw(kind, server.base_url, bodies, conc)
                        res["load"] = _load()
                        per_round[-1][kind] = res
                        if kind not in best or res["calls_s"] > best[kind]["calls_s"]:
                            best[kind] = res
            finally:
                server.stop()
            h, a, al = best["httpx"], best["aiohttp"], best["allure"]
            print(f"\n== concurrency {conc}, server latency {delay:g} ms, {len(bodies)} calls ==")
            print(f"  raw httpx    {h['calls_s']:8.0f} calls/s  ({h['cpu_ms']:.3f} ms CPU/call; {h['load']})")
            print(f"  raw aiohttp  {a['calls_s']:8.0f} calls/s  ({a['cpu_ms']:.3f} ms CPU/call; {a['load']})")
            print(
                f"  allure       {al['calls_s']:8.0f} calls/s  ({al['cpu_ms']:.3f} ms CPU/call in the evaluate phase; "
                f"{al['load']})"
            )
            if "compare" in best:
                c = best["compare"]
                print(
                    f"  allure at {args.compare}: {c['calls_s']:.0f} calls/s ({c['cpu_ms']:.3f} ms CPU/call), "
                    f"allure/raw httpx {c['calls_s'] / h['calls_s']:.3f} ({c['load']})"
                )
            if "readout-none" in best:
                rn = best["readout-none"]
                print(
                    f"  allure, readout = none: {rn['calls_s']:.0f} calls/s ({rn['cpu_ms']:.3f} ms CPU/call), "
                    f"allure/raw aiohttp {rn['calls_s'] / a['calls_s']:.3f} ({rn['load']})"
                )
            print(
                f"  allure/raw httpx {al['calls_s'] / h['calls_s']:.3f} (calls/s)   "
                f"{h['cpu_ms'] / al['cpu_ms']:.3f} (CPU per call: the calls/s ratio of a CPU-bound client "
                f"on an idle core)   allure/raw aiohttp {al['calls_s'] / a['calls_s']:.3f}"
            )
            if len(per_round) > 1:  # the arms alternate: each round's ratio under that round's load
                print(
                    "  each round, allure/raw aiohttp (allure CPU ms/call): "
                    + ", ".join(
                        f"{x['allure']['calls_s'] / x['aiohttp']['calls_s']:.3f} ({x['allure']['cpu_ms']:.3f})"
                        for x in per_round
                    )
                )
                if args.readout_none:
                    print(
                        "  each round, readout = none, allure/raw aiohttp: "
                        + ", ".join(
                            f"{x['readout-none']['calls_s'] / x['aiohttp']['calls_s']:.3f}" for x in per_round
                        )
                    )
            print(
                f"  allure times: process start + load {al['start_load_s']:.1f} s, evaluate {al['eval_s']:.1f} s, "
                f"score + report {al['after_eval_s']:.1f} s, exit {al['exit_s']:.1f} s, "
                f"wall {al['wall_s']:.1f} s"
            )
            summary.append(
                (
                    conc,
                    delay,
                    len(bodies),
                    h["calls_s"],
                    a["calls_s"],
                    al["calls_s"],
                    _ratio(per_round, "allure"),
                )
            )
            if "readout-none" in best:
                none_summary.append((conc, delay, _ratio(per_round, "readout-none")))
        if not args.no_profile:
            server = Server(tmp, 0.0, args.workers)
            try:
                n_prof = min(args.profile_n, args.n)
                conc = int(cases[0][0])
                spec = write_spec(tmp / "profile", data, server.base_url, conc)
                print(f"\nwhere the time goes: {n_prof} calls per layer, concurrency {conc}, 0 ms; {_load()}")
                print(f"  {'layer':<46} {'calls/s':>8} {'CPU ms/call':>12}")
                for name, rate, cpu_ms in layers(spec, n_prof, tmp):
                    print(f"  {name:<46} {rate:8.0f} {cpu_ms:12.3f}")
                print(
                    "  allure's own parts, from cProfile (inflated by the profiler; compare with its total):"
                )
                for name, ms in profile_allure_parts(spec, n_prof, tmp):
                    print(f"    {name:<44} {ms:8.3f} ms/call")
            finally:
                server.stop()
        print(
            "\nsummary (bar: allure/raw >= 0.8 at 64/0 ms, >= 0.95 at 16/50 ms, raw aiohttp being the bar's raw "
            "client; the server answers >= 1,000 calls/s to a plain async client at 0 ms)"
        )
        how = f"median of {args.rounds} rounds' ratios" if args.rounds > 1 else "one round"
        for conc, delay, n, h_s, a_s, al_s, ratio in summary:
            bar = 0.8 if delay == 0 else 0.95
            print(
                f"  concurrency {conc:3d}, {delay:3g} ms, {n} calls: raw httpx {h_s:6.0f}, raw aiohttp {a_s:6.0f}, "
                f"allure {al_s:6.0f} calls/s (fastest rounds); allure/raw aiohttp {ratio:.3f}, {how} "
                f"({'meets' if ratio >= bar else 'misses'} {bar}; fastest against fastest {al_s / a_s:.3f}), "
                f"allure/raw httpx {al_s / h_s:.3f}"
            )
        for conc, delay, ratio in none_summary:
            print(
                f"  concurrency {conc:3d}, {delay:3g} ms, readout = none (same run): allure/raw aiohttp {ratio:.3f}"
            )
        for conc, delay, _n, h_s, a_s, _al, _r in summary:
            if delay == 0:
                print(
                    f"  server at 0 ms, concurrency {conc}: {max(h_s, a_s):.0f} calls/s to a plain async client "
                    f"({'>=' if max(h_s, a_s) >= 1000 else '<'} 1,000); raw httpx alone {h_s:.0f} calls/s"
                )
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _stop_on_term(_signum: int, _frame: Any) -> None:
    raise SystemExit(
        143
    )  # unwinds through the cases' ``finally``: their servers are stopped, none left behind


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop_on_term)
    raise SystemExit(main())
