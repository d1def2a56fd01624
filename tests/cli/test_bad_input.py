"""Bad input: a clear error naming file, line or field and the fix; exit 2; nothing written.

One parametrised test over every kind of bad input a user can hand allure (specs, datasets,
decisions files, paths, run ids, damaged stores). Each case starts from a copy of a project
holding one run paused at review, breaks one thing, runs one command, and checks the exit
status, the message and that no file in the project folder changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_run import TEST_KEY, allure
from tests.conftest import write_replay_spec


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with the hash of its content (folders too).

    SQLite files are compared by their SQL dump (a lease taken and released rewrites pages
    but no row); Chroma records each client's opening in its ``acquire_write`` table, which
    is left out.
    """
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_dir():
            out[rel] = "dir"
        elif p.name in ("chroma.sqlite3", "allure.db") and p.read_bytes()[:16] == b"SQLite format 3\x00":
            conn = sqlite3.connect(p)
            try:
                dump = [x for x in conn.iterdump() if "acquire_write" not in x]
                out[rel] = hashlib.sha256("\n".join(dump).encode()).hexdigest()
            except sqlite3.DatabaseError:  # a damaged file: compare its bytes
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            finally:
                conn.close()
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project with a replay spec, its dataset and one run paused at review; the run id."""
    root = tmp_path_factory.mktemp("bad-input")
    write_replay_spec(root)
    res = allure("audit", "audit.toml", cwd=root, env=TEST_KEY)
    assert res.returncode == 0 and "paused for review" in res.stdout, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    assert allure("review", run_id, "--export", "pending.jsonl", cwd=root, env=TEST_KEY).returncode == 0
    return root, run_id


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def candidate(root: Path) -> str:
    return str(json.loads((root / "pending.jsonl").read_text().splitlines()[0])["id"])


def decisions(root: Path, run: str, *rows: object) -> list[str]:
    (root / "decisions.jsonl").write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    )
    return ["review", run, "--import", "decisions.jsonl"]


def csv_dataset(root: Path, body: bytes) -> list[str]:
    (root / "items.csv").write_bytes(body)
    edit(root / "audit.toml", 'path = "items.jsonl"', 'path = "items.csv"')
    edit(root / "audit.toml", 'id = "uid"', "")
    for col in ("task", "gold_answers", "problem_type", "generator", "recorded_label"):
        text = (root / "audit.toml").read_text().splitlines()
        (root / "audit.toml").write_text("\n".join(x for x in text if not x.startswith(f"{col} =")) + "\n")
    return ["audit", "audit.toml"]


def rows_with(root: Path, index: int, **changes: object) -> None:
    path = root / "items.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[index].update(changes)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def corrupt_pages(db: Path) -> None:
    blob = bytearray(db.read_bytes())
    for off in range(4096, len(blob), 8192):
        blob[off : off + 2048] = os.urandom(min(2048, len(blob) - off))
    db.write_bytes(bytes(blob))


def empty_memory(root: Path) -> None:
    from allure.memory import EpisodicMemory

    EpisodicMemory.open(str(root / ".allure" / "memory"))


def memory_with_broken_index(root: Path) -> None:
    """1,500 examples (random unit vectors, no embedding model) so Chroma persists an HNSW
    segment and trims its log; then the segment's files are deleted."""
    import chromadb
    import numpy as np

    from allure.memory import MiniLMEmbeddingFunction
    from allure.models import IclExample

    loc = root / ".allure" / "memory"
    client = chromadb.PersistentClient(
        path=str(loc), settings=chromadb.config.Settings(anonymized_telemetry=False)
    )
    col = client.get_or_create_collection(
        "icl_examples",
        embedding_function=MiniLMEmbeddingFunction(),
        configuration={"hnsw": {"space": "cosine"}},
    )
    rng = np.random.default_rng(0)
    for start in range(0, 1500, 250):
        exs = [
            IclExample(id=f"icl-{i}", item_id=f"i{i}", response=f"r{i}", correct_label=1, decision="approve")
            for i in range(start, start + 250)
        ]
        vecs = rng.normal(size=(250, 384))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        col.upsert(
            ids=[e.id for e in exs],
            embeddings=vecs.tolist(),
            documents=[e.response for e in exs],
            metadatas=[{"example_json": e.model_dump_json()} for e in exs],
        )
    del col, client
    segments = [p for p in loc.iterdir() if p.is_dir() and (p / "header.bin").exists()]
    assert segments, "Chroma wrote no HNSW segment"
    for seg in segments:
        (seg / "header.bin").unlink()
        (seg / "data_level0.bin").unlink()


