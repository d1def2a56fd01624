"""The ALLURE loop graph.

prepare -> evaluate -> score -> propose -> decide --(stop)--> finish
                ^                            |
                |                          review (interrupt) -> commit --(nothing new)--> finish
                +--------------------------------------------------+

``builder`` is the uncompiled graph (``langgraph.json`` points at ``graph``); the CLI compiles it
with a SQLite checkpointer so a run paused at review resumes in another process.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from allure.graphs import nodes
from allure.graphs.state import AuditContext, LoopState


def _after_decide(state: LoopState) -> str:
    return "finish" if state.get("stop_reason") else "review"


def _after_commit(state: LoopState) -> str:
    return "finish" if state.get("stop_reason") else "evaluate"


def build_graph() -> StateGraph[LoopState, AuditContext, LoopState, LoopState]:
    """The uncompiled loop graph."""
    g = StateGraph(LoopState, context_schema=AuditContext)
    g.add_node("prepare", nodes.prepare)
    g.add_node("evaluate", nodes.evaluate)
    g.add_node("score", nodes.score)
    g.add_node("propose", nodes.propose)
    g.add_node("decide", nodes.decide)
    g.add_node("review", nodes.review)
    g.add_node("commit", nodes.commit)
    g.add_node("finish", nodes.finish)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "evaluate")
    g.add_edge("evaluate", "score")
    g.add_edge("score", "propose")
    g.add_edge("propose", "decide")
    g.add_conditional_edges("decide", _after_decide, {"finish": "finish", "review": "review"})
    g.add_edge("review", "commit")
    g.add_conditional_edges("commit", _after_commit, {"finish": "finish", "evaluate": "evaluate"})
    g.add_edge("finish", END)
    return g


builder = build_graph()
graph: Any = builder.compile()
"""Compiled without a checkpointer, for ``langgraph dev`` / ``langgraph.json``."""
