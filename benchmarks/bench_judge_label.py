"""Labelling with an exported judge costs what an audit pass costs: the same pass, no extra work per item.

Steps, each an ``allure`` subprocess against ``benchmarks/fast_openai_server.py`` (0 ms, a fixed
completion with logprobs):

1. ``allure audit`` of N items (one zero-shot pass, nothing held out, calibration off) in a fresh
   project: the audit pass's calls/s is read from its report (calls / the pass's wall time);
2. ``allure judge export`` of that run;
3. ``allure judge label`` of the same N items with the bundle in another fresh project (every call
   new): its calls/s from its summary line (calls / the pass's wall time);
4. the same label again: it must send 0 calls (the run store answers).

Rounds alternate audit and label (fresh projects each). The last line prints both median rates
and the median of the rounds' label/audit ratios (the bar: >= 0.95). The label process starts its
pass once its HTTP client is loaded, as the audit's does (it loads it while it prepares).

Usage: python benchmarks/bench_judge_label.py [--n 5000] [--rounds 3] [--workers 2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_client_overhead import KEY_ENV, ROOT, Server, write_dataset, write_spec  # noqa: E402

BAR = 0.95
SUMMARY = re.compile(r"(\d+) items: (\d+) calls, (\d+) cache hits, ([0-9.]+) s")


def _allure(*args: str) -> str:
    env = {**os.environ, KEY_ENV: "bench", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    res = subprocess.run(
        [sys.executable, "-m", "allure.cli.main", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if res.returncode != 0:
        raise RuntimeError(f"allure {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}")
    return res.stdout + res.stderr


def audit_rate(spec: Path, project: Path) -> tuple[float, str]:
    """(calls/s of the audit's pass, run id)."""
    _allure("audit", str(spec), "--auto-approve", "--project", str(project))
    report = json.loads(next((project / ".allure" / "runs").glob("*/report.json")).read_text())
    it = report["iterations"][0]
    return it["calls"] / it["wall_s"], report["run_id"]


def label_rate(data: Path, bundle: Path, project: Path) -> tuple[float, int]:
    """(calls/s of the label pass, calls sent)."""
    out = _allure("judge", "label", str(data), "--judge", str(bundle), "--project", str(project))
    _, calls, _, wall = SUMMARY.search(out).groups()  # type: ignore[union-attr]
    return (int(calls) / float(wall) if int(calls) else 0.0), int(calls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = tmp / "items.jsonl"
        write_dataset(data, args.n)
        server = Server(tmp, 0.0, args.workers)
        try:
            audits, labels = [], []
            for r in range(args.rounds):
                spec = write_spec(tmp / f"a{r}", data, server.base_url, args.concurrency)
                rate, run_id = audit_rate(spec, tmp / f"a{r}")
                audits.append(rate)
                bundle = tmp / f"bundle{r}"
                _allure("judge", "export", run_id, "--out", str(bundle), "--project", str(tmp / f"a{r}"))
                rate, calls = label_rate(data, bundle, tmp / f"l{r}")
                assert calls == args.n, f"the label pass sent {calls} calls, not {args.n}"
                labels.append(rate)
                print(f"round {r + 1}: audit pass {audits[-1]:.0f} calls/s, judge label {rate:.0f} calls/s")
            _, again = label_rate(data, bundle, tmp / f"l{args.rounds - 1}")
            print(f"a second label of the same {args.n} items sent {again} calls")
        finally:
            server.stop()
    a, lab = statistics.median(audits), statistics.median(labels)
    # each round's label/audit ratio pairs two passes run back to back (the load of a shared
    # machine drifts between rounds); the median of those is the figure compared with the bar
    ratio = statistics.median(x / y for x, y in zip(labels, audits, strict=True))
    print(
        f"judge label {lab:.0f} calls/s, audit pass {a:.0f} calls/s, ratio {ratio:.3f} "
        f"(bar >= {BAR}); second label: {again} calls"
    )
    return 0 if ratio >= BAR and again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
