"""ll-loop: a declarative finite-state-machine loop engine for LLM-driven automation and evaluation."""

__version__ = "0.1.0"
