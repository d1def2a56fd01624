"""Backend kinds are registered, and own their facts.

A toy backend from a package of its own (``tests/fixtures/toy_backend_pkg``: one module, one entry
point line in its ``pyproject.toml``) runs a real ``allure audit`` from a spec that says
``kind = "toy"``; an unknown kind is exit 2 with the closest name; the built-in kinds' facts (retry
rule, concurrency, identity, drift probe, replay, logprobs) are read from the kind, and a kind of
its own never gets the OpenAI ``/models`` probe.
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import allure
from allure.backends import ENTRY_POINT_GROUP, backend_names, register_backend
from allure.config import AuditSpec, load_spec
from allure.errors import SpecError
from allure.evaluator import BackendKind, ChatBackend, Reply, backend_kind
from allure.store import RunStore
from tests.cli_run import allure as run_allure
from tests.conftest import replay_spec_text

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy_backend_pkg"


def install_toy(site: Path) -> Path:
    """Install the toy package into ``site`` as an installer would lay it out: its module, and a
    ``.dist-info`` whose ``entry_points.txt`` holds the entry points its ``pyproject.toml`` declares."""
    meta = tomllib.loads((TOY / "pyproject.toml").read_text())["project"]
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(TOY / "toy_backend.py", site / "toy_backend.py")
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    groups = meta["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
            for group, points in groups.items()
        )
    )
    assert ENTRY_POINT_GROUP in groups  # the one line the package adds
    return site


def _spec(tmp: Path, kind: str) -> AuditSpec:
    (tmp / "audit.toml").write_text(replay_spec_text(tmp).replace('kind = "replay"', f'kind = "{kind}"'))
    return load_spec(tmp / "audit.toml")


def _toy_label(item_id: str) -> int:
    return int(sum(map(ord, item_id)) % 2 == 0)


@pytest.mark.integration
def test_a_toy_backend_from_its_own_package_runs_an_audit(tmp_path: Path) -> None:
    import os

    site = install_toy(tmp_path / "site")
    toy_spec = replay_spec_text(tmp_path).replace('kind = "replay"', 'kind = "toy"')
    (tmp_path / "audit.toml").write_text(toy_spec)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    res = run_allure("audit", "audit.toml", cwd=tmp_path, env={"PYTHONPATH": path})
    assert res.returncode == 0, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    store = RunStore(tmp_path / ".allure" / "allure.db", create=False)
    try:
        assert store.get_run(run_id).spec["evaluator"]["kind"] == "toy"
        verdicts = store.verdicts(run_id, 1)
    finally:
        store.close()
    assert len(verdicts) > 10
    assert {v.model for v in verdicts.values()} == {"toy-judge"}
    assert {i: v.label for i, v in verdicts.items()} == {i: _toy_label(i) for i in verdicts}
    assert {v.raw_output for v in verdicts.values()} == {"score: 0", "score: 1"}

    # a package whose entry point does not load: exit 2 naming it, no run begun
    broken = site / "broken_kind-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-kind\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbroken = no_such_module:Kind\n")
    (tmp_path / "broken.toml").write_text(
        replay_spec_text(tmp_path).replace('kind = "replay"', 'kind = "broken"')
    )
    bad = run_allure("audit", "broken.toml", cwd=tmp_path, env={"PYTHONPATH": path})
    assert bad.returncode == 2 and "cannot be loaded from 'no_such_module:Kind'" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    store = RunStore(tmp_path / ".allure" / "allure.db", create=False)
    try:
        assert [r.id for r in store.list_runs()] == [run_id]
    finally:
        store.close()

    # without the package the kind is unknown: exit 2, naming the kinds there are
    (tmp_path / "audit.toml").write_text(toy_spec)  # replay_spec_text wrote its own audit.toml
    gone = run_allure("audit", "audit.toml", cwd=tmp_path)
    assert gone.returncode == 2 and "unknown evaluator kind 'toy'" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr


@pytest.mark.integration
def test_an_unknown_kind_is_refused_at_load_with_the_closest_name(tmp_path: Path) -> None:
    text = replay_spec_text(tmp_path).replace('kind = "replay"', 'kind = "opneai"')
    (tmp_path / "audit.toml").write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path / "audit.toml")
    err = info.value
    assert "unknown evaluator kind 'opneai'" in err.message and "did you mean 'openai'?" in (err.fix or "")
    line = next(n for n, t in enumerate(text.splitlines(), start=1) if t.startswith("kind ="))
    assert f"audit.toml:{line}" in (err.where or "")
    res = run_allure("audit", "audit.toml", cwd=tmp_path)
    assert res.returncode == 2 and "did you mean 'openai'?" in res.stderr and "Traceback" not in res.stderr


def test_a_kind_registered_in_process_is_reachable_from_a_spec_and_asks_no_server(tmp_path: Path) -> None:
    class Echo(ChatBackend):
        async def complete(self, messages: Any, **settings: Any) -> Reply:
            return Reply("score: 1")

    @register_backend("echo-test")
    class EchoKind(BackendKind):
        def chat(self, spec: Any, items: Any) -> ChatBackend:
            return Echo()

    assert "echo-test" in backend_names()
    spec = _spec(tmp_path, "echo-test")
    assert not spec.evaluator.is_replay
    from allure.reaudit import _fingerprint, _probe

    # no /models probe for a kind of its own (the OpenAI default used to be asked here)
    assert _fingerprint.model_info(spec) == {"kind": "echo-test", "model": spec.evaluator.model}
    assert _probe.probe_size(spec.model_copy(update={"reaudit": None})) == 0
    with pytest.raises(ValueError, match="already"):
        register_backend("echo-test")(type("Other", (BackendKind,), {}))


def test_the_built_in_kinds_own_their_facts(tmp_path: Path) -> None:
    base = _spec(tmp_path, "replay")
    replay, openai, local = (backend_kind(k) for k in ("replay", "openai", "local"))
    assert replay.replay and not replay.logprobs and base.evaluator.is_replay
    assert (openai.probe_default, local.probe_default, replay.probe_default) == (20, 0, 0)
    ev = base.evaluator.model_copy(
        update={"concurrency": 8, "local": base.evaluator.local.model_copy(update={"parallel": 2})}
    )
    assert (openai.concurrency(ev), local.concurrency(ev)) == (8, 2)
    assert replay.model_name(base) == "replay" and replay.model_info(base) == {"kind": "replay"}
    assert openai.retry_kind(TimeoutError()) == "transient" and openai.retry_kind(ValueError()) is None
    served = base.model_copy(update={"evaluator": base.evaluator.model_copy(update={"kind": "openai"})})
    assert openai.identity(served) == {"base_url": "http://127.0.0.1:9/v1"}
    assert local.identity(base) == {"deterministic": False}


def test_no_module_tests_a_kind_by_its_name() -> None:
    """The bar of issue 33: a replay (or any built-in kind) is asked of the kind's facts, not spelt
    as ``kind == "replay"``; found by reading every module's syntax tree."""
    root = Path(allure.__file__).parent
    names = {"replay", "openai", "local"}
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq | ast.NotEq):
                sides = [node.left, *node.comparators]
                kind = any(re.search(r"\bkind\b", ast.unparse(s)) for s in sides)
                literal = any(isinstance(s, ast.Constant) and s.value in names for s in sides)
                if kind and literal:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
    assert len(list(root.rglob("*.py"))) > 100  # the package was read
