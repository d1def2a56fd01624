"""The metrics of each iteration and split of a run, stored as the typed :class:`~allure.metrics.SplitMetrics`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure.store._base import StoreBase

if TYPE_CHECKING:
    from allure.metrics import SplitMetrics


class MetricsStore(StoreBase):
    """Per-iteration, per-split metrics."""

    def record_metrics(self, run_id: str, iteration: int, split: str, metrics: SplitMetrics) -> None:
        """Store the metrics of one iteration and split (replacing earlier ones)."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO metrics (run_id, iteration, split, metrics_json) VALUES (?,?,?,?) "
                "ON CONFLICT (run_id, iteration, split) DO UPDATE SET metrics_json = excluded.metrics_json",
                (run_id, iteration, split, metrics.model_dump_json()),
            )

    def metrics(self, run_id: str) -> dict[int, dict[str, SplitMetrics]]:
        """Iteration -> split -> metrics, in iteration order."""
        from allure.metrics import SplitMetrics  # numpy stays unloaded until metrics are read

        rows = self._query(
            "SELECT iteration, split, metrics_json FROM metrics WHERE run_id=? ORDER BY iteration, split",
            (run_id,),
        )
        out: dict[int, dict[str, SplitMetrics]] = {}
        for r in rows:
            out.setdefault(r["iteration"], {})[r["split"]] = SplitMetrics.model_validate_json(
                r["metrics_json"]
            )
        return out
