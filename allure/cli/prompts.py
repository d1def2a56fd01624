"""``allure prompts``: the prompt sets (built-in and saved in the project), their hashes, rephrasings."""

from __future__ import annotations

import difflib
from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, command_group, echo

prompts_app = command_group("prompts", "Prompt sets: list, show, diff, and write rule-based rephrasings.")


@prompts_app.command("list")
def list_cmd(project: Path = ProjectOpt) -> None:
    """List the built-in prompt sets and those saved in the project, with their hashes."""
    from allure._text_errors import read_json_file
    from allure.errors import SpecError
    from allure.prompts import (
        PROMPT_SETS,
        load_prompt_set,
        project_prompt_sets,
        prompt_set_hash,
        prompt_texts,
    )

    for name in PROMPT_SETS:
        echo(f"{name:<28} {prompt_set_hash(prompt_texts(load_prompt_set(name)))}  built-in")
    for folder in project_prompt_sets(project):
        meta_file = folder / "rephrasing.json"
        meta = (
            read_json_file(meta_file, error=SpecError, what="prompt set's rephrasing.json")
            if meta_file.is_file()
            else {}
        )
        if not isinstance(meta, dict):
            raise SpecError(
                f"the prompt set's rephrasing.json holds a JSON {type(meta).__name__}, not an object",
                where=str(meta_file),
                fix="delete it (the prompt set is then listed as saved) or restore the object allure wrote",
            )
        origin = f"{meta.get('method', '?')} rephrasing of {meta.get('source', '?')}" if meta else "saved"
        h = prompt_set_hash(prompt_texts(load_prompt_set(str(folder))))
        edited = " (edited)" if meta.get("hash") not in (None, h) else ""
        echo(f"{folder.name:<28} {h}  {origin}{edited}")


@prompts_app.command("show")
def show_cmd(
    name: str = typer.Argument(..., help="A built-in set, a set saved in the project, or a folder."),
    project: Path = ProjectOpt,
) -> None:
    """Print a prompt set's files and its hash."""
    from allure.prompts import find_prompt_set, load_prompt_set, prompt_set_hash, prompt_texts

    texts = prompt_texts(load_prompt_set(find_prompt_set(project, name), where="argument NAME"))
    echo(f"# {name} ({prompt_set_hash(texts)})")
    for fname, text in texts.items():
        echo(f"--- {fname}")
        for line in text.splitlines():
            echo(line)


@prompts_app.command("diff")
def diff_cmd(
    a: str = typer.Argument(..., help="First prompt set."),
    b: str = typer.Argument(..., help="Second prompt set."),
    project: Path = ProjectOpt,
) -> None:
    """A unified diff of two prompt sets, file by file."""
    from allure.prompts import find_prompt_set, load_prompt_set, prompt_texts

    ta = prompt_texts(load_prompt_set(find_prompt_set(project, a), where="argument A"))
    tb = prompt_texts(load_prompt_set(find_prompt_set(project, b), where="argument B"))
    same = True
    for fname in sorted(set(ta) | set(tb)):
        lines = difflib.unified_diff(
            ta.get(fname, "").splitlines(),
            tb.get(fname, "").splitlines(),
            f"{a}/{fname}",
            f"{b}/{fname}",
            lineterm="",
        )
        for line in lines:
            same = False
            echo(line)
    if same:
        echo("the prompt sets are identical", err=True)


@prompts_app.command("rephrase")
def rephrase_cmd(
    name: str = typer.Argument(..., help="The prompt set to rephrase (built-in, saved, or a folder)."),
    count: int = typer.Option(3, "--count", help="Rephrasings to write (besides the original; 1 to 50)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the rules' draws."),
    labels: str = typer.Option("0,1", "--labels", help="The label set, comma-separated (for the check)."),
    project: Path = ProjectOpt,
) -> None:
    """Write rule-based rephrasings of a prompt set to PROJECT/.allure/prompts/ (see `allure prompts list`)."""
    from allure.prompts import (
        PROMPTS_DIR,
        check_prompt_shape,
        find_prompt_set,
        load_prompt_set,
        prompt_set_hash,
        rule_rephrasings,
        write_prompt_set,
    )

    found = find_prompt_set(project, name)
    base = load_prompt_set(found, where="argument NAME")
    # the prompt set itself must be able to judge before its rephrasings are (its file is named)
    check_prompt_shape(base, Path(found) if Path(found).is_dir() else Path(f"prompt set {name}"))
    labs = _label_option(labels)
    for r in rule_rephrasings(base, count, seed=seed, labels=labs):
        folder = write_prompt_set(project / PROMPTS_DIR / r.name, r)
        echo(f"{r.name:<28} {prompt_set_hash(r.texts)}  {', '.join(r.rules)}  -> {folder}")


def _label_option(text: str) -> list[int | str]:
    """``--labels``: two or more distinct labels, comma-separated (integers where they are).

    Raises:
        SpecError: fewer than two labels, or one listed twice.
    """
    from allure.errors import SpecError

    labels: list[int | str] = [
        int(x) if x.strip().lstrip("-").isdigit() else x.strip() for x in text.split(",") if x.strip()
    ]
    fix = "list every label of the set once, comma-separated, e.g. --labels 0,1 or --labels yes,no"
    if len(labels) < 2:
        raise SpecError(
            f"--labels {text!r} names {len(labels)} label(s); a label set has at least two",
            where="option --labels",
            fix=fix,
        )
    twice = sorted({str(x) for x in labels if [str(y) for y in labels].count(str(x)) > 1})
    if twice:
        raise SpecError(f"--labels lists {', '.join(twice)} twice", where="option --labels", fix=fix)
    return labels


def register(app: typer.Typer) -> None:
    """Add ``prompts`` to the CLI."""
    app.add_typer(prompts_app)
