"""Evaluator calls: the run log that is also the cache, and the verdicts linking calls to a run's pass.

A call is written as soon as it returns; the ids of the ICL examples in its prompt go, in prompt
order, into the indexed ``call_examples`` table. A stored call whose status is not ``error`` is
served again for the same prompt hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from allure.labels import Label, encode_label
from allure.models import Verdict, utcnow
from allure.store._backend import Connection, Row, insert_rows, read_label
from allure.store._base import StoreBase
from allure.store._leases import delete_claims

_CHUNK = 500
"""Ids per ``IN (...)`` list (below SQLite's variable limit)."""


MAX_STORED_REPLY = 64 * 1024
"""Characters of an evaluator's reply kept in the run store; a longer reply is cut and says so (the
label was parsed from the whole reply before it was stored)."""


def stored_reply(text: str | None) -> str | None:
    """``text`` as stored: whole up to :data:`MAX_STORED_REPLY` characters, else cut with a note at the end."""
    if text is None or len(text) <= MAX_STORED_REPLY:
        return text
    return text[:MAX_STORED_REPLY] + f"\n[allure: reply cut to {MAX_STORED_REPLY} of {len(text)} characters]"


_VERDICT_COLUMNS = tuple(f for f in Verdict.model_fields if f not in ("icl_ids", "cache_hit", "raw_label"))
"""The ``calls`` columns a :class:`Verdict` is read from (by name)."""


def _verdict(row: Row, icl_ids: list[str]) -> Verdict:
    fields = {k: row[k] for k in _VERDICT_COLUMNS}
    fields["label"] = read_label(fields["label"])
    fields["label_probs"] = json.loads(fields["label_probs"]) if fields["label_probs"] else None
    return Verdict.model_validate({**fields, "icl_ids": icl_ids})


_CALL_COLUMNS = (
    "prompt_hash, item_id, model, params_json, status, label, raw_output, prob_positive, label_probs, "
    "error, latency_s, prompt_tokens, completion_tokens, cached_tokens, created_at"
)
_INSERT_ROWS = 500
"""Calls per multi-row ``INSERT`` (15 values each: below SQLite's and PostgreSQL's parameter limits)."""


def _probs_json(probs: dict[str, float]) -> str:
    """The stored JSON of a verdict's label probabilities (keys sorted; read back with ``json.loads``)."""
    return orjson.dumps(probs, option=orjson.OPT_SORT_KEYS).decode()


def _call_row(v: Verdict, params_json: str, now: str) -> tuple[Any, ...]:
    return (
        v.prompt_hash,
        v.item_id,
        v.model,
        params_json,
        v.status,
        encode_label(v.label),
        stored_reply(v.raw_output),
        v.prob_positive,
        None if v.label_probs is None else _probs_json(v.label_probs),
        v.error,
        v.latency_s,
        v.prompt_tokens,
        v.completion_tokens,
        v.cached_tokens,
        now,
    )


def _insert_calls(c: Connection, verdicts: list[Verdict], params_json: str, now: str) -> list[int]:
    """Insert ``verdicts`` as calls with one multi-row ``INSERT`` (one round trip on PostgreSQL); their ids in order.

    ``RETURNING`` promises no row order, but both back ends number the rows of one ``VALUES`` list
    in list order (an autoincrement key; a sequence read row by row), so the ids sorted are the
    rows' ids in order; the prompt hashes returned beside them check it.
    """
    marks = ",".join(["(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"] * len(verdicts))
    rows = c.execute(
        f"INSERT INTO calls ({_CALL_COLUMNS}) VALUES {marks} RETURNING id, prompt_hash",
        [x for v in verdicts for x in _call_row(v, params_json, now)],
    ).fetchall()
    got = sorted((int(r[0]), r[1]) for r in rows)
    if [h for _id, h in got] != [v.prompt_hash for v in verdicts]:  # pragma: no cover - see the docstring
        raise RuntimeError("the calls' ids did not come back in insertion order")
    return [i for i, _h in got]


class CallsStore(StoreBase):
    """The call cache and the verdicts of each run's passes."""

    def _query_in(self, sql: str, values: list[Any]) -> Iterator[list[Row]]:
        """The rows of ``sql`` (whose ``IN ({})`` takes the values) for each chunk of ``values``."""
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            yield self._query(sql.format(",".join("?" * len(chunk))), chunk)

    def _examples_of(self, call_ids: list[int]) -> dict[int, list[str]]:
        """Call id -> the ICL example ids of its prompt, in prompt order."""
        out: dict[int, list[str]] = {}
        sql = "SELECT call_id, example_id FROM call_examples WHERE call_id IN ({}) ORDER BY call_id, position"
        for rows in self._query_in(sql, list(call_ids)):
            for r in rows:
                out.setdefault(r["call_id"], []).append(r["example_id"])
        return out

    def _verdicts(self, rows: list[Row]) -> list[Verdict]:
        examples = self._examples_of([r["id"] for r in rows])
        return [_verdict(r, examples.get(r["id"], [])) for r in rows]

    def lookup_calls(self, prompt_hashes: Iterable[str]) -> dict[str, tuple[int, Verdict]]:
        """Prompt hash -> (call id, verdict) of the newest stored call that is not an error, for the hashes known."""
        hashes = list(dict.fromkeys(prompt_hashes))
        out: dict[str, tuple[int, Verdict]] = {}
        sql = "SELECT * FROM calls WHERE prompt_hash IN ({}) AND status != 'error' ORDER BY id"
        for rows in self._query_in(sql, hashes):
            for row, v in zip(rows, self._verdicts(rows), strict=True):
                out[row["prompt_hash"]] = (row["id"], v)
        return out

    def record_calls(
        self,
        verdicts: list[Verdict],
        params: dict[str, Any],
        *,
        link: tuple[str, int] | None = None,
        release: str | None = None,
    ) -> list[int]:
        """Write evaluator calls in one transaction; returns their ids in order.

        With ``link = (run_id, iteration)`` each call is also linked, in the same transaction, to
        that iteration as its verdict for ``verdict.item_id`` (not a cache hit). With ``release``
        (a lease token), that lease's claims on the calls' prompts are dropped in the same
        transaction: a prompt is never unclaimed and unstored at once.
        """
        params_json = json.dumps(params, sort_keys=True, default=str)
        now = utcnow()
        ids: list[int] = []
        links: list[tuple[int, int, str]] = []
        with self._tx() as c:
            for start in range(0, len(verdicts), _INSERT_ROWS):
                ids.extend(_insert_calls(c, verdicts[start : start + _INSERT_ROWS], params_json, now))
            for call_id, v in zip(ids, verdicts, strict=True):
                if v.icl_ids:
                    links.extend((call_id, i, ex) for i, ex in enumerate(v.icl_ids))
            insert_rows(c, "INSERT INTO call_examples (call_id, position, example_id)", links)
            if link is not None:
                rows = [(cid, v.item_id, False) for cid, v in zip(ids, verdicts, strict=True)]
                self._link_verdicts(c, link[0], link[1], rows)
            if release:
                delete_claims(c, release, sorted({v.prompt_hash for v in verdicts}))
        return ids

    def record_verdicts(self, run_id: str, iteration: int, rows: list[tuple[int, str, bool]]) -> None:
        """Link calls to a run's iteration: ``(call_id, item_id, cache_hit)`` tuples (replacing earlier links)."""
        with self._tx() as c:
            self._link_verdicts(c, run_id, iteration, rows)

    @staticmethod
    def _link_verdicts(c: Connection, run_id: str, iteration: int, rows: list[tuple[int, str, bool]]) -> None:
        # an item linked twice keeps its last link (one multi-row upsert may not touch a row twice)
        last = {item_id: (run_id, iteration, item_id, call_id, int(hit)) for call_id, item_id, hit in rows}
        insert_rows(
            c,
            "INSERT INTO verdicts (run_id, iteration, item_id, call_id, cache_hit)",
            list(last.values()),
            tail=" ON CONFLICT (run_id, iteration, item_id) DO UPDATE SET call_id = excluded.call_id, "
            "cache_hit = excluded.cache_hit, label_json = NULL",
        )

    def set_verdict_labels(self, run_id: str, iteration: int, labels: dict[str, Label | None]) -> None:
        """Record the post-processed label of some of an iteration's verdicts (item id -> label);
        the call keeps the label parsed from its output."""
        with self._tx() as c:
            c.executemany(
                "UPDATE verdicts SET label_json=? WHERE run_id=? AND iteration=? AND item_id=?",
                [(json.dumps(lab), run_id, iteration, item_id) for item_id, lab in labels.items()],
            )

    def verdicts(self, run_id: str, iteration: int) -> dict[str, Verdict]:
        """Item id -> verdict of a run's iteration."""
        rows = self._query(
            "SELECT v.cache_hit, v.item_id AS linked_item, v.label_json, c.* FROM verdicts v "
            "JOIN calls c ON c.id = v.call_id WHERE v.run_id=? AND v.iteration=?",
            (run_id, iteration),
        )
        out = {}
        for row, v in zip(rows, self._verdicts(rows), strict=True):
            # A cached call may have been made for another item with the same cache key: the
            # verdict belongs to the item it is linked to, not to the call's first item.
            v.cache_hit = bool(row["cache_hit"])
            v.item_id = row["linked_item"]
            if row["label_json"] is not None:  # post-processed (calibration): the parsed label stays
                v.raw_label, v.label = v.label, json.loads(row["label_json"])
            out[v.item_id] = v
        return out

    def call_count(self) -> int:
        """Number of calls stored (all runs)."""
        return int(self._query("SELECT COUNT(*) AS n FROM calls")[0]["n"])

    def calls_with_example(self, example_id: str) -> list[tuple[str, Verdict, Label | None]]:
        """``(run_id, verdict, reference_label)`` for every run verdict whose prompt carried ``example_id``."""
        rows = self._query(
            "SELECT v.run_id, i.reference_label, v.item_id AS linked_item, c.* FROM call_examples e "
            "JOIN calls c ON c.id = e.call_id JOIN verdicts v ON v.call_id = c.id "
            "LEFT JOIN items i ON i.run_id = v.run_id AND i.item_id = v.item_id "
            "WHERE e.example_id = ?",
            (example_id,),
        )
        return [
            (
                r["run_id"],
                v.model_copy(update={"item_id": r["linked_item"]}),
                read_label(r["reference_label"]),
            )
            for r, v in zip(rows, self._verdicts(rows), strict=True)
        ]
