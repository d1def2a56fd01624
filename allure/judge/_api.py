"""The exported judge as users hold it: :func:`load_judge` gives a :class:`Judge` that labels files,
DataFrames and, as a LangChain ``Runnable``, single inputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.judge._bundle import allure_version, read_bundle
from allure.judge._judge import JudgeBundle

if TYPE_CHECKING:
    import pandas as pd

    from allure.judge._label import Labelled


class Judge(JudgeBundle):
    """An exported judge (:func:`load_judge`): ``card``, ``id``, and labelling."""

    def label_file(
        self, data: Path, *, project: Path, out: Path | None = None, progress: Any = None
    ) -> Labelled:
        """Label the items of ``data`` (any file ``allure init`` reads); see :func:`label_data`."""
        from allure.judge._label import label_data

        return label_data(self, Path(data), project=Path(project), out=out, progress=progress)

    def label(self, df: pd.DataFrame, *, project: str | Path = ".") -> pd.DataFrame:
        """Label a DataFrame's rows (the columns the audit mapped: task, response, ...); one row
        per item: ``id``, ``label``, ``parsed_label``, ``label_probs``, ``example_ids``, ``bundle_id``."""
        from allure.judge._label import label_frame

        return label_frame(self, df, project=Path(project))

    async def alabel(self, df: pd.DataFrame, *, project: str | Path = ".") -> pd.DataFrame:
        """:meth:`label` without blocking the running event loop (it runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.label, df, project=project)

    def as_runnable(self, *, project: str | Path = ".") -> Any:
        """This judge as a LangChain ``Runnable``: ``invoke({"task": ..., "response": ...})`` returns
        a :class:`~allure.judge.JudgeVerdict`; ``batch`` and ``abatch`` label many at once."""
        from allure.judge._runnable import JudgeRunnable

        return JudgeRunnable(judge=self, project=str(project))


def load_judge(folder: str | Path) -> Judge:
    """Read the bundle in ``folder`` (written by ``allure judge export``), checking every file's hash.

    Raises:
        JudgeError: No bundle there, a file edited after export, or a bundle from a newer allure.
    """

    path = Path(folder)
    if not path.is_dir():
        raise JudgeError(
            "no judge bundle here (not a folder)",
            where=str(path),
            fix="pass the folder `allure judge export --out DIR` wrote",
        )
    return Judge(read_bundle(path, allure_version()))
