"""The judge bundle on disk: a folder written whole or not at all, named by its content hash.

Files: ``judge.toml`` (labels, evaluator, prompt set name and hash, retrieval rule, calibration
with its fitted values, position debiasing, the column mapping), ``prompts/`` (the templates),
``examples.jsonl`` (the adopted memory version's examples), ``card.md`` and ``card.json`` (what
the judge was measured on), and ``manifest.json``: each file's sha256 and the bundle id, the
sha256 of those lines (:func:`bundle_id`). Reading checks every hash, so a file edited after
export is refused, naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allure._io import cause, raised_as
from allure.errors import JudgeError
from allure.judge._toml import dumps_toml, read_toml
from allure.records import check_file

FORMAT = 1
"""The bundle format this allure writes and reads (a newer one is refused)."""

MANIFEST = "manifest.json"
JUDGE_TOML = "judge.toml"
EXAMPLES = "examples.jsonl"
PROMPTS = "prompts"


@dataclass
class BundleFiles:
    """A bundle's content before it is written: relative path -> text."""

    files: dict[str, str] = field(default_factory=dict)

    def add(self, path: str, text: str) -> None:
        self.files[path] = text

    def digests(self) -> dict[str, str]:
        return {p: hashlib.sha256(t.encode("utf-8")).hexdigest() for p, t in sorted(self.files.items())}


def allure_version() -> str:
    """The running allure's version (read from the loaded package at run time: ``allure/__init__``
    re-exports this package, so a static import of it from here would be a cycle)."""
    import sys

    return str(sys.modules["allure"].__version__)


def bundle_id(digests: dict[str, str]) -> str:
    """The bundle's id: sha256 (16 hex) of its ``path sha256`` lines, sorted by path."""
    lines = "".join(f"{p} {d}\n" for p, d in sorted(digests.items()))
    return "judge-" + hashlib.sha256(lines.encode("utf-8")).hexdigest()[:16]


def _manifest(digests: dict[str, str], allure_version: str) -> str:
    doc = {"format": FORMAT, "allure_version": allure_version, "id": bundle_id(digests), "files": digests}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def write_bundle(out: Path, content: BundleFiles, allure_version: str) -> str:
    """Write ``content`` as the bundle folder ``out`` (replacing a bundle there); returns its id.

    Written into a temporary folder beside ``out`` and renamed into place, so a reader sees the
    old bundle or the new one, never half of one.

    Raises:
        JudgeError: ``out`` is a file, or a folder that is not a bundle, or cannot be written.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise JudgeError("this is a file, not a folder", where=f"{out}, option '--out'", fix="name a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise JudgeError(
            "the folder exists and is not a judge bundle (no manifest.json); nothing is overwritten",
            where=f"{out}, option '--out'",
            fix="name a new or empty folder, or an earlier bundle to replace",
        )
    digests = content.digests()
    with raised_as(
        JudgeError, "cannot write here", where=f"{out}, option '--out'", fix="name a folder you can write to"
    ):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        for rel, text in sorted(content.files.items()):
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        (tmp / MANIFEST).write_bytes(_manifest(digests, allure_version).encode("utf-8"))
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise JudgeError(
            f"cannot write the bundle ({cause(exc)})",
            where=str(out),
            fix="name a folder you can write to",
        ) from exc
    return bundle_id(digests)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in text.split(".")[:3])


@dataclass(frozen=True)
class BundleOnDisk:
    """A bundle read back and checked: its id, ``judge.toml`` and the other files' text."""

    folder: Path
    id: str
    config: dict[str, Any]
    files: dict[str, str]


def read_bundle(folder: Path, allure_version: str) -> BundleOnDisk:
    """Read and check the bundle in ``folder``.

    Raises:
        JudgeError: No bundle there, a file missing or edited after export (hash mismatch), or a
            bundle written by a newer allure (format or version).
    """
    folder = Path(folder)
    man_path = folder / MANIFEST
    check_file(
        man_path,
        error=JudgeError,
        message="no judge bundle here (manifest.json is missing)",
        fix="pass the folder `allure judge export --out DIR` wrote",
    )
    try:
        manifest = json.loads(man_path.read_text(encoding="utf-8"))
        digests = dict(manifest["files"])
        fmt, version = int(manifest["format"]), str(manifest["allure_version"])
    except (ValueError, KeyError, TypeError) as exc:
        raise JudgeError(
            f"manifest.json does not parse ({exc})", where=str(man_path), fix="export the judge again"
        ) from exc
    if fmt > FORMAT or _version_tuple(version) > _version_tuple(allure_version):
        raise JudgeError(
            f"the bundle was written by allure {version} (bundle format {fmt}); this is allure "
            f"{allure_version} (format {FORMAT})",
            where=f"{man_path}, field 'allure_version'",
            fix=f"upgrade allure to {version} or later (pip install -U allure), or export the judge with this one",
        )
    files: dict[str, str] = {}
    for rel, digest in sorted(digests.items()):
        path = folder / rel
        check_file(
            path,
            error=JudgeError,
            message="a file of the bundle is missing",
            fix="export the judge again (`allure judge export`)",
        )
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise JudgeError(
                "the file was changed after export (its sha256 differs from manifest.json): this is no "
                "longer the judge that was measured",
                where=f"{path}, field 'files.{rel}' of manifest.json",
                fix="restore the file, or export the judge again from its run (a changed judge is a new bundle)",
            )
        files[rel] = data.decode("utf-8")
    if manifest.get("id") != bundle_id(digests):
        raise JudgeError(
            "the bundle id does not match its files",
            where=f"{man_path}, field 'id'",
            fix="export the judge again",
        )
    if JUDGE_TOML not in files:
        raise JudgeError(
            "judge.toml is not in the manifest", where=str(man_path), fix="export the judge again"
        )
    try:
        config = read_toml(files[JUDGE_TOML])
    except ValueError as exc:
        raise JudgeError(
            f"judge.toml does not parse ({exc})", where=str(folder / JUDGE_TOML), fix="export again"
        ) from exc
    return BundleOnDisk(folder=folder, id=manifest["id"], config=config, files=files)


def toml_text(config: dict[str, Any]) -> str:
    """``judge.toml``'s text (a header line, then the tables)."""
    return "# allure judge bundle: see card.md for what this judge was measured on\n" + dumps_toml(config)
