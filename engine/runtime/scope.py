"""A run's `scope` with its `${...}` filled in: `${run.dir}` makes a per-run scope.

Scope is taken before the first step, so only values fixed for the whole run may appear in it
(`RUN_LEVEL_ROOTS`: the run's own id and directory, context and parameters, the environment);
lint refuses any other root there (a capture or `prev` does not exist yet).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.model.errors import InterpolationError, UsageError
from engine.model.loop import Loop
from engine.runtime.runstore import runs_root


def run_scope(
    loop: Loop,
    run_id: str,
    context: Mapping[str, Any],
    *,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, ...] | None:
    """The scope paths this run locks, each `${...}` rendered (None: the whole project).

    `root` is the project root whose `.loops/runs/` holds the run, `env` the actions' environment
    (the process's when None)."""
    if not loop.scope or not any("${" in entry for entry in loop.scope):
        return loop.scope
    from engine.shell.interpolate import EnvVars, render_text

    ns = {
        "run": {"id": run_id, "dir": str(runs_root(root) / run_id / "artifacts")},
        "context": dict(context),
        "param": {k: context[k] for k in loop.parameters if k in context},
        "env": EnvVars(os.environ if env is None else env),
    }
    rendered = []
    for entry in loop.scope:
        try:
            path = render_text(entry, ns).strip()
            if path:  # an optional path left empty (`${context.out}` with no value) is no path
                rendered.append(path)
        except InterpolationError as exc:
            raise UsageError(
                f"scope entry {entry!r} cannot be resolved: {exc.reason}",
                hint="scope may use ${run.dir}, ${run.id}, ${context.X}, ${param.X}, ${env.X}; "
                "pass missing values with --context NAME=VALUE",
            ) from None
    return tuple(rendered) or None
