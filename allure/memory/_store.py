"""The episodic memory: approved ICL examples in a persistent Chroma collection.

Each record holds the example's response as its document (the embedded text),
the full example JSON in the ``example_json`` metadata field, and flat metadata
fields for filtering (failure mode, problem type, group, source run, reviewer...).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from allure.errors import MemoryStoreError
from allure.memory._client import LOCATION_FIX, is_url, location_problem, resolve_location
from allure.memory._collection import (
    BATCH,
    DEFAULT_COLLECTION,
    MemoryVersion,
    content_hash,
    embed,
    example_metadata,
    open_collection,
)
from allure.memory._own import response_index, without_own
from allure.memory._policy import RetrievalPolicy, cap, select_examples, stable_order
from allure.memory._sqlite import read_examples_json
from allure.models import IclExample, Item

_EXAMPLES = TypeAdapter(list[IclExample])


class EpisodicMemory:
    """A handle on one memory collection. Open with :meth:`EpisodicMemory.open`.

    Reads for the non-similarity policies use a snapshot of the whole memory held
    in the object, so retrieving for many items does not query Chroma per item. The
    snapshot is dropped by this object's writes and reloaded by :meth:`version` and
    :meth:`refresh` (call one of them when another process may have written).
    """

    def __init__(
        self, client: Any, collection: Any, location: str, *, name: str = DEFAULT_COLLECTION
    ) -> None:
        self._client = client
        self._col_obj = collection
        """The Chroma collection; ``None`` until first needed for a memory opened with ``lazy``."""
        self.location = location
        self.collection_name = collection.name if collection is not None else name
        self._snapshot: list[IclExample] | None = None
        self._by_id: dict[str, IclExample] = {}
        self._mode_counts: Counter[str] = Counter()
        self._memo: dict[tuple[str, str], list[IclExample]] = {}
        self._responses: dict[str, list[IclExample]] | None = None
        self._text_vectors: dict[str, np.ndarray] = {}

    @classmethod
    def open(
        cls,
        location: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        create: bool = True,
        lazy: bool = False,
    ) -> EpisodicMemory:
        """Open (or create) the memory at ``location``.

        Args:
            location: A directory (embedded Chroma) or ``http://host:port`` (a Chroma server).
            collection: The collection name (3-512 characters).
            create: Create the store and collection when missing; else a missing one is an error.
            lazy: For an existing local store: read the examples from its SQLite file (see
                :func:`~allure.memory._sqlite.read_examples_json`) and open Chroma only when an
                operation needs it (a write, a vector query, the embeddings), so reads of the
                examples, :meth:`version` and the non-similarity policies never import chromadb.

        Raises:
            MemoryStoreError: The location is missing, corrupt or unreachable, not a folder or an
                http(s) URL (:func:`~allure.memory._client.location_problem`, the spec's message), or
                the collection is absent.
        """
        if problem := location_problem(str(location)):
            raise MemoryStoreError(problem, where="memory location", fix=LOCATION_FIX)
        if lazy and not is_url(str(location)):
            rows = read_examples_json(location, collection)
            if rows is not None:
                memory = cls(None, None, str(location), name=collection)
                memory._load(rows)
                return memory
        client, col = open_collection(str(location), collection, create=create)
        return cls(client, col, str(location))

    @classmethod
    def from_examples(cls, examples: Iterable[IclExample], *, location: str = "(examples)") -> EpisodicMemory:
        """A read-only memory holding ``examples`` and no Chroma collection: every retrieval policy
        but ``top_k`` (which needs the vector index) serves from it exactly as from the memory they
        came from (an exported judge's ``examples.jsonl``)."""
        memory = cls(None, None, location)
        memory._load([(ex.id, ex.model_dump_json()) for ex in examples])
        return memory

    @classmethod
    def open_at(
        cls,
        location: str | None,
        *,
        project_dir: str | Path,
        collection: str = DEFAULT_COLLECTION,
        create: bool = True,
        lazy: bool = False,
    ) -> EpisodicMemory:
        """:meth:`open` the memory at ``location`` as a project names it (see :func:`resolve_location`)."""
        return cls.open(
            resolve_location(location, project_dir), collection=collection, create=create, lazy=lazy
        )

    @property
    def is_remote(self) -> bool:
        """True for a memory on a Chroma server."""
        return is_url(self.location)

    # -- writes -----------------------------------------------------------------------------------
    def add(self, examples: Iterable[IclExample]) -> int:
        """Upsert approved examples by id; unchanged ones are skipped (not re-embedded).

        Returns:
            How many ids were new to the memory.

        Raises:
            MemoryStoreError: An example is not approved (nothing is written).
        """
        batch = list({ex.id: ex for ex in examples}.values())
        for ex in batch:
            if ex.decision != "approve":
                raise MemoryStoreError(
                    f"example {ex.id} is not approved (decision={ex.decision!r}); only approved examples enter memory",
                    where=f"example {ex.id}, field 'decision'",
                    fix="approve it in `allure review` first",
                )
        if not batch:
            return 0
        existing = self._fetch_json([ex.id for ex in batch])
        changed = [ex for ex in batch if existing.get(ex.id) != ex.model_dump_json()]
        for start in range(0, len(changed), BATCH):
            chunk = changed[start : start + BATCH]
            self._col.upsert(
                ids=[ex.id for ex in chunk],
                documents=[ex.response for ex in chunk],
                embeddings=embed([ex.response for ex in chunk]),
                metadatas=[example_metadata(ex) for ex in chunk],
            )
        if changed:
            self._snapshot = None
        return sum(1 for ex in batch if ex.id not in existing)

    def delete(self, ids: Iterable[str]) -> int:
        """Delete examples by id; returns how many existed."""
        wanted = list(dict.fromkeys(ids))
        present = list(self._fetch_json(wanted))
        for start in range(0, len(present), BATCH):
            self._col.delete(ids=present[start : start + BATCH])
        if present:
            self._snapshot = None
        return len(present)

    # -- reads ------------------------------------------------------------------------------------
    def _fetch_json(self, ids: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(ids), BATCH):
            res = self._col.get(ids=ids[start : start + BATCH], include=["metadatas"])
            for rid, meta in zip(res["ids"], res["metadatas"] or [], strict=False):
                out[rid] = str((meta or {}).get("example_json", ""))
        return out

    @staticmethod
    def _parse(rid: str, meta: Any) -> IclExample:
        try:
            return IclExample.model_validate_json(str((meta or {})["example_json"]))
        except (KeyError, ValidationError) as exc:
            raise MemoryStoreError(
                f"record {rid} holds no valid example ({exc})",
                where=f"record {rid}, field 'example_json'",
                fix="the collection was not written by allure; delete the record or use another collection",
            ) from exc

    @property
    def _col(self) -> Any:
        """The Chroma collection, opened now when the memory was opened ``lazy``."""
        if self._col_obj is None:
            self._client, self._col_obj = open_collection(self.location, self.collection_name, create=False)
        return self._col_obj

    def refresh(self) -> list[IclExample]:
        """Reload the snapshot from the store and return it (sorted by id)."""
        rows = read_examples_json(self.location, self.collection_name) if self._col_obj is None else None
        if rows is not None:
            return self._load(rows)
        res = self._col.get(include=["metadatas"])
        return self._load(
            [
                (rid, str((meta or {}).get("example_json", "")))
                for rid, meta in zip(res["ids"], res["metadatas"] or [], strict=False)
            ]
        )

    def _load(self, rows: list[tuple[str, str]]) -> list[IclExample]:
        """Make ``(id, example_json)`` rows the snapshot (sorted by id)."""
        try:  # one validation of a JSON array: much faster than one call per row
            examples = _EXAMPLES.validate_json("[" + ",".join(js or "null" for _, js in rows) + "]")
        except ValidationError:  # name the bad record
            examples = [self._parse(rid, {"example_json": js}) for rid, js in rows]
        examples.sort(key=lambda ex: ex.id)
        self._snapshot = examples
        self._by_id = {ex.id: ex for ex in examples}
        self._mode_counts = Counter(ex.failure_mode for ex in examples)
        self._memo = {}
        self._responses = None
        return examples

    def all(self) -> list[IclExample]:
        """Every example, sorted by id (from the snapshot)."""
        return list(self._snapshot if self._snapshot is not None else self.refresh())

    def count(self) -> int:
        """Number of examples (asks Chroma)."""
        return int(self._col.count())

    def get(self, example_id: str) -> IclExample:
        """One example by id.

        Raises:
            MemoryStoreError: No such id.
        """
        res = self._col.get(ids=[example_id], include=["metadatas"])
        if not res["ids"]:
            raise MemoryStoreError(
                f"no example {example_id!r} in memory",
                where=self.location,
                fix="`allure memory list` shows the ids",
            )
        return self._parse(example_id, (res["metadatas"] or [None])[0])

    def version(self) -> MemoryVersion:
        """The current version (reloads the snapshot)."""
        examples = self.refresh()
        return MemoryVersion(
            ids=[ex.id for ex in examples], content_hash=content_hash(examples), size=len(examples)
        )

    def embeddings(self) -> tuple[list[IclExample], np.ndarray]:
        """Every example (sorted by id) with its stored embedding, one row each."""
        res = self._col.get(include=["metadatas", "embeddings"])
        rows = sorted(
            zip(res["ids"], res["metadatas"] or [], res["embeddings"], strict=False), key=lambda r: r[0]
        )
        examples = [self._parse(rid, meta) for rid, meta, _ in rows]
        if not rows:
            from allure.memory._embed import EMBEDDING_DIM

            return [], np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        matrix = np.asarray([emb for _, _, emb in rows], dtype=np.float32).reshape(len(rows), -1)
        return examples, matrix

    # -- retrieval --------------------------------------------------------------------------------
    def retrieve(self, item: Item, policy: RetrievalPolicy) -> list[IclExample]:
        """The examples ``policy`` puts in ``item``'s prompt, in stable (problem type, id) order;
        never an example mined from the item itself, in any run (:func:`~allure.memory._own.without_own`).

        Policies other than ``top_k`` are served from the snapshot (memoised per group or
        problem type); ``top_k`` embeds the item's response and queries Chroma.
        """
        return self.retrieve_many([item], policy)[item.id]

    def retrieve_many(
        self, items: list[Item], policy: RetrievalPolicy, *, excluded: dict[str, list[str]] | None = None
    ) -> dict[str, list[IclExample]]:
        """:meth:`retrieve` for many items: one batched embedding and Chroma query for ``top_k``.

        Args:
            items: The items.
            policy: The retrieval policy.
            excluded: If given, receives item id -> the ids of its own examples the policy would have
                chosen and that were withheld (an item of this run mined by an earlier one).

        Returns:
            Item id -> its examples in stable order.
        """
        examples = self.all()
        if self._responses is None:
            self._responses = response_index(examples)
        return without_own(self._retrieve_many, self._responses, items, policy, excluded)

    def _retrieve_many(self, items: list[Item], policy: RetrievalPolicy) -> dict[str, list[IclExample]]:
        """The policy's choice for each item (own examples not yet withheld)."""
        if policy.kind == "nearest":
            return self._nearest(items, policy)
        if policy.kind != "top_k":
            return {it.id: list(self._select(it, policy)) for it in items}
        if not items:
            return {}
        found = self._top_k(embed([it.response for it in items]), policy)
        return {it.id: exs for it, exs in zip(items, found, strict=True)}

    def _nearest(self, items: list[Item], policy: RetrievalPolicy) -> dict[str, list[IclExample]]:
        """``nearest`` blocks (:func:`allure.memory._nearest.nearest_embedded`), example vectors kept."""
        from allure.memory._nearest import nearest_embedded

        return nearest_embedded(items, self.all(), policy, vectors=self._text_vectors)

    def _select(self, item: Item, policy: RetrievalPolicy) -> list[IclExample]:
        snapshot = self.all()
        scope = {"same_group": item.group, "same_problem_type": item.problem_type}.get(policy.kind, "")
        key = (policy.model_dump_json(), scope)
        if key not in self._memo:
            self._memo[key] = select_examples(snapshot, item, policy)
        return self._memo[key]

    def _top_k(self, queries: np.ndarray, policy: RetrievalPolicy) -> list[list[IclExample]]:
        """Nearest allowed examples per query row.

        Chroma's filtered query is slow on a large collection, so a
        mode filter is applied by over-fetching an unfiltered query (ids and distances
        only; the examples come from the snapshot) sized to the allowed share of the memory;
        only when too few allowed examples come back does it re-query with the ``where`` filter.
        """
        size = len(self.all())
        allowed = policy.allowed_modes()
        excluded = set(policy.exclude_ids)
        n_excluded = sum(1 for i in excluded if i in self._by_id and self._by_id[i].failure_mode in allowed)
        n_allowed = sum(self._mode_counts.get(m, 0) for m in allowed) - n_excluded
        k = min(policy.k, n_allowed)
        if k == 0:
            return [[] for _ in range(len(queries))]
        where = policy.chroma_where()
        fetch = k if where is None else min(size, max(2 * k, math.ceil(2 * k * size / n_allowed)))
        fetch = min(size, fetch + n_excluded)  # excluded ids are dropped after the query

        def keep(ex: IclExample) -> bool:
            return ex.failure_mode in allowed and ex.id not in excluded

        res = self._col.query(query_embeddings=queries, n_results=fetch, include=["distances"])
        out = []
        for row, ids in enumerate(res["ids"]):
            picked = [ex for ex in self._resolve(ids) if keep(ex)][:k]
            if len(picked) < k and fetch < size:
                again = self._col.query(
                    query_embeddings=queries[row : row + 1],
                    n_results=size,
                    where=where,
                    include=["distances"],
                )
                picked = [ex for ex in self._resolve(again["ids"][0]) if keep(ex)][:k]
            out.append(cap(stable_order(picked), policy))
        return out

    def _resolve(self, ids: list[str]) -> list[IclExample]:
        """Examples for ``ids`` (order kept) from the snapshot, reloading it once if one is unknown."""
        if any(i not in self._by_id for i in ids):
            self.refresh()
        return [self._by_id[i] for i in ids if i in self._by_id]

    def similar(self, text: str, k: int = 5) -> list[tuple[IclExample, float]]:
        """The ``k`` examples nearest to ``text``, nearest first, with cosine similarity."""
        if k <= 0:
            return []
        return self._query(embed([text]), k, None)[0]

    def _query(
        self, query: np.ndarray, k: int, where: dict[str, Any] | None
    ) -> list[list[tuple[IclExample, float]]]:
        res = self._col.query(
            query_embeddings=query,
            n_results=k,
            where=where,
            include=["metadatas", "distances"],
        )
        out = []
        for ids, metas, dists in zip(
            res["ids"], res["metadatas"] or [], res["distances"] or [], strict=False
        ):
            out.append(
                [(self._parse(rid, m), 1.0 - float(d)) for rid, m, d in zip(ids, metas, dists, strict=False)]
            )
        return out

    def __repr__(self) -> str:
        return f"EpisodicMemory({self.location!r}, collection={self.collection_name!r})"
