"""ll-loop: a declarative FSM loop engine for LLM-driven automation and evaluation."""

__version__ = "0.1.0"
