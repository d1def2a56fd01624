"""Datasets: read generator responses into :class:`~allure.models.Item` records.

``load_items(spec)`` reads JSONL (plain or gzip), CSV and CogEval files as a
:class:`DatasetSpec` (the ``[dataset]`` table of an audit spec) says; ``demo_spec()``
points at the CogEval sample shipped with allure.
"""

from allure.dataset._cogeval import COGEVAL_COLUMNS, cogeval_label, is_cogeval_row, item_from_cogeval_row
from allure.dataset._folds import cross_folds, folds_digest
from allure.dataset._guess import guess_spec
from allure.dataset._guess_result import Guess
from allure.dataset._load import column_value, load_items
from allure.dataset._render import render_spec
from allure.dataset._sample import allocate, dev_split, split_heldout, stratified_sample, task_groups
from allure.dataset._spec import ColumnMap, DatasetFormat, DatasetSpec, GoldScore
from allure.dataset.demo import DEMO_FILE, demo_audit, demo_audit_spec, demo_dataset_path, demo_spec

__all__ = [
    "COGEVAL_COLUMNS",
    "DEMO_FILE",
    "ColumnMap",
    "DatasetFormat",
    "DatasetSpec",
    "GoldScore",
    "Guess",
    "allocate",
    "cogeval_label",
    "cross_folds",
    "folds_digest",
    "demo_audit",
    "column_value",
    "demo_audit_spec",
    "demo_dataset_path",
    "demo_spec",
    "guess_spec",
    "is_cogeval_row",
    "item_from_cogeval_row",
    "load_items",
    "render_spec",
    "dev_split",
    "split_heldout",
    "stratified_sample",
    "task_groups",
]
