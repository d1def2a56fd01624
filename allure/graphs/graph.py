"""The ALLURE loop graph.

prepare -> evaluate -> score -> propose -> should_continue --(stop)--> finish
                ^                                  |
                |                                review (interrupt) -> commit --(stop)--> finish
                +---------------------------------------------------------+

``should_continue`` and ``commit`` route by returning ``Command(goto=...)``.

``builder`` is the uncompiled graph (``langgraph.json`` points at ``graph``); the CLI compiles it
with a SQLite checkpointer so a run paused at review resumes in another process.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from allure.graphs import nodes
from allure.graphs.state import AuditContext, LoopState


def build_graph() -> StateGraph[LoopState, AuditContext, LoopState, LoopState]:
    """The uncompiled loop graph."""
    g = StateGraph(LoopState, context_schema=AuditContext)
    g.add_node("prepare", nodes.prepare)
    g.add_node("evaluate", nodes.evaluate)
    g.add_node("score", nodes.score)
    g.add_node("propose", nodes.propose)
    g.add_node("should_continue", nodes.should_continue, destinations=("review", "finish"))
    g.add_node("review", nodes.review)
    g.add_node("commit", nodes.commit, destinations=("evaluate", "finish"))
    g.add_node("finish", nodes.finish)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "evaluate")
    g.add_edge("evaluate", "score")
    g.add_edge("score", "propose")
    g.add_edge("propose", "should_continue")
    g.add_edge("review", "commit")
    g.add_edge("finish", END)
    return g


builder = build_graph()
graph: Any = builder.compile()
"""Compiled without a checkpointer, for ``langgraph dev`` / ``langgraph.json``."""
