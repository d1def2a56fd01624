"""Rephrasings of a prompt set: semantically equivalent variants stored as ordinary prompt sets.

A rephrasing changes the wording of ``system.txt``, ``user.txt`` and ``example_user.txt`` and
nothing else: ``assistant.txt`` (the answer format the label is parsed from) is copied as it is.
Every rephrasing, rule-based or written by an LLM, passes :func:`check_rephrasing`: each file keeps
exactly its placeholders, and every label instruction of the original (each quoted answer such as
``"score: 1"`` and each answer the assistant template renders for a label) is still in it.

Rule-based rephrasings (:func:`rule_rephrasings`) are deterministic given the seed. Each rule
rewrites only text outside placeholders and quoted strings, so it cannot touch what the
evaluator must reproduce:

- ``synonyms``: phrases replaced by equivalent ones (:data:`SYNONYMS`; "Decide whether" ->
  "Determine whether", "Reply with" -> "Answer with", ...), a seeded subset per rephrasing;
- ``contractions``: "do not" -> "don't", "is not" -> "isn't", "does not" -> "doesn't";
- ``headers``: section headers on a line of their own ("Task:") written in capitals ("TASK:");
- ``spacing``: sections separated by two blank lines instead of one.

Rephrasing ``q`` (1-based, ``rho_1`` is the original) draws its rules and synonyms from a
generator seeded with ``(seed, q)`` and is redrawn until it differs from the original and
every earlier rephrasing. Sets are written to ``PROJECT/.allure/prompts/NAME/`` with a
``rephrasing.json`` saying where they come from; a user may read, edit and re-use them like any
prompt set folder.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from allure._io import atomic_write_bytes
from allure._text_errors import read_utf8
from allure.errors import SpecError
from allure.models import stable_hash
from allure.prompts._templates import PromptSet, load_prompt_set, placeholders

REPHRASED_FILES = ("system.txt", "user.txt", "example_user.txt")
"""The files a rephrasing may change (``assistant.txt`` never changes)."""

PROMPTS_DIR = Path(".allure") / "prompts"
"""Where rephrased prompt sets are written, under the project folder."""

SYNONYMS: tuple[tuple[str, str], ...] = (
    ("Decide whether", "Determine whether"),
    ("Decide which", "Determine which"),
    ("You are shown", "You are given"),
    ("Reply with", "Answer with"),
    ("exactly one line", "a single line"),
    ("a model's response", "the response of a model"),
    ("ignoring", "disregarding"),
    ("such as", "like"),
    ("matches", "agrees with"),
    ("Is the response correct?", "Is this response correct?"),
    ("Which response is better?", "Which of the two responses is better?"),
    ("Score the response", "Rate the response"),
    ("Judge the response", "Assess the response"),
    ("strictly by", "strictly according to"),
    ("answers the task better", "does the task better"),
    ("sway you", "influence you"),
    ("made-up facts", "invented facts"),
    ("Correct answer:", "Reference answer:"),
)
"""(phrase, equivalent) pairs of the ``synonyms`` rule."""

RULES = ("synonyms", "contractions", "headers", "spacing")
"""The rule names, in the order they are applied."""

_PROTECTED = re.compile(r'(\{\{|\}\}|\{[A-Za-z_][A-Za-z0-9_]*\}|"[^"\n]*")')
_CONTRACTIONS = (("do not", "don't"), ("Do not", "Don't"), ("is not", "isn't"), ("does not", "doesn't"))
_HEADER = re.compile(r"^([A-Z][A-Za-z0-9 ()'-]*):[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Rephrasing:
    """One rephrasing: its texts and how it was made."""

    name: str
    """The prompt set's folder name."""
    texts: dict[str, str]
    """File name -> text (the four files of a prompt set, ``example_user.txt`` when the source has it)."""
    source: str
    """The prompt set it rephrases."""
    method: str
    """``rules`` or ``llm``."""
    rules: tuple[str, ...] = ()
    """Rule-based: the rules applied (``synonyms:N`` with the number of pairs drawn)."""
    seed: int | None = None
    """Rule-based: the seed."""


def prompt_texts(prompts: PromptSet) -> dict[str, str]:
    """File name -> text of a loaded prompt set."""
    out = {"system.txt": prompts.system, "user.txt": prompts.user, "assistant.txt": prompts.assistant}
    if prompts.example_user:
        out["example_user.txt"] = prompts.example_user
    return out


def prompt_set_hash(texts: dict[str, str]) -> str:
    """The hash of a prompt set's texts (two sets with the same files share it)."""
    return stable_hash(sorted(texts.items()), length=12)


def _outside_protected(text: str, fn: Callable[[str], str]) -> str:
    parts = _PROTECTED.split(text)
    return "".join(p if i % 2 else fn(p) for i, p in enumerate(parts))


