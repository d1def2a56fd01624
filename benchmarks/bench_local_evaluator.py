"""The embedded evaluator's speed with an ICL block: allure's runner vs raw HTTP, prompt cache, ICL cost.

Demo items are graded by the embedded llama.cpp server with ``--icl`` examples (default 20)
in every prompt, the ICL block before the item and in a stable order. Three passes, each
on a freshly started server (so no pass inherits another's prompt cache):

1. **direct**: the rendered prompts sent one by one with ``httpx`` to ``/v1/chat/completions``;
2. **allure**: the same items through :func:`allure.evaluator.open_evaluator` and
   :meth:`Evaluator.evaluate` (allure's chat model, run store, retries), as an audit runs them;
3. **zero-shot**: the same items through allure with no examples.

Printed: items/s of (2) over (1) (target >= 0.95), the share of prompt tokens served from
the prompt cache after the first call of pass (2) (target >= 0.9; from
``usage.prompt_tokens_details.cached_tokens``, llama.cpp's ``timings.cache_n``), and the
wall time of (2) over (3) (target <= 2x). The graded items are 100 drawn as the demo audit
draws its 50 (``allure audit --demo``; ``--items`` takes fewer); the ``--icl`` shortest other demo items
become the examples. The ICL pass pays for its block once, on its first (cold) call: about a
minute for 20 examples on 2 cores, worth ~25 zero-shot items; so the wall ratio falls
with the number of items (2.2x at 24 items, measured) towards the steady per-item ratio,
which is printed too. The direct and allure passes run in ``--repeat`` interleaved rounds
(default 2) and the fastest of each counts, so a burst of load from another process does not
decide the ratio. About 40 minutes on 2 cores (38.5 measured) at the default size.

Usage::

    .venv/bin/python benchmarks/bench_local_evaluator.py [--model qwen2.5-coder-1.5b] [--icl 20] [--items 100] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from allure.config import AuditSpec, EvaluatorSpec, LocalSpec
from allure.dataset import demo_audit_spec, demo_spec, load_items
from allure.evaluator import open_evaluator
from allure.evaluator.local import LocalServer, LocalServerSettings
from allure.gold_check import GoldCheck
from allure.models import IclExample, Item
from allure.prompts import load_prompt_set
from allure.store import RunStore

_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


def pick(n_icl: int, n_items: int) -> tuple[list[IclExample], list[Item]]:
    """The demo audit's items to grade, and the ``n_icl`` shortest other demo items as examples.

    The items are in the order allure's runner sends them (those sharing a task together,
    where the task first appears), so that the direct pass gets the same prompt-cache reuse.
    """
    graded = load_items(demo_audit_spec().model_copy(update={"limit": max(n_items, 100)}))[:n_items]
    first: dict[str, int] = {}
    for k, it in enumerate(graded):
        first.setdefault(it.task, k)
    graded = [it for _k, it in sorted(enumerate(graded), key=lambda p: (first[p[1].task], p[0]))]
    taken = {it.id for it in graded}
    rest = sorted(
        (it for it in load_items(demo_spec()) if it.id not in taken),
        key=lambda it: (len(it.task) + len(it.response), it.id),
    )
    check = GoldCheck()
    examples = [
        IclExample(
            id=f"ex-{it.id}",
            item_id=it.id,
            task=it.task,
            response=it.response,
            gold_answers=it.gold_answers,
            correct_label=check.reference_label(it) or 0,
            problem_type=it.problem_type,
        )
        for it in rest[:n_icl]
    ]
    return examples, graded


def audit_spec(args: argparse.Namespace) -> AuditSpec:
    """The spec an audit of these items with the embedded evaluator would use."""
    local = LocalSpec(ctx_size=args.ctx_size, threads=args.threads)
    # a long timeout: the first call processes the whole ICL block, minutes on a busy small CPU
    evaluator = EvaluatorSpec(kind="local", model=args.model, local=local, timeout_s=900.0)
    return AuditSpec(dataset=demo_spec(), evaluator=evaluator)


def direct_pass(spec: AuditSpec, items: list[Item], examples: list[IclExample]) -> dict[str, Any]:
    """Send the rendered prompts one by one with httpx, the body the evaluator's chat model sends."""
    ev = spec.evaluator
    prompts = load_prompt_set(ev.prompt)
    settings = LocalServerSettings(model=ev.model, ctx_size=ev.local.ctx_size, threads=ev.local.threads)
    rows = []
    with LocalServer(settings) as srv, httpx.Client(timeout=ev.timeout_s) as client:
        start = time.perf_counter()
        for item in items:
            messages = [
                {"role": _ROLES[m.type], "content": m.content} for m in prompts.render(item, examples)
            ]
            body = {
                "model": srv.model_name,
                "messages": messages,
                "temperature": ev.temperature,
                "max_completion_tokens": ev.max_tokens,
                "seed": ev.seed,
                "logprobs": ev.logprobs,
                "top_logprobs": 5,
                **srv.extra_body(),
            }
            t0 = time.perf_counter()
            reply = client.post(srv.base_url + "/chat/completions", json=body)
            latency = time.perf_counter() - t0
            reply.raise_for_status()
            data = reply.json()
            usage = data["usage"]
            rows.append(
                {
                    "text": data["choices"][0]["message"]["content"],
                    "prompt": usage["prompt_tokens"],
                    "cached": usage.get("prompt_tokens_details", {}).get("cached_tokens", 0),
                    "latency": latency,
                }
            )
        wall = time.perf_counter() - start
    return {"wall": wall, "rows": rows}


