"""What a call costs: one price table (USD per million tokens), overridable by a JSON file.

Lookup: exact model id → the id without a trailing `-YYYYMMDD` date → the model family
(`opus` / `sonnet` / `haiku`) → the default. The default is deliberately on the high side (current
Opus prices) so an unknown model makes `max_cost_usd` stop a run early rather than late.

Override with `LL_PRICES=<file.json>` or `.loops/prices.json` (first found wins), shaped
`{"claude-x": {"input": 3.0, "output": 15.0}, "default": {"input": 5.0, "output": 25.0}}`;
entries replace or extend the built-in ones.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from engine.load.jsonfile import read_json_file
from engine.load.project import loops_dir
from engine.model.errors import PreflightError


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens."""

    input: float
    output: float


BUILTIN_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "claude-opus-4-5": Price(5.0, 25.0),
        "claude-opus-4-1": Price(15.0, 75.0),
        "claude-opus-4-0": Price(15.0, 75.0),
        "claude-opus-4": Price(15.0, 75.0),
        "claude-sonnet-4-5": Price(3.0, 15.0),
        "claude-sonnet-4-0": Price(3.0, 15.0),
        "claude-sonnet-4": Price(3.0, 15.0),
        "claude-haiku-4-5": Price(1.0, 5.0),
        "claude-3-5-haiku": Price(0.8, 4.0),
        "claude-3-haiku": Price(0.25, 1.25),
        # families, for ids this table does not list yet
        "opus": Price(5.0, 25.0),
        "sonnet": Price(3.0, 15.0),
        "haiku": Price(1.0, 5.0),
    }
)
DEFAULT_PRICE = Price(5.0, 25.0)

_DATE = re.compile(r"-\d{8}$")


@dataclass(frozen=True)
class PriceTable:
    """Prices by model id; `cost()` turns token counts into USD."""

    prices: Mapping[str, Price] = field(default_factory=lambda: BUILTIN_PRICES)
    default: Price = DEFAULT_PRICE

    def price_for(self, model: str) -> Price:
        for key in (model, _DATE.sub("", model)):
            if key in self.prices:
                return self.prices[key]
        for family in ("opus", "sonnet", "haiku"):
            if family in model and family in self.prices:
                return self.prices[family]
        return self.default

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.price_for(model)
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


PARTS = ("input", "output")


def _is_price(value: object) -> bool:
    """A finite number ≥ 0: a negative price lowered the run's cost below what was spent (and
    under `max_cost_usd`), NaN and infinity made it unprintable as JSON and unrecordable."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


def _shown(entry: object) -> str:
    """The entry as the file spells it (NaN and Infinity included), cut short."""
    text = json.dumps(entry)
    return text if len(text) <= 80 else text[:77] + "..."


def price_file(root: Path | None = None) -> Path | None:
    """The override file in effect: `LL_PRICES`, else `<root>/.loops/prices.json` if it exists."""
    env = os.environ.get("LL_PRICES", "").strip()
    if env:
        return Path(env)
    candidate = loops_dir(root) / "prices.json"
    return candidate if candidate.is_file() else None


def load_prices(root: Path | None = None) -> PriceTable:
    """The built-in table merged with the override file; a bad file is a `PreflightError`."""
    path = price_file(root)
    if path is None:
        return PriceTable()
    hint = 'shape: {"model-id": {"input": 3.0, "output": 15.0}} (USD per million tokens)'
    try:
        raw = read_json_file(path)
    except OSError as exc:
        raise PreflightError(f"cannot read price table {path}: {exc}", hint=hint) from exc
    except ValueError as exc:  # a JsonFileError: `file:line:column: reason`
        raise PreflightError(f"cannot read price table {exc}", hint=hint) from exc
    if not isinstance(raw, dict):
        raise PreflightError(f"price table {path} is not a JSON object", hint=hint)
    prices = dict(BUILTIN_PRICES)
    default = DEFAULT_PRICE
    for model, entry in raw.items():
        if not (isinstance(entry, dict) and all(_is_price(entry.get(k)) for k in PARTS)):
            raise PreflightError(
                f"price table {path}: entry {model!r} needs 'input' and 'output' as numbers "
                f"≥ 0, got {_shown(entry)}",
                hint=hint,
            )
        price = Price(float(entry["input"]), float(entry["output"]))
        if model == "default":
            default = price
        else:
            prices[model] = price
    return PriceTable(MappingProxyType(prices), default)