@dataclass
class Case:
    """Break the project copy (``setup(root, run_id)`` returns the command's arguments); expect these words."""

    setup: Callable[[Path, str], list[str]]
    needles: tuple[str, ...]
    absent: tuple[str, ...] = ()
    """Words the message must not hold (a place the user did not write)."""


def _spec(old: str, new: str) -> Callable[[Path, str], list[str]]:
    def setup(root: Path, run: str) -> list[str]:
        edit(root / "audit.toml", old, new)
        return ["audit", "audit.toml"]

    return setup


def _missing_dataset(root: Path, run: str) -> list[str]:
    (root / "items.jsonl").unlink()
    return ["audit", "audit.toml"]


def _malformed_line(root: Path, run: str) -> list[str]:
    lines = (root / "items.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-5]
    (root / "items.jsonl").write_text("\n".join(lines) + "\n")
    return ["audit", "audit.toml"]


def _empty_dataset(root: Path, run: str) -> list[str]:
    (root / "items.jsonl").write_text("")
    return ["audit", "audit.toml"]


def _label_outside(root: Path, run: str) -> list[str]:
    rows_with(root, 4, judge=7)
    return ["audit", "audit.toml"]


def _dataset_folder(root: Path, run: str) -> list[str]:
    (root / "items.jsonl").unlink()
    (root / "items.jsonl").mkdir()
    return ["audit", "audit.toml"]


def _toml_syntax(root: Path, run: str) -> list[str]:
    (root / "audit.toml").write_text((root / "audit.toml").read_text() + "\n[loop\n")
    return ["audit", "audit.toml"]


def _project_file(root: Path, run: str) -> list[str]:
    (root / "notafolder").write_text("x")
    return ["audit", "audit.toml", "--project", "notafolder"]


def _export_folder(root: Path, run: str) -> list[str]:
    (root / "out").mkdir()
    return ["review", run, "--export", "out"]


def _corrupt_db(root: Path, run: str) -> list[str]:
    corrupt_pages(root / ".allure" / "allure.db")
    return ["resume", run]


def _empty_memory_stats(root: Path, run: str) -> list[str]:
    empty_memory(root)
    return ["memory", "stats"]


def _broken_index(root: Path, run: str) -> list[str]:
    memory_with_broken_index(root)
    return ["memory", "list"]


CASES: dict[str, Case] = {
    "missing spec file": Case(lambda r, run: ["audit", "nope.toml"], ("nope.toml", "not found")),
    "TOML syntax error": Case(_toml_syntax, ("audit.toml", "line")),
    "typoed table [evaluatr]": Case(
        _spec("[evaluator]", "[evaluatr]"), ("audit.toml:", "did you mean `evaluator`?")
    ),
    "typoed key label_patern": Case(
        _spec('model = "scripted"', "label_patern = 'x'"),
        ("field 'evaluator.label_patern'", "did you mean `label_pattern`?"),
    ),
    "typoed key max_iteration": Case(
        _spec("max_iterations =", "max_iteration ="), ("field 'loop.max_iteration'", "`max_iterations`")
    ),
    "typoed key [memory.retrieval] kk": Case(
        _spec('kind = "all"', "kk = 3"), ("field 'memory.retrieval.kk'", "did you mean `k`?")
    ),
    "unknown evaluator kind": Case(_spec('kind = "replay"', 'kind = "gpt5-magic"'), ("evaluator.kind",)),
    "unknown --evaluator kind": Case(
        lambda r, run: ["audit", "audit.toml", "--evaluator", "gpt"],
        ("option --evaluator: unknown evaluator kind 'gpt'", "local, openai, replay"),
        absent=("evaluator.kind", "audit.toml"),
    ),
    "gold regex does not compile": Case(
        _spec("[evaluator]", "[gold_check]\nanswer_pattern = '(unclosed'\n\n[evaluator]"), ("answer_pattern",)
    ),
    "label regex does not compile": Case(
        _spec('kind = "replay"', "kind = \"replay\"\nlabel_pattern = 'score: ([01'"), ("label_pattern",)
    ),
    "unknown failure mode": Case(
        _spec('kind = "all"', 'kind = "all"\nexclude_modes = ["sarcasm"]'), ("exclude_modes", "sarcasm")
    ),
    "missing dataset file": Case(_missing_dataset, ("items.jsonl", "not found")),
    "malformed JSONL line": Case(_malformed_line, ("items.jsonl:3", "malformed JSON")),
    "empty dataset": Case(_empty_dataset, ("items.jsonl", "no rows")),
    "missing mapped column": Case(_spec('response = "answer"', 'response = "reply"'), ("'reply'", "missing")),
    "recorded label outside the set": Case(_label_outside, ("items.jsonl:5", "7")),
    "dataset path is a folder": Case(_dataset_folder, ("items.jsonl", "folder")),
    "decisions file missing": Case(
        lambda r, run: ["resume", run, "--decisions", "nope.jsonl"], ("nope.jsonl", "not found")
    ),
    "invalid UTF-8 in a CSV": Case(
        lambda r, run: csv_dataset(r, b"answer,judge\nAnswer: 1,1\nAnswer: caf\xe9,0\n"),
        ("items.csv:3", "not UTF-8"),
    ),
    "duplicate CSV header": Case(
        lambda r, run: csv_dataset(r, b"answer,judge,answer\nAnswer: 1,1,x\n"), ("items.csv:1", "twice")
    ),
    "--project names a file": Case(_project_file, ("notafolder", "--project", "is a file")),
    "--export names a folder": Case(_export_folder, ("out", "folder")),
    "unknown run id": Case(lambda r, run: ["resume", "run-nope"], ("unknown run 'run-nope'", "allure runs")),
    "decision key typo lable": Case(
        lambda r, run: decisions(r, run, {"candidate_id": candidate(r), "decision": "approve", "lable": 0}),
        ("decisions.jsonl:1", "field 'lable'", "did you mean `label`?"),
    ),
    "decision label true": Case(
        lambda r, run: decisions(
            r, run, {"candidate_id": candidate(r), "decision": "approve", "label": True}
        ),
        ("decisions.jsonl:1", "field 'label'", "true"),
    ),
    "decision label 1.0": Case(
        lambda r, run: decisions(r, run, {"candidate_id": candidate(r), "decision": "approve", "label": 1.0}),
        ("decisions.jsonl:1", "field 'label'", "1.0"),
    ),
    "reject with a label": Case(
        lambda r, run: decisions(r, run, {"candidate_id": candidate(r), "decision": "reject", "label": 1}),
        ("decisions.jsonl:1", "field 'label'", "reject"),
    ),
    "decision typo aprove": Case(
        lambda r, run: decisions(r, run, {"candidate_id": candidate(r), "decision": "aprove"}),
        ("decisions.jsonl:1", "field 'decision'", "'approve'"),
    ),
    "malformed decisions line (second line)": Case(
        lambda r, run: decisions(
            r, run, {"candidate_id": candidate(r), "decision": "approve"}, '{"candidate_id": '
        ),
        ("decisions.jsonl:2", "malformed JSON"),
    ),
    "unknown candidate": Case(
        lambda r, run: decisions(r, run, {"candidate_id": "icl-nope", "decision": "approve"}),
        ("decisions.jsonl:1", "field 'candidate_id'", "icl-nope"),
    ),
    "run store with corrupt pages": Case(_corrupt_db, ("allure.db", "damaged", "allure doctor")),
    "memory stats on an empty memory": Case(_empty_memory_stats, ("memory", "no examples")),
    "memory index files missing": Case(_broken_index, ("memory", "index", "--rebuild-memory")),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_exits_2_names_the_place_and_the_fix_and_writes_nothing(
    base: tuple[Path, str], tmp_path: Path, name: str
) -> None:
    src, run_id = base
    root = tmp_path / "project"
    shutil.copytree(src, root)
    case = CASES[name]
    args = case.setup(root, run_id)
    before = snapshot(root)
    res = allure(*args, cwd=root, env=TEST_KEY)
    assert res.returncode == 2, (name, res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    assert "fix:" in res.stderr, res.stderr
    for needle in case.needles:
        assert needle in res.stderr, (name, needle, res.stderr)
    for word in case.absent:
        assert word not in res.stderr, (name, word, res.stderr)
    assert snapshot(root) == before, f"{name}: the command changed the project folder"


def test_there_are_at_least_20_kinds() -> None:
    assert len(CASES) >= 20
