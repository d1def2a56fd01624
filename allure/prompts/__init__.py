"""Prompt templates as files, loaded into LangChain ``ChatPromptTemplate`` objects; their rephrasings."""

from allure.prompts._rephrase import (
    PROMPTS_DIR,
    RULES,
    SYNONYMS,
    Rephrasing,
    check_rephrasing,
    find_prompt_set,
    label_instructions,
    load_checked,
    project_prompt_sets,
    prompt_set_hash,
    prompt_texts,
    rule_rephrasings,
    write_prompt_set,
)
from allure.prompts._templates import PROMPT_SETS, PromptSet, load_prompt_set

__all__ = [
    "PROMPTS_DIR",
    "PROMPT_SETS",
    "RULES",
    "SYNONYMS",
    "PromptSet",
    "Rephrasing",
    "check_rephrasing",
    "find_prompt_set",
    "label_instructions",
    "load_checked",
    "load_prompt_set",
    "project_prompt_sets",
    "prompt_set_hash",
    "prompt_texts",
    "rule_rephrasings",
    "write_prompt_set",
]
