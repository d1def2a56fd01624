"""allure: audit and improve LLM-as-a-judge evaluators with the ALLURE loop."""

__version__ = "0.1.0"
__all__ = ["__version__"]
