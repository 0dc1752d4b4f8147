"""Templates that are one `${...}` and nothing else (pure): their value keeps its type."""

from __future__ import annotations


def lone_expression(template: str) -> str | None:
    """The expression of a template that is exactly one `${...}` (its value keeps its type:
    `${context.n}` with n = 2 is the number 2); None for any other template (it renders to
    text)."""
    stripped = template.strip()
    if stripped.startswith("${") and stripped.endswith("}") and stripped.count("${") == 1:
        return stripped[2:-1]
    return None
