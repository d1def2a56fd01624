"""Screens and dialogs of the review app."""

from allure.tui.screens.modals import CommentInput, FilterPicker, HelpScreen, ModePicker, ResumeOffer
from allure.tui.screens.resume import ResumeScreen

__all__ = ["CommentInput", "FilterPicker", "HelpScreen", "ModePicker", "ResumeOffer", "ResumeScreen"]
