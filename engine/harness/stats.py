"""Wilson intervals for the harness; they live in `engine.model.stats` (suites use them too)."""

from engine.model.stats import Z95, Rate, wilson_interval

__all__ = ["Z95", "Rate", "wilson_interval"]
