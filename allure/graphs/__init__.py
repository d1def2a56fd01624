"""The ALLURE loop as a LangGraph state machine (state.py, nodes.py, graph.py), its input
(prepare.py) and its runner."""

from allure.graphs.graph import build_graph
from allure.graphs.prepare import PreparedAudit, prepare_audit
from allure.graphs.runner import RunOutcome, resume_run, start_run

__all__ = ["PreparedAudit", "RunOutcome", "build_graph", "prepare_audit", "resume_run", "start_run"]
