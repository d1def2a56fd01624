"""No test asserts ``all(...)`` over a collection that may be empty.

``assert all(x.ok for x in results)`` passes when ``results`` is empty, so a test that lost its
data still passes. Every ``all(...)`` over a comprehension or generator inside an ``assert`` must
sit in a function that also shows its collection is not empty: ``len(X)`` anywhere in the
function (``assert len(X) == 3``), ``assert X`` (alone or in an ``and``), ``any(... in X)``, or
``X`` built in that function from a non-empty literal (``range(3)``, ``["a", "b"]``). The
collection ``X`` is the comprehension's first ``in`` (``rows`` in ``for r in rows``); for
``d.items()``, ``sorted(d)``, ``enumerate(d)`` and the like, a check on ``d`` counts too.

Found by reading every test file's syntax tree (no allow-list): each hit names file, line and
the collection to check.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

MOVING: tuple[str, ...] = ()
"""Test folders skipped by name: none (the studies' tests, moved in issue 28, were fixed there)."""

WRAPPERS = {"sorted", "list", "set", "tuple", "enumerate", "zip", "reversed", "dict", "iter"}
"""Calls whose arguments are the collection they wrap (``sorted(d)`` is empty when ``d`` is)."""
VIEWS = {"items", "values", "keys", "splitlines", "split", "strip", "glob", "rglob", "iterdir", "read_text"}
"""Methods whose result is empty when their object is (``d.items()``, ``text.splitlines()``)."""


def _names(node: ast.expr) -> set[str]:
    """The collection's source and the sources a check on which also shows it is not empty."""
    out = {ast.unparse(node)}
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in WRAPPERS:
            for arg in node.args:
                out |= _names(arg)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS:
            out |= _names(node.func.value)
    if isinstance(node, ast.Subscript):  # rows[1:], rows[:k]
        out |= _names(node.value)
    return out


def _non_empty_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes) and bool(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        args = node.args
        if len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, int):
            return args[0].value > 0
        if len(args) >= 2 and all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in args[:2]):
            return bool(args[1].value > args[0].value)  # type: ignore[attr-defined,operator]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in WRAPPERS:
        return any(_non_empty_literal(a) for a in node.args)
    return False


def _checked(func: ast.AST) -> set[str]:
    """Sources of the expressions ``func`` shows to be non-empty."""
    out: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "len":
                out |= _names(node.args[0])
            if node.func.id == "any" and isinstance(
                node.args[0], ast.GeneratorExp | ast.ListComp | ast.SetComp
            ):
                out |= _names(node.args[0].generators[0].iter)
        if isinstance(node, ast.Assert):
            operands = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            for op in operands:
                out |= _names(op)
                if isinstance(op, ast.Compare):  # X == [a, b], X != [], X == {...}
                    sides = [op.left, *op.comparators]
                    if any(_non_empty_literal(s) for s in sides) or any(
                        isinstance(o, ast.NotEq) and isinstance(s, ast.List | ast.Tuple | ast.Dict | ast.Set)
                        for o, s in zip(op.ops, op.comparators, strict=True)
                    ):
                        for s in sides:
                            out |= _names(s)
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _non_empty_literal(node.value):
                out |= {ast.unparse(t) for t in targets}
        if isinstance(node, ast.For) and _non_empty_literal(node.iter):
            out.add(ast.unparse(node.target))
    return out


def _alls(assertion: ast.Assert) -> Iterator[ast.expr]:
    """The collections that ``all(...)`` calls inside ``assertion`` iterate over."""
    for node in ast.walk(assertion.test):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "all"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.GeneratorExp | ast.ListComp | ast.SetComp)
        ):
            yield node.args[0].generators[0].iter


def vacuous_alls(source: str, filename: str) -> list[str]:
    """``file:line: all(...) over X`` for each ``assert all(...)`` whose collection ``X`` the
    enclosing function never shows to be non-empty."""
    tree = ast.parse(source, filename)
    hits = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        checked = _checked(func)
        for node in ast.walk(func):
            if not isinstance(node, ast.Assert):
                continue
            for coll in _alls(node):
                if _non_empty_literal(coll) or _names(coll) & checked:
                    continue
                hits.append(f"{filename}:{node.lineno}: all(...) over {ast.unparse(coll)}")
    return sorted(set(hits))


def test_no_assert_all_over_a_possibly_empty_collection() -> None:
    files = sorted(f for f in TESTS.rglob("*.py") if f.relative_to(TESTS).parts[0] not in MOVING)
    assert len(files) > 100  # the whole test tree (but the folders being moved) was read
    hits = [h for f in files for h in vacuous_alls(f.read_text(encoding="utf-8"), str(f.relative_to(TESTS)))]
    assert hits == [], "assert all(...) over a collection that may be empty:\n" + "\n".join(hits)


def test_the_check_finds_a_vacuous_all_and_accepts_a_checked_one() -> None:
    bad = "def test_x(rows):\n    assert all(r.ok for r in rows)\n"
    assert vacuous_alls(bad, "t.py") == ["t.py:2: all(...) over rows"]
    for fine in [
        "def test_x(rows):\n    assert len(rows) == 3\n    assert all(r.ok for r in rows)\n",
        "def test_x(rows):\n    assert rows and all(r.ok for r in rows)\n",
        "def test_x(d):\n    assert all(v > 0 for v in d.values())\n    assert len(d) > 1\n",
        "def test_x():\n    for r in [1, 2]:\n        pass\n    xs = [1, 2]\n    assert all(x for x in xs)\n",
        "def test_x():\n    assert all(i >= 0 for i in range(3))\n",
    ]:
        assert vacuous_alls(fine, "t.py") == [], fine
    # the check is per function: a length check in another test does not count
    split = "def test_a(rows):\n    assert len(rows)\n\ndef test_b(rows):\n    assert all(r for r in rows)\n"
    assert vacuous_alls(split, "t.py") == ["t.py:5: all(...) over rows"]