def allure_pass(
    spec: AuditSpec, items: list[Item], examples: list[IclExample], folder: Path, name: str
) -> dict[str, Any]:
    """Label the items with allure's evaluator (fresh server, fresh run store), as an audit does."""
    store = RunStore(folder / f"{name}.db")
    run_id = store.create_run(spec.model_dump(mode="json"))
    with open_evaluator(spec, store, items) as evaluator:
        result = evaluator.evaluate(run_id, 0, items, lambda _item: examples)
    verdicts = [result.verdicts[it.id] for it in items]
    rows = [
        {"text": v.raw_output, "prompt": v.prompt_tokens, "cached": v.cached_tokens, "latency": v.latency_s}
        for v in verdicts
    ]
    return {"wall": result.stats.wall_s, "rows": rows, "errors": result.stats.errors}


def cache_share(rows: list[dict[str, Any]]) -> float:
    """Cached prompt tokens over all prompt tokens, leaving out the first (cold) call.

    With several calls in flight the server may take them in any order, so the cold call
    is the one with the fewest cached tokens, not necessarily the first item.
    """
    cold = min(range(len(rows)), key=lambda i: rows[i]["cached"])
    later = [r for i, r in enumerate(rows) if i != cold]
    return sum(r["cached"] for r in later) / max(1, sum(r["prompt"] for r in later))


def cold_latency(rows: list[dict[str, Any]]) -> float:
    """Latency of the cold call (the fewest cached tokens): served first, it waited for no other call."""
    fewest = min(r["cached"] for r in rows)
    return max(r["latency"] for r in rows if r["cached"] == fewest)


def main() -> None:
    """Run the three passes and print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="builtin model name or .gguf path")
    parser.add_argument("--icl", type=int, default=20, help="ICL examples in every prompt")
    parser.add_argument("--items", type=int, default=100, help="items graded per pass")
    parser.add_argument("--threads", type=int, default=None, help="server CPU threads (default: all)")
    parser.add_argument("--ctx-size", type=int, default=8192, help="server context size")
    parser.add_argument(
        "--repeat", type=int, default=2, help="rounds of direct+allure passes; the fastest counts"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    examples, items = pick(args.icl, args.items)
    spec = audit_spec(args)
    print(
        f"model {args.model}, {len(examples)} ICL examples, {len(items)} items, threads {args.threads or os.cpu_count()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        directs, icls = [], []
        for round_no in range(args.repeat):  # interleaved, so load from other processes hits both
            directs.append(direct_pass(spec, items, examples))
            icls.append(allure_pass(spec, items, examples, Path(tmp), f"icl{round_no}"))
        zero = allure_pass(spec, items, [], Path(tmp), "zero")
    direct = min(directs, key=lambda p: p["wall"])
    icl = min(icls, key=lambda p: p["wall"])

    n = len(items)
    same = sum(a["text"] == b["text"] for a, b in zip(direct["rows"], icl["rows"], strict=True))
    print(
        f"prompt tokens per item (ICL): first {icl['rows'][0]['prompt']}, mean {sum(r['prompt'] for r in icl['rows']) / n:.0f}"
    )
    print(f"prompt tokens per item (zero-shot): mean {sum(r['prompt'] for r in zero['rows']) / n:.0f}")
    print(f"direct httpx:      {direct['wall']:7.1f} s  {n / direct['wall']:.3f} items/s")
    print(f"allure evaluator:  {icl['wall']:7.1f} s  {n / icl['wall']:.3f} items/s  ({icl['errors']} errors)")
    print(
        f"allure zero-shot:  {zero['wall']:7.1f} s  {n / zero['wall']:.3f} items/s  ({zero['errors']} errors)"
    )
    print(f"same output as direct: {same}/{n}")
    print(f"throughput allure/direct: {direct['wall'] / icl['wall']:.3f}  (target >= 0.95)")
    cold_direct, cold_icl, cold_zero = (cold_latency(p["rows"]) for p in (direct, icl, zero))
    warm = (direct["wall"] - cold_direct) / (icl["wall"] - cold_icl)
    print(
        f"throughput allure/direct after each pass's cold first call: {warm:.3f}"
        f"  (cold calls: direct {cold_direct:.1f} s, allure {cold_icl:.1f} s)"
    )
    print(
        f"prompt-cache share after the first call: allure {cache_share(icl['rows']):.3f}, direct {cache_share(direct['rows']):.3f}  (target >= 0.9)"
    )
    print(f"wall ICL/zero-shot: {icl['wall'] / zero['wall']:.2f}x  (target <= 2x)")
    steady = (icl["wall"] - cold_icl) / (zero["wall"] - cold_zero)
    print(f"wall ICL/zero-shot after each pass's cold first call: {steady:.2f}x")


if __name__ == "__main__":
    main()
