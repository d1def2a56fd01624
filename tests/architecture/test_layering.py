"""Layering: imports point down. Nothing below the TUI loads textual, nothing below ``graphs/``
imports ``graphs/``, no module imports another package's private module, and the import graph
(static imports included: inside functions and ``TYPE_CHECKING`` blocks) has no cycle."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.architecture.imports import find_cycle, import_graph

ABOVE_GRAPHS = (
    "allure.graphs",
    "allure.studies",
    "allure.robustness",
    "allure.reaudit",
    "allure.cli",
    "allure.tui",
    "allure.api",
)
"""The loop and what drives it (the CLI, the TUI, the Python API); everything else is below ``graphs/``."""

CLIENT = "allure.evaluator"
"""The judge's client: backends, pool, runner, prompting, parsing, the local server."""
PASSES = "allure.passes"
"""The pass pipeline (answers -> verdicts), the read-out among it: above the client, below its users."""
PASS_USERS = ("allure.graphs", "allure.studies", "allure.reaudit", "allure.judge")
"""What runs passes; with everything above ``graphs/``, never imported by the pass pipeline."""


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


@pytest.mark.integration
def test_layers_below_the_tui_never_load_textual() -> None:
    code = (
        "import sys\n"
        "import allure.graphs, allure.memory, allure.evaluator, allure.metrics, allure.report, allure.store\n"
        "import allure.passes, allure.passes.readout\n"
        "import allure.cli.main, allure.decisions, allure.models, allure.records, allure.settings\n"
        "from allure.memory import EpisodicMemory, build_candidates\n"
        "from allure.evaluator import open_evaluator\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'allure.tui')))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_nothing_below_graphs_imports_graphs() -> None:
    graph = import_graph()
    below = {m: deps for m, deps in graph.items() if not m.startswith(ABOVE_GRAPHS) and m != "allure"}
    assert len(below) > 40  # the whole core was read
    upward = {m: sorted(d for d in deps if d.startswith("allure.graphs")) for m, deps in below.items()}
    assert {m: d for m, d in upward.items() if d} == {}


def test_the_pass_pipeline_sits_above_the_client_and_below_its_users() -> None:
    graph = import_graph()
    client = {m: deps for m, deps in graph.items() if m.startswith(CLIENT)}
    passes = {m: deps for m, deps in graph.items() if m.startswith(PASSES)}
    assert len(client) > 15 and len(passes) > 12  # both rooms were read
    assert any(d.startswith(CLIENT) for deps in passes.values() for d in deps)  # the pipeline uses the client
    users = {
        m for m, deps in graph.items() if m.startswith(PASS_USERS) and any(d.startswith(PASSES) for d in deps)
    }
    assert {u.split(".")[1] for u in users} == {p.split(".")[1] for p in PASS_USERS}  # each user runs passes
    down = {m: sorted(d for d in deps if d.startswith(PASSES)) for m, deps in client.items()}
    assert {m: d for m, d in down.items() if d} == {}
    up = {m: sorted(d for d in deps if d.startswith(PASS_USERS + ABOVE_GRAPHS)) for m, deps in passes.items()}
    assert {m: d for m, d in up.items() if d} == {}


def test_no_module_imports_a_private_module_of_another_package() -> None:
    bad = []
    for module, deps in import_graph().items():
        for dep in deps:
            parent, _, leaf = dep.rpartition(".")
            inside = module == parent or module.startswith(parent + ".")
            if leaf.startswith("_") and parent != "allure" and not inside:
                bad.append(f"{module} imports {dep}")
    assert bad == []


def test_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert "allure.graphs.record" in graph and "allure.report" in graph["allure.graphs.record"]
    assert find_cycle(graph) is None
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        packages.setdefault(_package(module), set()).update(
            _package(d) for d in deps if _package(d) != _package(module)
        )
    assert find_cycle(packages) is None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
