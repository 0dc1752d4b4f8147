"""`${...}` written for little-loops, rewritten for ll-loop.

- `${context.run_dir}` (a directory little-loops' runner injects into every run and shares with
  sub-loops) becomes `${run.dir}`, or `${context.run_dir | default(run.dir)}` in a loop whose
  caller passes its own directory down;
- `${state.iteration}` is `${state.step}`, `${loop.started_at}` is `${run.started_at}`;
- in a shell action little-loops pasted every value as raw text. ll-loop quotes each value for
  its position (found with bash's grammar), which is the same text wherever a value sits inside
  quotes or is one word; where that is not so, the expression says what the value was meant to
  be (`_fit_positions`).

Namespaces with no equivalent (`messages`, `result`, `loop.elapsed`) are reported;
`loop.elapsed_ms` is ll-loop's too (the run's time, earlier sessions of a resumed run included).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# One of our expressions: `${root.rest}` not preceded by `$` (`$${` is a literal).
_EXPR = re.compile(r"(?<!\$)\$\{\s*([A-Za-z_]\w*)((?:[^{}]|\{[^{}]*\})*)\}")
_RUN_DIR = re.compile(r"^\.\s*run_dir\s*(.*)$", re.S)
_RENAMES = {
    ("state", "iteration"): "${state.step}",
    ("loop", "started_at"): "${run.started_at}",
}
_MISSING = {
    ("loop", "elapsed"): "loop.elapsed (time since the run started) has no equivalent",
    ("loop", "timeout"): "loop.timeout has no equivalent",
    ("prev", "timeout_kind"): "prev.timeout_kind has no equivalent (a timeout is verdict error)",
}
_MISSING_FIX = (
    "; left as it is, it fails every run that reaches it: compute the value in the action "
    "(${run.started_at} is when the run started) or remove it"
)
# `.STATE.CAPTURE.FIELD` after `captured`: a child's capture, which little-loops merged into its
# caller under the sub-loop state's name (ll-loop's keys there are the child's own result).
CHILD_READ = re.compile(r"\s*\.\s*([\w-]+)\s*\.\s*([\w-]+)\s*\.\s*(\w+)")
SUBLOOP_KEYS = frozenset({"outcome", "outputs", "steps", "terminal", "terminated_by"})
EVENTS_NOTE = (
    "little-loops stored the child's event stream in a sub-loop state's capture as `output`; "
    "ll-loop has it as `events` (JSONL, one event per line, the child's sub-loops' events "
    "included), whose events are ll-loop's: each is named by `event` (little-loops: `type`), an "
    "action's output is an `action_complete` event's `output` (its first 2,000 characters; "
    "little-loops: an `output` event's `text`), and the end is a `loop_complete` event with "
    "`final_state`, `outcome` and `terminated_by` (little-loops: a `terminal` event's `state`); "
    "see docs/runs.md for the fields"
)
_SLICE = re.compile(r":(\d+)(?::(\d+))?\s*$")
_UNKEPT_FIELDS = {
    "failure_type": "a capture's failure_type (little-loops' transient / non_recoverable / "
    "infra_retry / real reading of a failed action's output)",
    "timeout_kind": "a capture's timeout_kind (wall or idle; a timeout is verdict error)",
}
_OURS = frozenset({"context", "captured", "prev", "state", "loop", "run", "env", "param"})
_THEIRS_ONLY = {
    "messages": "the shared message log (${messages}) does not exist in ll-loop",
    "result": "${result.*} (the evaluation result during routing) does not exist in ll-loop",
}


@dataclass(frozen=True)
class Problem:
    """Something in an expression that could not be kept: where, why, and the text itself."""

    kind: str  # dropped | changed | blocker
    where: str  # states.fix, the loop, ...
    message: str
    expression: str = ""  # as written, so the report can point at its line


@dataclass
class Rewriter:
    """Rewrites one loop's expressions; `problems` collects what could not be kept."""

    run_dir: str = "${run.dir}"  # what `${context.run_dir}` becomes in this loop
    captures: Mapping[str, str] = field(default_factory=dict)  # renamed capture names
    # (sub-loop state, child capture, field) -> where it is now: `CAPTURE.outputs.NAME`
    child_values: Mapping[tuple[str, str, str], str] = field(default_factory=dict)
    subloop_captures: frozenset[str] = frozenset()  # captures of sub-loop states (as written)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # the loop's context defaults
    problems: list[Problem] = field(default_factory=list)
    uses_run_dir: bool = False
    reads_child_events: bool = False  # a sub-loop capture's `.output` became `.events`
    where: str = "the loop"  # the part being rewritten, for the report

    def text(self, value: str) -> str:
        """Rewrite the expressions of an interpolated text (prompt, path, source, ...)."""
        if "${" not in value:
            return value
        return _EXPR.sub(self._expression, value)

    def shell(self, script: str) -> str:
        """Rewrite a shell action, adding `| raw` where little-loops' raw paste was code; one
        that reads a child's event stream gets little-loops' event fields renamed (`_events`)."""
        before, self.reads_child_events = self.reads_child_events, False
        script = self.text(script)
        if "${" in script:
            script = _fit_positions(script, self.defaults)
        if self.reads_child_events:
            script, renamed = _events(script)
            script, unexpanded = _events_unexpanded(script)
            renamed += unexpanded
            if renamed:
                message = (
                    "the code reading the child's events reads ll-loop's event fields: "
                    + "; ".join(renamed)
                )
                self.problems.append(Problem("changed", self.where, message))
        self.reads_child_events = before or self.reads_child_events
        return script

    def value(self, value: Any) -> Any:
        """Rewrite every string inside a YAML value (with:, outputs, ...)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def _expression(self, match: re.Match[str]) -> str:
        root, rest = match.group(1), match.group(2)
        sliced = _SLICE.search(rest)
        if sliced is not None and root in _OURS:  # bash's ${x:offset:length}, meant as such
            start, length = int(sliced.group(1)), sliced.group(2)
            end = "" if length is None else str(start + int(length))
            rest = rest[: sliced.start()]
            inner = self._expression(_EXPR.match("${" + root + rest + "}"))  # type: ignore[arg-type]
            return inner[:-1] + f"[{start}:{end}]}}"
        if root == "context":
            found = _RUN_DIR.match(rest)
            if found is not None:
                self.uses_run_dir = True
                return _with_tail(self.run_dir, found.group(1))
        if root == "captured" and self.child_values:
            read = CHILD_READ.match(rest)
            read_at = (read.group(1), read.group(2), read.group(3)) if read is not None else None
            moved = self.child_values.get(read_at) if read_at is not None else None
            if read is not None and moved is not None:
                return f"${{captured.{moved}{rest[read.end() :]}}}"
        events = None
        if root == "captured" and self.subloop_captures:
            events = self._subloop_capture_read(rest, match.group(0))
        if events is not None:  # `${captured.C.output}` of a sub-loop: its `events`
            rest = events
        if root == "captured":
            self._unkept_capture_field(rest, match.group(0))
        if root == "captured" and self.captures:
            name = re.match(r"\s*\.\s*([\w-]+)", rest)
            if name is not None and name.group(1) in self.captures:
                rest = rest.replace(name.group(1), self.captures[name.group(1)], 1)
                return "${captured" + rest + "}"
        if events is not None:
            return "${captured" + rest + "}"
        key = re.match(r"\s*\.\s*(\w+)", rest)
        attribute = key.group(1) if key else ""
        renamed = _RENAMES.get((root, attribute))
        if renamed is not None and rest.strip() == f".{attribute}":
            return renamed
        if (root, attribute) in _MISSING:
            message = _MISSING[(root, attribute)] + _MISSING_FIX
            self.problems.append(Problem("blocker", self.where, message, match.group(0)))
        elif root in _THEIRS_ONLY:
            self.problems.append(Problem("blocker", self.where, _THEIRS_ONLY[root]))
        return match.group(0)

    def _unkept_capture_field(self, rest: str, expression: str) -> None:
        """A capture field little-loops had and ll-loop has not: the classification of a
        failed action's output (`failure_type`: transient, non_recoverable, infra_retry, real)
        and how it timed out (`timeout_kind`)."""
        read = re.match(r"\s*\.\s*[\w-]+\s*\.\s*(failure_type|timeout_kind)\b(.*)$", rest, re.S)
        if read is None:
            return
        what = _UNKEPT_FIELDS[read.group(1)]
        if read.group(2).strip().startswith((":default=", "?", "|")):
            message = f"{what} has no equivalent in ll-loop, so this is always its default"
            self.problems.append(Problem("changed", self.where, message, expression))
            return
        message = f"{what} has no equivalent in ll-loop" + _MISSING_FIX
        self.problems.append(Problem("blocker", self.where, message, expression))

    def _subloop_capture_read(self, rest: str, expression: str) -> str | None:
        """`${captured.C.output}` where C is a sub-loop state's capture: little-loops stored the
        child's event stream there, which ll-loop has as `events` (the expression's `rest` read
        so is returned, with a `changed:` note saying how the events differ). Another field
        that is no key of ours (SUBLOOP_KEYS) is reported; None unless it was rewritten."""
        read = re.match(r"\s*\.\s*([\w-]+)\s*\.\s*(\w+)(.*)$", rest, re.S)
        if read is None or read.group(1) not in self.subloop_captures:
            return None
        if read.group(2) in SUBLOOP_KEYS | {"events", "events_path"}:
            return None
        if read.group(2) == "output":
            self.reads_child_events = True
            self.problems.append(Problem("changed", self.where, EVENTS_NOTE, expression))
            return rest[: read.start(2)] + "events" + rest[read.end(2) :]
        what = repr(read.group(2))
        kept = "terminal, outcome, terminated_by, steps, outputs and events"
        tail = read.group(3).strip()
        if tail.startswith((":default=", "?")):
            message = (
                f"little-loops stored {what} in a sub-loop state's capture; ll-loop keeps the "
                f"child's {kept}, so this is always its default"
            )
            self.problems.append(Problem("changed", self.where, message, expression))
            return None
        message = (
            f"little-loops stored {what} in a sub-loop state's capture; ll-loop keeps the "
            f"child's {kept}: left as it is, it is an error verdict wherever it is read: read "
            "one of those (a value the child declares under outputs:) instead"
        )
        self.problems.append(Problem("blocker", self.where, message, expression))
        return None


# little-loops' event fields as its loops read them in Python (`event.get('type') == 'output'`)
_Q = r"""(['"])"""
# the log pasted into a Python string (in a quoted heredoc, so `| raw`): JSONL never holds `"""`
_PYTHON_STRING = re.compile(r'(?<![\w"\'])"""(\$\{\s*captured\.[\w-]+\.events\s*\|\s*raw\s*\})"""')
_OUTPUT_EVENT = re.compile(rf"\b(\w+)\.get\({_Q}type\2\)\s*==\s*{_Q}output\3")
_TERMINAL_EVENT = re.compile(rf"\b(\w+)\.get\({_Q}type\2\)\s*==\s*{_Q}terminal\3")


def _events(script: str) -> tuple[str, list[str]]:
    """`script` with the little-loops event fields its Python reads renamed to ll-loop's, and
    what was renamed: an `output` event's `text` is an `action_complete` event's `output`, a
    `terminal` event's `state` the `final_state` of a `loop_complete` that ended at a terminal
    (a child's own `loop_complete` is its last event: its sub-loops' come before it)."""
    renamed: list[str] = []
    script, pasted = _PYTHON_STRING.subn(r'r"""\1"""', script)
    if pasted:  # `\n` in an output's JSON was a newline in the Python string: no line parsed
        renamed.append(
            'the log is pasted into a raw string, r"""...""", so its JSON escapes stay JSON\'s'
        )
    outputs = {m.group(1) for m in _OUTPUT_EVENT.finditer(script)}
    if outputs:
        script = _OUTPUT_EVENT.sub(r"\1.get('event') == 'action_complete'", script)
        for name in outputs:
            script = re.sub(rf"\b{name}\.get\({_Q}text\1", f"{name}.get('output'", script)
            script = re.sub(rf"\b{name}\[{_Q}text\1\]", f"{name}['output']", script)
        renamed.append(
            "`type == 'output'` and `text` are `event == 'action_complete'` and `output`"
        )
    lines = script.split("\n")
    terminals = False
    for index, line in enumerate(lines):
        found = _TERMINAL_EVENT.search(line)
        if found is None:
            continue
        terminals = True
        name = found.group(1)
        lines[index] = _TERMINAL_EVENT.sub(
            r"(\1.get('event') == 'loop_complete' and \1.get('terminated_by') == 'terminal')",
            line,
        )
        for near in range(index, min(index + 3, len(lines))):  # the branch it guards
            lines[near] = re.sub(
                rf"\b{name}\.get\({_Q}state\1", f"{name}.get('final_state'", lines[near]
            )
    if terminals:
        script = "\n".join(lines)
        renamed.append(
            "`type == 'terminal'` and its `state` are a `loop_complete` event that "
            "`terminated_by == 'terminal'` and its `final_state`"
        )
    return script, renamed


_RAW_EVENTS = re.compile(r"captured\.([A-Za-z0-9]+(?:_[A-Za-z0-9]+)*)\.events\s*\|\s*raw")


def _events_unexpanded(script: str) -> tuple[str, list[str]]:
    """`script` with each raw paste of a child's log that bash would expand (an unquoted
    heredoc, `python3 -c "..."`) read from the log's file instead: pasted, the `$(...)` in any
    output of the child ran as the parent's command, and its backslashes were lost. The text
    of `$(cat "$LL_CAPTURED_C__events_path")` is not expanded again. A quoted heredoc keeps
    the paste (bash leaves its body alone)."""
    from engine.shell.interpolate import shell_holes
    from engine.shell.quoting import Context

    holes, plan = shell_holes(script)
    if plan.problem is not None:
        return script, []
    out: list[str] = []
    last = 0
    for hole in holes:
        expression = hole.expression
        read = _RAW_EVENTS.fullmatch(expression.text.strip())
        if read is None or hole.position.context not in (Context.HEREDOC, Context.DOUBLE):
            continue
        variable = f"LL_CAPTURED_{read.group(1)}__events_path"
        out.append(script[last : expression.start] + f'$(cat "${variable}")')
        last = expression.end
    if not out:
        return script, []
    out.append(script[last:])
    return "".join(out), [
        "where bash expands it (an unquoted heredoc, double quotes), the log is read from its "
        'file, $(cat "$LL_CAPTURED_C__events_path"): pasted raw, a `$(...)` in the child\'s '
        "output ran as a command"
    ]


def _with_tail(expression: str, tail: str) -> str:
    """`${run.dir}` with what followed `context.run_dir` (a suffix default means nothing here:
    the directory always exists; a filter is kept)."""
    tail = tail.strip()
    if not tail or tail.startswith((":default", "?")):
        return expression
    if tail.startswith("|"):
        inner = expression[2:-1]
        if "|" in inner:
            inner = f"({inner})"
        return "${" + inner + " " + tail + "}"
    return expression


def _fit_positions(script: str, defaults: Mapping[str, Any]) -> str:
    """Each value written for where it sits in the script, as bash's grammar places it (see
    engine.shell): little-loops pasted every value as text, so

    - where bash runs code (a command name, `python -c "..."`, `bash -c`), the value was code
      by design, and so was whatever goes to a command known only at run time
      (`${context.cmd} "${context.arg}"`): `| raw` keeps pasting it (lint still warns of
      captures pasted raw);
    - in arithmetic or a variable name, it was a number: `| integer` says so (a bare `:default=`
      or `?` becomes a Jinja default, 0 for nothing);
    - in a `#` comment it meant nothing: it is written as literal text (`$${...}`);
    - an unquoted context value whose default holds several words was split into words: raw.
    """
    from engine.shell.interpolate import shell_holes

    holes, plan = shell_holes(script)
    if plan.problem is not None:
        return script
    out: list[str] = []
    last = 0
    for hole in holes:
        expression = hole.expression
        fitted = _fitted(expression.text, hole.position, expression.raw, defaults)
        if fitted is None:
            continue
        out.append(script[last : expression.start] + fitted)
        last = expression.end
    out.append(script[last:])
    return "".join(out)


def _fitted(inner: str, position: Any, raw: bool, defaults: Mapping[str, Any]) -> str | None:
    from engine.shell.commands import Role
    from engine.shell.interpolate import value_type
    from engine.shell.quoting import Context

    text = inner.strip()
    if position.role in (Role.CODE, Role.UNKNOWN) and not raw:
        return "${" + _with_filter(text, "raw", "''") + "}"
    if position.role in (Role.ARITHMETIC, Role.NAME) and value_type(text) != "integer":
        return "${" + _with_filter(text, "integer", "0") + "}"
    if position.role is Role.COMMENT:
        return "$${" + inner + "}"
    if position.role is Role.VALUE and position.context is Context.UNQUOTED and not raw:
        key = re.match(r"(?:context|param)\s*\.\s*(\w+)\s*$", text)
        default = defaults.get(key.group(1)) if key else None
        if isinstance(default, str) and len(default.split()) > 1:
            return "${" + text + " | raw}"
    return None


def _with_filter(text: str, name: str, nothing: str) -> str:
    """`text | name`, little-loops' suffixes spelled as Jinja first (a suffix swallows what
    follows it): `x:default=5` → `x | default(5) | name`, `x?` → `x | default(nothing) | name`."""
    base, marker, default = text.partition(":default=")
    if marker:
        value = default.strip()
        literal = value if re.fullmatch(r"-?\d+(\.\d+)?", value) else repr(value)
        return f"{base.strip()} | default({literal}) | {name}"
    if text.endswith("?"):
        return f"{text[:-1].strip()} | default({nothing}) | {name}"
    if text.endswith(":shell"):  # quoted as one shell word, then pasted: as little-loops did
        return f"{text[: -len(':shell')].strip()} | shell | {name}"
    return f"{text} | {name}"


def rewrite_all(value: Any, rewrite: Callable[[str], str]) -> Any:
    """`rewrite` applied to every string in a YAML value."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):
        return {k: rewrite_all(v, rewrite) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_all(v, rewrite) for v in value]
    return value


def roots_of(text: str) -> set[str]:
    """The roots of the expressions in `text` that ll-loop would treat as its own."""
    return {m.group(1) for m in _EXPR.finditer(text) if m.group(1) in _OURS}
