"""``allure memory``: list, show, count, export, import, delete and map the episodic memory."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from allure.cli._common import command_group, echo, echo_json, limit_note, option_groups, project_folder
from allure.errors import MemoryStoreError
from allure.safe_text import one_line

if TYPE_CHECKING:
    from allure.memory import ClusterMethod, ClusterOptions, ClusterReport, EpisodicMemory

memory_app = command_group("memory", "Inspect and manage the episodic memory of approved ICL examples.")

MemoryOpt = typer.Option(
    None,
    "--memory",
    "-m",
    help="Memory directory or http://host:port Chroma server (default: PROJECT/.allure/memory; env ALLURE_MEMORY).",
)
ProjectOpt = typer.Option(
    Path("."), "--project", "-p", help="Project folder holding .allure/.", callback=project_folder
)
CollectionOpt = typer.Option("icl_examples", "--collection", help="Chroma collection name.")
DEFAULT_LIST_LIMIT = 50
"""Examples ``allure memory list`` shows without ``--limit``/``--all``."""


@dataclass(frozen=True)
class _MemoryAt:
    """The memory a command works on: ``--memory`` (or the settings' default) in ``--project``."""

    memory: str | None
    project: Path
    collection: str

    def open(self, *, create: bool = False, lazy: bool = False) -> EpisodicMemory:
        """Open it (``create``: make it when it does not exist yet; ``lazy``: read without Chroma
        until something needs it)."""
        from allure.memory import EpisodicMemory
        from allure.settings import load_settings

        location = self.memory or load_settings().memory or None
        return EpisodicMemory.open_at(
            location, project_dir=self.project, collection=self.collection, create=create, lazy=lazy
        )


def _memory_options(
    memory: str | None = MemoryOpt, project: Path = ProjectOpt, collection: str = CollectionOpt
) -> _MemoryAt:
    """The options naming the memory, shared by every ``allure memory`` command."""
    return _MemoryAt(memory, project, collection)


_memory_command = option_groups(at=_memory_options)
"""Give a command the memory options, as its ``at`` parameter."""


def _short(text: str, width: int) -> str:
    return one_line(" ".join(text.split()), width)


@memory_app.command("list")
@_memory_command
def list_cmd(
    *,
    at: _MemoryAt,
    mode: str | None = typer.Option(None, "--mode", help="Only this failure mode."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line instead of a table."),
    limit: int = typer.Option(
        DEFAULT_LIST_LIMIT, "--limit", min=1, help="Show at most this many examples (sorted by id)."
    ),
    all_: bool = typer.Option(False, "--all", help="Show every example (no --limit)."),
) -> None:
    """List the examples: id, failure mode, problem type, labels, response."""
    examples = at.open().all()
    if mode is not None:
        from allure.memory import RetrievalPolicy

        RetrievalPolicy.model_validate({"include_modes": [mode]})  # validates the name
        examples = [ex for ex in examples if ex.failure_mode == mode]
    shown = examples if all_ else examples[:limit]
    for ex in shown:
        if as_json:
            echo_json(ex.model_dump_json())
        else:
            echo(
                f"{one_line(ex.id)}  {ex.failure_mode:<19} {one_line(ex.problem_type or '-'):<16} "
                f"{ex.wrong_label}->{ex.correct_label}  {_short(ex.response, 60)}"
            )
    echo(limit_note(len(shown), len(examples), "example(s)"), err=True)


@memory_app.command("show")
@_memory_command
def show_cmd(
    example_id: str = typer.Argument(..., help="The example id (see `allure memory list`)."),
    *,
    at: _MemoryAt,
) -> None:
    """Show one example and the verdicts whose prompt carried it, and how many were right."""
    ex = at.open().get(example_id)
    echo_json(json.dumps(ex.model_dump(mode="json"), indent=2, ensure_ascii=False))
    from allure.store import open_project_store, project_db_path, store_url

    db = project_db_path(at.project)
    if not store_url(at.project) and not db.exists():
        echo(f"\nno run store at {db}: no verdicts used this example yet")
        return
    store = open_project_store(at.project, create=False)
    try:
        calls = store.calls_with_example(example_id)
    finally:
        store.close()
    right = sum(1 for _, v, ref in calls if ref is not None and v.label == ref)
    judged = sum(1 for _, _, ref in calls if ref is not None)
    echo(
        f"\nverdicts whose prompt carried it: {len(calls)}; right {right} of {judged} with a reference label"
    )
    for run_id, v, ref in calls[:50]:
        mark = "?" if ref is None else ("right" if v.label == ref else "WRONG")
        echo(f"  {run_id}  item {one_line(v.item_id)}  label {v.label}  reference {ref}  {mark}")
    if len(calls) > 50:
        echo(f"  ... and {len(calls) - 50} more")


AUTO_CLUSTER_MAX = 2000
"""``memory stats`` clusters a memory of up to this many examples when no cached clusters exist."""


def _readouts_of(project: Path, content_hash: str) -> list[dict[str, Any]]:
    """The read-outs (``[evaluator] readout``) stored with this memory content in ``project``'s runs:
    each pass's current one (its latest refit after an approval, else what the pass fitted), with
    the refit history (``refits``)."""
    from allure.store import RunStore, project_db_path

    db = project_db_path(project)
    if not db.exists():
        return []
    store = RunStore(db)
    try:
        out = []
        for r in store.readouts_of_version(content_hash):
            rec = r["record"] if r["record"] is not None else r["pass_record"]
            kept = {k: v for k, v in rec.shown().items() if k != "fit_ids"}
            out.append({"run_id": r["run_id"], "iteration": r["iteration"], **kept, "refits": r["refits"]})
        return out
    finally:
        store.close()


def _echo_readout(r: dict[str, Any]) -> None:
    """One read-out of ``memory stats``: what it reads and weighs, its CV score, n and date; its refits."""
    when = f"; fitted {r['fitted_at']}" if r.get("fitted_at") else ""
    echo(
        f"read-out fitted with this memory version (run {r['run_id']}, iteration {r['iteration']}): "
        f"{r.get('describe', 'nothing fitted')}{when}; {r.get('decision', '')}"
    )
    refits = r.get("refits") or []
    if refits:
        last = refits[-1]
        done = sum(1 for x in refits if not x.get("refused"))
        echo(
            f"  refitted {done} time(s) after approvals, no evaluator call (last {last['at']}, "
            f"{last['changed']} of {last['n']} fit labels corrected, {last['wall_s']:.2f} s)"
            + (f"; last refit: {last['refused']}" if last.get("refused") else "")
        )


@memory_app.command("stats")
@_memory_command
def stats_cmd(
    *,
    at: _MemoryAt,
    clusters: int | None = typer.Option(
        None, "--clusters", help="Fix the number of KMeans clusters (implies --method kmeans)."
    ),
    method: str = typer.Option(
        "hdbscan",
        "--method",
        help="hdbscan (density clusters, outliers as noise) or kmeans (k by silhouette).",
    ),
    compute_clusters: bool = typer.Option(
        False,
        "--compute-clusters",
        help=f"Cluster the embeddings now even when the memory holds more than {AUTO_CLUSTER_MAX} "
        "examples (the result is cached for this content).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON object."),
) -> None:
    """Size, counts per failure mode and problem type, embedding clusters (make-up, ARI/NMI with the modes).

    Counts are read from the memory at once. Clusters are cached per content: an unchanged memory
    shows its cached clusters; an uncached one is clustered now when it holds at most
    AUTO_CLUSTER_MAX examples (or with --compute-clusters / --clusters N), else the output says how
    to compute them.
    """
    from allure.memory import cached_clusters, cluster_memory, memory_stats

    if method not in ("hdbscan", "kmeans"):
        raise MemoryStoreError(
            f"--method {method!r} is not known", where="option --method", fix="use hdbscan or kmeans"
        )
    mem = at.open(lazy=True)
    stats = memory_stats(mem, reload=False)  # the examples were just read
    if stats.size == 0:
        raise MemoryStoreError(
            "the memory holds no examples: nothing to count or cluster",
            where=mem.location,
            fix="approve candidates (`allure review`) or `allure memory import FILE` first; "
            "check --memory / --collection if it should hold some",
        )
    if clusters is not None and not 2 <= clusters <= max(stats.size - 1, 2):
        raise MemoryStoreError(
            f"--clusters {clusters}: cannot make {clusters} clusters of {stats.size} examples",
            where="option --clusters",
            fix=f"use a number from 2 to {max(stats.size - 1, 2)}, or leave --clusters out to choose k by silhouette",
        )
    params: ClusterOptions = {"method": cast("ClusterMethod", method), "n_clusters": clusters}
    report = cached_clusters(mem, content=stats.content_hash, **params)
    if report is None and (compute_clusters or clusters is not None or stats.size <= AUTO_CLUSTER_MAX):
        report = cluster_memory(mem, **params)
    how = "`allure memory stats --compute-clusters` clusters them once (cached for this content)"
    readouts = _readouts_of(at.project, stats.content_hash)
    if as_json:
        echo_json(
            json.dumps(
                {
                    "stats": stats.model_dump(mode="json"),
                    "readouts": readouts,
                    "clusters": report.model_dump(mode="json") if report else None,
                    **({} if report else {"clusters_not_computed": f"{stats.size} examples: {how}"}),
                }
            )
        )
        return
    echo(f"memory {mem.location}  size {stats.size}  content hash {stats.content_hash}")
    for r in readouts:
        _echo_readout(r)
    echo("by failure mode:")
    for mode, n in stats.by_mode.items():
        echo(f"  {mode:<20} {n}")
    echo("by problem type:")
    for pt, n in stats.by_problem_type.items():
        echo(f"  {one_line(pt or '(none)'):<20} {n}")
    _echo_clusters(report, stats.size, how)
    empty = stats.empty_modes()
    if empty:
        echo(f"modes with no example: {', '.join(empty)}")


def _echo_clusters(report: ClusterReport | None, n_examples: int, how: str) -> None:
    """Print the clusters of ``memory stats``: their quality, agreement with the failure modes and make-up."""
    if report is None:
        echo(f"clusters: not computed ({n_examples} examples, more than {AUTO_CLUSTER_MAX}); {how}")
    elif report.n_clusters == 0:
        echo("clusters: too few distinct examples to cluster")
    else:
        sil = "-" if report.silhouette is None else f"{report.silhouette:.3f}"
        noise = f", {report.noise} in no cluster (noise)" if report.noise else ""
        when = f"; cached, computed {report.computed_at}" if report.cached else ""
        echo(
            f"clusters: {report.n_clusters} ({report.chosen_by}, silhouette {sil}{noise}{when}); "
            f"agreement with failure modes: ARI {report.ari:.3f}, NMI {report.nmi:.3f}"
        )
        for c, modes in report.modes_by_cluster.items():
            size = sum(modes.values())
            parts = ", ".join(f"{m} {n}" for m, n in sorted(modes.items(), key=lambda kv: -kv[1])[:3])
            types = report.problem_types_by_cluster.get(c, {})
            tparts = ", ".join(
                f"{one_line(t or '-')} {n}" for t, n in sorted(types.items(), key=lambda kv: -kv[1])[:3]
            )
            echo(f"  {'noise' if c < 0 else f'c{c}'} ({size}): {parts} | {tparts}")


@memory_app.command("export")
@_memory_command
def export_cmd(
    file: Path = typer.Argument(..., help="The JSONL file to write (one example per line, sorted by id)."),
    *,
    at: _MemoryAt,
) -> None:
    """Export every example to a JSONL file."""
    from allure.memory import export_jsonl

    n = export_jsonl(at.open(), file)
    echo(f"exported {n} example(s) to {file}")


@memory_app.command("import")
@_memory_command
def import_cmd(
    file: Path = typer.Argument(..., help="A JSONL file of approved examples (as written by export)."),
    *,
    at: _MemoryAt,
) -> None:
    """Import examples from JSONL (validated whole first; existing ids are updated)."""
    from allure.memory import read_examples_jsonl

    examples = read_examples_jsonl(file)  # a bad line stops here, before the memory is opened
    mem = at.open(create=True)
    new = mem.add(examples)
    echo(
        f"imported {len(examples)} example(s) from {file}: {new} new, {len(examples) - new} updated or unchanged"
    )


@memory_app.command("delete")
@_memory_command
def delete_cmd(
    ids: list[str] = typer.Argument(None, help="Example ids to delete."),
    all_: bool = typer.Option(False, "--all", help="Delete every example (needs --yes)."),
    yes: bool = typer.Option(False, "--yes", help="Confirm --all."),
    *,
    at: _MemoryAt,
) -> None:
    """Delete examples by id, or all of them with --all --yes."""
    if all_ and ids:
        raise MemoryStoreError("give ids or --all, not both", where="arguments", fix="drop the ids or --all")
    if all_ and not yes:
        raise MemoryStoreError("--all deletes every example", where="--all", fix="add --yes to confirm")
    if not all_ and not ids:
        raise MemoryStoreError("nothing to delete", where="arguments", fix="give example ids, or --all --yes")
    mem = at.open()
    targets = [ex.id for ex in mem.refresh()] if all_ else list(ids)
    known = {ex.id for ex in mem.all()}
    missing = [i for i in targets if i not in known]
    if missing:
        raise MemoryStoreError(
            f"unknown id(s): {', '.join(missing)}",
            where=mem.location,
            fix="`allure memory list` shows the ids",
        )
    n = mem.delete(targets)
    echo(f"deleted {n} example(s)")


@memory_app.command("map")
@_memory_command
def map_cmd(
    out: Path = typer.Option(Path("memory-map.png"), "--out", "-o", help="PNG file to write."),
    *,
    at: _MemoryAt,
    seed: int = typer.Option(0, "--seed", help="t-SNE random state."),
) -> None:
    """Write a 2-D t-SNE map of the memory coloured by failure mode (ALLURE Fig. 5)."""
    from allure._io import check_writable
    from allure.memory import tsne_map

    check_writable(out, "--out")
    path = tsne_map(at.open(), out, random_state=seed)
    echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add ``allure memory ...`` to the main app."""
    app.add_typer(memory_app, name="memory")
