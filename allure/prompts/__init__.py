"""Prompt templates as files, loaded into LangChain ``ChatPromptTemplate`` objects."""

from allure.prompts._templates import PromptSet, load_prompt_set

__all__ = ["PromptSet", "load_prompt_set"]
