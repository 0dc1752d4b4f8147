"""The rule about suppressions themselves."""

from __future__ import annotations

from collections.abc import Iterator

from lint._context import LintContext
from lint._paths import did_you_mean
from lint._registry import RULES, Finding, PathKey, find_rule, rule
from lint._suite import SuiteContext


@rule("LL050", "warning", "unknown-suppression", targets=("loop", "suite"))
def unknown_suppression(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A `lint:` suppression names a rule code that does not exist."""
    top = ctx.suite.lint if isinstance(ctx, SuiteContext) else ctx.loop.lint
    places: list[tuple[PathKey, str]] = [
        (("lint", "suppress", i, "code"), s.code) for i, s in enumerate(top)
    ]
    for state in () if isinstance(ctx, SuiteContext) else ctx.loop.states.values():
        places += [
            (("states", state.name, "lint", "suppress", i, "code"), s.code)
            for i, s in enumerate(state.lint)
        ]
    known = [*RULES, *(r.name for r in RULES.values())]
    for path, code in places:
        if find_rule(code) is None:
            yield Finding(
                f"suppression names unknown lint rule {code!r}{did_you_mean(code, known)}",
                path,
                "use a code from `docs/lint-rules.md` (e.g. LL002) or remove the suppression",
            )
