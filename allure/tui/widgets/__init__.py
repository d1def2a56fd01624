"""Widgets of the review app, grouped by area."""

from allure.tui.widgets.candidate_view import CandidateView
from allure.tui.widgets.queue_table import QueueTable

__all__ = ["CandidateView", "QueueTable"]