def _replace_all(pairs: Sequence[tuple[str, str]]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return apply


def _headers(text: str) -> str:
    return _HEADER.sub(lambda m: m.group(1).upper() + ":", text)


def _spacing(text: str) -> str:
    return re.sub(r"\n\n(?=\S)", "\n\n\n", text)


def apply_rules(text: str, rules: Sequence[str], synonyms: Sequence[tuple[str, str]] = SYNONYMS) -> str:
    """``text`` with ``rules`` applied outside placeholders and quoted strings."""
    for rule in RULES:
        if rule not in rules:
            continue
        if rule == "synonyms":
            text = _outside_protected(text, _replace_all(synonyms))
        elif rule == "contractions":
            text = _outside_protected(text, _replace_all(_CONTRACTIONS))
        elif rule == "headers":
            text = _headers(text)
        else:
            text = _spacing(text)
    return text


def label_instructions(texts: dict[str, str], labels: Sequence[object]) -> dict[str, list[str]]:
    """File name -> the label instructions in it: quoted answers in the assistant format (``"score: X"``)
    and the answers the assistant template renders for each label (``score: 1``)."""
    assistant = texts["assistant.txt"]
    prefix = assistant.split("{label}")[0].strip()
    rendered = [assistant.format(label=lab) for lab in labels]
    out: dict[str, list[str]] = {}
    for fname in REPHRASED_FILES:
        text = texts.get(fname)
        if text is None:
            continue
        found = {q for q in re.findall(r'"[^"\n]*"', text) if prefix and prefix in q}
        found |= {r for r in rendered if r in text}
        out[fname] = sorted(found)
    return out


def _placeholders(text: str, where: str) -> set[str]:
    try:
        return placeholders(text)
    except (ValueError, KeyError) as exc:
        raise SpecError(f"template does not parse: {exc}", where=where, fix="escape braces as {{ }}") from exc


def check_rephrasing(
    original: dict[str, str], candidate: dict[str, str], labels: Sequence[object], *, where: str
) -> None:
    """Refuse a rephrasing that lost (or added) a placeholder or a label instruction, or changed the answer format.

    Args:
        original: File name -> text of the prompt set rephrased.
        candidate: File name -> text of the rephrasing.
        labels: The label set (to render the label instructions).
        where: The rephrasing's folder or name, for the error.

    Raises:
        SpecError: Naming the file, what is missing and the fix.
    """
    if candidate.get("assistant.txt") != original["assistant.txt"]:
        raise SpecError(
            "assistant.txt differs from the original's: the answer format must not change",
            where=f"{where}/assistant.txt",
            fix="copy assistant.txt from the original prompt set",
        )
    wanted = label_instructions(original, labels)
    for fname in REPHRASED_FILES:
        if fname not in original:
            continue
        text = candidate.get(fname)
        if text is None:
            raise SpecError(f"{fname} is missing", where=f"{where}/{fname}", fix=f"add {fname}")
        before = _placeholders(original[fname], f"original {fname}")
        after = _placeholders(text, f"{where}/{fname}")
        if before != after:
            lost, extra = sorted(before - after), sorted(after - before)
            what = (f"lost placeholder(s) {['{' + p + '}' for p in lost]}" if lost else "") + (
                f"{'; ' if lost else ''}added placeholder(s) {['{' + p + '}' for p in extra]}"
                if extra
                else ""
            )
            raise SpecError(
                f"the rephrasing {what}",
                where=f"{where}/{fname}",
                fix=f"keep exactly the original's placeholders: {sorted('{' + p + '}' for p in before)}",
            )
        missing = [s for s in wanted.get(fname, []) if s not in text]
        if missing:
            raise SpecError(
                f"the rephrasing lost the label instruction(s) {missing}",
                where=f"{where}/{fname}",
                fix="keep the answer format exactly as the original writes it",
            )


MAX_REPHRASINGS = 50
"""Most rule-based rephrasings of one prompt set."""


def rule_rephrasings(
    prompts: PromptSet,
    count: int,
    *,
    seed: int = 0,
    labels: Sequence[object] = (0, 1),
    option: str = "--count",
) -> list[Rephrasing]:
    """``count`` rule-based rephrasings of ``prompts`` (``rho_2 .. rho_{count+1}``), each checked.

    Args:
        option: The option the user gave the count with, for the messages (a study's
            ``--rephrasings`` counts the original too, and checks its range itself).

    Raises:
        SpecError: ``count < 1``, or the rules cannot make ``count`` distinct rephrasings of this set.
    """
    if not 1 <= count <= MAX_REPHRASINGS:
        raise SpecError(
            f"{count} rephrasings asked for, outside 1 to {MAX_REPHRASINGS}",
            where=f"option {option}",
            fix=f"ask for 1 to {MAX_REPHRASINGS} rephrasings, e.g. {option} 3",
        )
    original = prompt_texts(prompts)
    seen = {prompt_set_hash(original)}
    out: list[Rephrasing] = []
    for q in range(2, count + 2):
        rng = random.Random(stable_hash("rephrase", seed, q))
        for _ in range(64):
            rules = [r for r in RULES if rng.random() < 0.5] or [rng.choice(RULES)]
            drawn = [pair for pair in SYNONYMS if rng.random() < 0.5]
            texts = dict(original)
            for fname in REPHRASED_FILES:
                if fname in texts:
                    texts[fname] = apply_rules(texts[fname], rules, drawn)
            h = prompt_set_hash(texts)
            if h not in seen:
                break
        else:
            raise SpecError(
                f"the rules cannot make {count} distinct rephrasings of prompt set {prompts.name!r}",
                where=f"option {option}",
                fix="ask for fewer rephrasings, or write rephrasings of your own and pass them with --prompts",
            )
        seen.add(h)
        name = f"{prompts.name}~r{q}s{seed}"
        check_rephrasing(original, texts, labels, where=name)
        tags = tuple(f"synonyms:{len(drawn)}" if r == "synonyms" else r for r in rules)
        out.append(Rephrasing(name, texts, prompts.name, "rules", tags, seed))
    return out


META_PLACEHOLDER = "{text}"
"""Where a meta-prompt takes the text to rephrase (one file of the prompt set at a time)."""


def load_meta_prompt(path: str | Path) -> str:
    """The meta-prompt at ``path``: a text holding :data:`META_PLACEHOLDER` exactly once.

    Raises:
        SpecError: The file is missing, or the placeholder is missing or repeated.
    """
    file = Path(path)
    if not file.is_file():
        raise SpecError(
            f"no meta-prompt file {file}", where="option --meta-prompt", fix="pass a text file holding {text}"
        )
    text = read_utf8(file, error=SpecError, what="meta-prompt")
    if text.count(META_PLACEHOLDER) != 1:
        raise SpecError(
            f"the meta-prompt holds {META_PLACEHOLDER} {text.count(META_PLACEHOLDER)} times",
            where=str(file),
            fix=f"write {META_PLACEHOLDER} exactly once, where the prompt text to rephrase goes",
        )
    return text


def meta_requests(prompts: PromptSet, meta: str) -> dict[str, str]:
    """File name -> the meta-prompt filled with that file's text (the files a rephrasing may change)."""
    original = prompt_texts(prompts)
    return {f: meta.replace(META_PLACEHOLDER, original[f]) for f in REPHRASED_FILES if f in original}


def llm_rephrasing(
    prompts: PromptSet, name: str, answers: dict[str, str], *, labels: Sequence[object], source: str
) -> Rephrasing:
    """A rephrasing from an LLM's answers (file name -> rewritten text), checked.

    Raises:
        SpecError: It lost or added a placeholder or a label instruction, or changed nothing.
    """
    original = prompt_texts(prompts)
    texts = dict(original)
    for fname, answer in answers.items():
        body = answer.strip()
        fenced = re.fullmatch(r"```[A-Za-z]*\n(.*?)\n?```", body, re.S)
        texts[fname] = (fenced.group(1) if fenced else body).strip()
    if prompt_set_hash(texts) == prompt_set_hash(original):
        raise SpecError("the rephrasing changed nothing", where=name, fix="ask for another sample")
    check_rephrasing(original, texts, labels, where=name)
    return Rephrasing(name, texts, prompts.name, "llm", (f"meta:{source}",))


def write_prompt_set(folder: Path, rephrasing: Rephrasing) -> Path:
    """Write a rephrasing's files and ``rephrasing.json`` into ``folder`` (atomically, file by file).

    Raises:
        SpecError: the folder's name is not a valid prompt set name (:func:`allure.names.check_name`).
    """
    from allure.names import check_name

    check_name(folder.name, what="prompt set name", where=str(folder.parent))
    for fname, text in rephrasing.texts.items():
        atomic_write_bytes(folder / fname, (text + "\n").encode("utf-8"))
    meta = {
        "source": rephrasing.source,
        "method": rephrasing.method,
        "rules": list(rephrasing.rules),
        "seed": rephrasing.seed,
        "hash": prompt_set_hash(rephrasing.texts),
    }
    atomic_write_bytes(folder / "rephrasing.json", json.dumps(meta, indent=2).encode("utf-8"))
    return folder


def load_checked(
    folder: str | Path, original: PromptSet, labels: Sequence[object], *, where: str = "evaluator.prompt"
) -> PromptSet:
    """Load the prompt set at ``folder`` and check it as a rephrasing of ``original``.

    Args:
        where: What named the set (an option such as ``--prompts``), for an unknown set's message.

    Raises:
        SpecError: The set does not load, or fails :func:`check_rephrasing`.
    """
    ps = load_prompt_set(str(folder), where=where)
    check_rephrasing(prompt_texts(original), prompt_texts(ps), labels, where=str(folder))
    return ps


def project_prompt_sets(project: Path) -> list[Path]:
    """The prompt set folders under ``PROJECT/.allure/prompts/`` (sorted by name)."""
    root = project / PROMPTS_DIR
    return sorted(d for d in root.iterdir() if (d / "user.txt").is_file()) if root.is_dir() else []


def find_prompt_set(project: Path, name: str) -> str:
    """What :func:`load_prompt_set` should load for ``name``: a set saved in the project, else ``name``
    itself (a built-in set or a folder)."""
    saved = project / PROMPTS_DIR / name
    return str(saved) if "/" not in name and (saved / "user.txt").is_file() else name
