"""The ALLURE loop as a LangGraph state machine (state.py, nodes.py, graph.py) and its runner."""

from allure.graphs.graph import build_graph
from allure.graphs.nodes import split_items
from allure.graphs.runner import RunOutcome, resume_run, start_run

__all__ = ["RunOutcome", "build_graph", "resume_run", "split_items", "start_run"]
