"""Write eval loops from issues: deterministic prompts, commented YAML, no LLM involved.

`scaffold_eval` builds an evaluation harness (is this a good experience?), `scaffold_verify` a
verification loop (does it meet each criterion?) or an adversarial one (can it be broken?).
Every prompt is assembled from the issue's own words; what the issue lacks becomes a visible
`<FILL: ...>` placeholder that `placeholder_diagnostics` reports with the exact thing to write.

The YAML is written as text (so it can carry comments) and every string that came from an issue
goes through `yaml_scalar`, which emits a block scalar or a double-quoted scalar that reads back
exactly; literal `${` from an issue is escaped as `$${` so ll-loop never interpolates it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import Diagnostic, UsageError
from engine.issuefile import Issue, slugify

PLACEHOLDER_RE = re.compile(r"<FILL:\s*(.*?)>")
NO_SIGNALS = "a stack trace, an error message or a silent no-op"

# Variant B: how often `execute` may be re-entered for one issue after a NO before giving up.
ISSUE_RETRIES = 2


@dataclass(frozen=True)
class Placeholder:
    """Something the issue lacks, left as `<FILL: what>` at `path` for a person to write."""

    issue_id: str
    path: str
    what: str


@dataclass(frozen=True)
class Scaffold:
    """A generated loop: its name, YAML text, and the placeholders left in it."""

    name: str
    text: str
    variant: str
    issue_ids: tuple[str, ...]
    placeholders: tuple[Placeholder, ...] = ()

    def diagnostics(self, file: str = "") -> list[Diagnostic]:
        """One warning per placeholder, positioned in the text, saying what to fill.

        Lint's `placeholder` rule (LL060) is the one implementation; this asks it.
        """
        from engine.load import check_loop_text
        from lint import lint_loop

        loop, positions, problems = check_loop_text(self.text, file)
        if loop is None:
            return problems
        return [d for d in lint_loop(loop, positions) if d.code == "LL060"]


# --- public entry points ------------------------------------------------------------------------


def scaffold_eval(issues: Sequence[Issue]) -> Scaffold:
    """Variant A for one issue, Variant B (a work list) for several."""
    unique = list({issue.id.upper(): issue for issue in issues}.values())
    if not unique:
        raise UsageError("no issues to scaffold", hint="pass --issues ID[,ID...]")
    if len(unique) == 1:
        return _variant_a(unique[0])
    return _variant_b(unique)


def scaffold_verify(issue: Issue, *, adversarial: bool = False) -> Scaffold:
    """A criteria-by-criteria verification loop, or an adversarial probing loop."""
    if adversarial:
        return _adversarial(issue)
    if not issue.acceptance_criteria:
        where = f" ({issue.path})" if issue.path else ""
        raise UsageError(
            f"{issue.id}{where} has no acceptance criteria, so there is nothing to verify",
            hint="add an `## Acceptance Criteria` list to the issue, or use `ll-loop scaffold-eval`"
            " (which leaves a placeholder to fill) or `scaffold-verify --adversarial`",
        )
    return _criteria_mode(issue)


def eval_name(issues: Sequence[Issue]) -> str:
    """`eval-harness-feat-919` for one issue; the IDs joined (shortened) for several."""
    ids = [slugify(i.id) for i in issues]
    if len(ids) <= 3:
        return "eval-harness-" + "-".join(ids)
    return f"eval-harness-{'-'.join(ids[:2])}-and-{len(ids) - 2}-more"


def verify_file_stem(issue: Issue, *, adversarial: bool) -> str:
    """`verify-FEAT-919-sprint-dashboard` / `adversarial-FEAT-919-sprint-dashboard`."""
    kind = "adversarial" if adversarial else "verify"
    return f"{kind}-{_safe_id(issue.id)}-{slugify(issue.title, max_len=40)}"


# --- prompts (pure text; escaping for interpolation happens at emission) -----------------------


def execute_prompt(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """What a user does to exercise the issue, and what the issue lacked for it (if anything)."""
    subject = f'"{issue.title}" ({issue.id})'
    parts: list[str] = []
    missing: list[str] = []
    if issue.is_bug and issue.steps_to_reproduce:
        parts.append(
            f"You are the person who reported {subject}. Check, on the real project and not a "
            "mock-up, whether the problem still happens."
        )
        if issue.summary:
            parts.append(f"The report:\n{issue.summary}")
        parts.append(f"Follow these steps exactly, as written:\n{issue.steps_to_reproduce}")
        if issue.expected_behavior:
            parts.append(
                "The report says this should happen instead; do whatever a user would do to "
                f"see whether it now does:\n{issue.expected_behavior}"
            )
    elif issue.use_case or issue.expected_behavior:
        parts.append(
            f"You are trying out {subject} as a real user of this project would, on the real "
            "project and not a mock-up."
        )
        if issue.summary:
            parts.append(f"What it is for:\n{issue.summary}")
        if issue.use_case:
            parts.append(f"Do what this scenario describes, step by step:\n{issue.use_case}")
        if issue.expected_behavior:
            lead = "Then use" if issue.use_case else "Use"
            parts.append(
                f"{lead} each part of what the feature is meant to do, trying it yourself "
                f"instead of assuming it works:\n{issue.expected_behavior}"
            )
    else:
        what = (
            f"the steps a user takes to exercise {issue.id}: the issue has no Use Case, "
            "Expected Behavior or Steps to Reproduce section"
        )
        missing.append(what)
        parts.append(f"You are trying out {subject} as a real user of this project would.")
        if issue.summary:
            parts.append(f"What the issue says:\n{issue.summary}")
        parts.append(f"<FILL: {what}>")
    parts.append(
        "As you go, write down exactly what you did and what you saw: every command or action, "
        "and its output or result copied as-is, including errors, warnings, delays and anything "
        "surprising. If something could not be done, say what stopped you. Report what "
        "happened; do not grade it."
    )
    return "\n\n".join(parts), tuple(missing)


def criteria_conditions(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """The numbered conditions and NO clause for one issue, and what it lacked (if anything)."""
    missing: list[str] = []
    if issue.acceptance_criteria:
        numbered = "\n".join(
            f"({n}) {criterion}" for n, criterion in enumerate(issue.acceptance_criteria, 1)
        )
    else:
        what = (
            f"numbered observable conditions for {issue.id} (1), (2), ...: the issue has no "
            "Acceptance Criteria section"
        )
        missing.append(what)
        numbered = f"(1) <FILL: {what}>"
    no_lines = [f"- {line}" for line in _no_conditions(issue)]
    text = (
        f'Judge whether "{issue.title}" ({issue.id}) worked for the user whose report you are '
        "given. Judge only from that report: an action it does not show did not happen.\n\n"
        f"Conditions, every one of which must hold:\n{numbered}\n\n"
        "Answer YES only if the report clearly shows every condition met.\n"
        "Answer NO, naming each unmet condition and what the report shows instead, if any "
        "condition is unmet or was not tried, or if the report shows any of:\n"
        + "\n".join(no_lines)
        + "\nAnswer PARTIAL if some conditions were met and the rest could not be tried, and "
        "BLOCKED if the user could not get far enough to try any of them."
    )
    if missing:
        text += (
            "\nIf a condition above is still an unfilled FILL marker, it cannot be judged: "
            "answer CANNOT_JUDGE."
        )
    return text, tuple(missing)


def evidence_demand(subject: str = "the report") -> str:
    """The verbatim-evidence clause every judge prompt ends with (lint rule MR-8)."""
    return (
        f"Evidence: quote verbatim, from {subject}, the line or lines that support your "
        "verdict. A verdict without a verbatim quote is not acceptable."
    )


def criteria_prompt(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """The complete judge prompt for one issue: conditions, NO clause, evidence demand."""
    text, missing = criteria_conditions(issue)
    return f"{text}\n\n{evidence_demand()}", missing


def _no_conditions(issue: Issue) -> list[str]:
    lines: list[str] = []
    numbers = {c: n for n, c in enumerate(issue.acceptance_criteria, 1)}
    for rule in issue.should_not:
        if rule in numbers:
            lines.append(f"anything condition ({numbers[rule]}) rules out")
        else:
            lines.append(f"a case the issue rules out: {rule}")
    if issue.is_bug and issue.actual_behavior:
        lines.append(f"the reported problem still happening: {_flat(issue.actual_behavior)}")
    lines.append(
        f"{NO_SIGNALS} (an action that seemed to work but changed nothing) in any step, "
        "unless a condition above asks for that error"
    )
    return lines


# --- Variant A -----------------------------------------------------------------------------------


def _variant_a(issue: Issue) -> Scaffold:
    name = eval_name([issue])
    execute, miss_exec = execute_prompt(issue)
    criteria, miss_crit = criteria_prompt(issue)
    holes = tuple(
        [Placeholder(issue.id, "states.execute.action", w) for w in miss_exec]
        + [Placeholder(issue.id, "states.check_skill.evaluate.prompt", w) for w in miss_crit]
    )
    text = f"""\
# Eval harness for {_comment(issue.id)}: {_comment(issue.title)}
# Generated by `ll-loop scaffold-eval`{_from(issue)}.
#
# `execute` uses the feature the way a person would and reports what happened; `check_skill`
# judges that report against the issue's acceptance criteria. NO or PARTIAL sends the harness
# back to `execute` for one more attempt; a second NO ends in `failed` (exit 1), so the verdict
# and the judge's reason reach the outputs. Only `done` (exit 0) is a pass; `blocked` (exit 1)
# means the user could not get started. Two attempts take 4 steps; max_steps 5 is a backstop,
# and a run that ends on it (exit 3, inconclusive) has NOT passed either.
{_placeholder_banner(holes)}name: {name}
description: {yaml_quoted(f"Evaluate {issue.id} ({issue.title}) the way a user experiences it.")}
category: harness
labels: [eval, {yaml_quoted(issue.id)}]
initial: execute
max_steps: 5
timeout: 1800
# The harness itself writes only into its run directory. This scope names the harness, so two
# runs of it never overlap; widen it if using the feature changes files in the repository.
scope:
  - .loops/{name}
# What a parent loop (e.g. eval-driven-development) sees when it runs this harness as a sub-loop.
outputs:
  verdict: "${{captured.judgement.verdict | default('not judged')}}"
  reason: "${{captured.judgement.details.reason | default('')}}"
  evidence: "${{captured.judgement.details.evidence | default('')}}"
states:
  # A user instruction, not an assertion: the agent does the task and reports; it is never
  # shown the criteria, so it cannot optimise for the grade.
  execute:
    action_type: prompt
    action: {yaml_scalar(execute, 6)}
    capture: transcript
    timeout: 300
    next: check_skill
    # Re-entered from check_skill after NO, PARTIAL or CANNOT_JUDGE: one retry, then `failed`.
    max_retries: 1
    on_retry_exhausted: failed
  # Judge the report of `execute`: numbered observable conditions, an explicit NO clause, and
  # a verbatim quote as evidence (ll-loop checks the quote really occurs in the report).
  check_skill:
    evaluate:
      type: llm_structured
      source: "${{captured.transcript.output}}"
      prompt: {yaml_scalar(criteria, 8)}
    capture: judgement
    on_yes: done
    on_no: execute
    on_partial: execute
    on_blocked: blocked
    # Not sure from this report: try again (the budget still bounds the run).
    on_cannot_judge: execute
    timeout: 180
  done:
    terminal: true
  failed:
    description: Two attempts were judged and neither met every condition; see the outputs.
    terminal: true
    failure: true
  blocked:
    description: The user could not get far enough to try the feature.
    terminal: true
    failure: true
"""
    return Scaffold(name, text, "A", (issue.id,), holes)


# --- Variant B -----------------------------------------------------------------------------------


def _variant_b(issues: Sequence[Issue]) -> Scaffold:
    name = eval_name(issues)
    ids = [_safe_id(i.id) for i in issues]
    keys = _state_keys(ids)
    per_item = 2 + 2 * (ISSUE_RETRIES + 1)
    budget = per_item * len(issues) + 2
    holes: list[Placeholder] = []
    blocks: list[str] = []
    for issue, key in zip(issues, keys, strict=True):
        execute, miss_exec = execute_prompt(issue)
        criteria, miss_crit = criteria_prompt(issue)
        holes += [Placeholder(issue.id, f"states.execute_{key}.action", w) for w in miss_exec]
        holes += [
            Placeholder(issue.id, f"states.check_skill_{key}.evaluate.prompt", w) for w in miss_crit
        ]
        blocks.append(
            f"""\
  # ---- {_comment(issue.id)}: {_comment(issue.title)}{_from(issue)}
  execute_{key}:
    action_type: prompt
    action: {yaml_scalar(execute, 6)}
    capture: transcript
    timeout: 300
    next: check_skill_{key}
    # Re-entered after a NO: {ISSUE_RETRIES} retries, then this issue is recorded as failed.
    max_retries: {ISSUE_RETRIES}
    on_retry_exhausted: record_failure
    on_error: record_error
  check_skill_{key}:
    evaluate:
      type: llm_structured
      source: "${{captured.transcript.output}}"
      prompt: {yaml_scalar(criteria, 8)}
    on_yes: advance
    on_no: execute_{key}
    on_partial: execute_{key}
    on_cannot_judge: execute_{key}
    on_blocked: record_blocked
    on_error: record_error
    timeout: 180"""
        )
    worklist = " ".join(ids)
    routes = "\n".join(f"      issue_{key}: execute_{key}" for key in keys)
    cases = "\n".join(
        f"        {issue_id}) echo issue_{key} ;;" for issue_id, key in zip(ids, keys, strict=True)
    )
    verdicts = ", ".join([*(f"issue_{key}" for key in keys), "none"])
    summary = ", ".join(f"{_comment(i.id)} ({_comment(i.title)})" for i in issues)
    text = f"""\
# Eval harness for {len(issues)} issues: {summary}
# Generated by `ll-loop scaffold-eval`.
#
# A work list: `discover` picks the next issue without a line in processed.txt (the list is
# kept in the run directory) and routes to that issue's `execute_<id>` state, which uses the
# feature as a person would; `check_skill_<id>` judges the report against that issue's own
# criteria. A `record_*` state then writes the outcome to results.txt, marks the issue
# processed, and goes back to `discover`. NO or PARTIAL re-runs the issue's execute state up to
# {ISSUE_RETRIES} more times, then the issue is recorded as failed and the list moves on. `report`
# ends the run: `done` (exit 0) only when every issue passed, `failed` (exit 1) otherwise.
#
# Budget: each issue takes at most {per_item} steps (discover, then {ISSUE_RETRIES + 1} attempts of
# execute + check_skill, then one record state), plus 2 for the final discover and report:
# max_steps = {per_item} x {len(issues)} issues + 2 = {budget}.
{_placeholder_banner(tuple(holes))}name: {name}
description: {yaml_quoted(f"Evaluate {len(issues)} issues the way a user experiences them.")}
category: harness
labels: [eval]
initial: discover
max_steps: {budget}
timeout: {max(1800, 600 * len(issues))}
# The harness itself writes only into its run directory. This scope names the harness, so two
# runs of it never overlap; widen it if using the features changes files in the repository.
scope:
  - .loops/{name}
outputs:
  results: "${{run.dir}}/results.txt"
states:
  # The next issue of the work list with no line in processed.txt: its ID on the first line,
  # the route to its states on the last; `none` when every issue has been processed.
  discover:
    action: |-
      list="${{run.dir}}/worklist.txt"
      processed="${{run.dir}}/processed.txt"
      [ -f "$list" ] || printf '%s\\n' {worklist} > "$list"
      touch "$processed"
      next=$(grep -vxF -f "$processed" "$list" | head -n 1)
      [ -n "$next" ] || {{ echo none; exit 0; }}
      printf '%s\\n' "$next"
      case "$next" in
{cases}
      esac
    capture: item
    evaluate:
      type: classify
      verdicts: [{verdicts}]
    route:
{routes}
      none: report
{chr(10).join(blocks)}
  # ---- outcomes: one line per issue in results.txt, then back to the work list
  advance:
    action: |-
      id=$(printf '%s\\n' "${{captured.item.output}}" | head -n 1)
      printf '%s pass\\n' "$id" >> "${{run.dir}}/results.txt"
      printf '%s\\n' "$id" >> "${{run.dir}}/processed.txt"
    next: discover
  record_failure:
    action: |-
      id=$(printf '%s\\n' "${{captured.item.output}}" | head -n 1)
      printf '%s fail\\n' "$id" >> "${{run.dir}}/results.txt"
      printf '%s\\n' "$id" >> "${{run.dir}}/processed.txt"
    next: discover
  record_blocked:
    action: |-
      id=$(printf '%s\\n' "${{captured.item.output}}" | head -n 1)
      printf '%s blocked\\n' "$id" >> "${{run.dir}}/results.txt"
      printf '%s\\n' "$id" >> "${{run.dir}}/processed.txt"
    next: discover
  # The prompt action or the judge failed for this issue (API error, timeout): record, move on.
  record_error:
    action: |-
      id=$(printf '%s\\n' "${{captured.item.output}}" | head -n 1)
      printf '%s error\\n' "$id" >> "${{run.dir}}/results.txt"
      printf '%s\\n' "$id" >> "${{run.dir}}/processed.txt"
    next: discover
  # Print every issue's outcome; succeed only when all of them passed.
  report:
    action: |-
      results="${{run.dir}}/results.txt"
      touch "$results"
      cat "$results"
      total=$(grep -c . "$results" || true)
      passed=$(grep -c ' pass$' "$results" || true)
      printf '%s of %s issues passed\\n' "$passed" "$total"
      [ "$total" -gt 0 ] && [ "$passed" -eq "$total" ]
    evaluate:
      type: exit_code
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    description: At least one issue did not pass; results.txt in the run directory says which.
    terminal: true
    failure: true
"""
    return Scaffold(name, text, "B", tuple(i.id for i in issues), tuple(holes))


def _state_keys(ids: Sequence[str]) -> list[str]:
    """A distinct `[a-z0-9_]` key per issue ID, for state names and classify verdicts."""
    keys: list[str] = []
    for issue_id in ids:
        base = re.sub(r"[^a-z0-9]+", "_", issue_id.lower()).strip("_") or "issue"
        key, n = base, 2
        while key in keys:
            key, n = f"{base}_{n}", n + 1
        keys.append(key)
    return keys


# --- scaffold-verify: criteria mode -------------------------------------------------------------


def _criteria_mode(issue: Issue) -> Scaffold:
    stem = verify_file_stem(issue, adversarial=False)
    name = stem
    count = len(issue.acceptance_criteria)
    context = _context_lines(issue)
    blocks: list[str] = []
    for n, criterion in enumerate(issue.acceptance_criteria, 1):
        following = f"criterion_{n + 1}" if n < count else "aggregate"
        action = (
            f'You are checking one acceptance criterion of "{issue.title}" ({issue.id}) by '
            "trying it yourself on the real project, as a user would."
            + (f"\n\n{context}" if context else "")
            + f"\n\nThe criterion to check:\n({n}) {criterion}\n\n"
            "Do what a user would do to find out whether it holds. Report every action you "
            "took and its result copied as-is, including errors. Do not decide whether it "
            "passed; just report what happened."
        )
        no_lines = "\n".join(f"- {line}" for line in _criterion_no(issue, n, criterion))
        judge = (
            f"Does the report show that this acceptance criterion of {issue.id} holds?\n"
            f"({n}) {criterion}\n\n"
            "Answer YES only if the report shows it holding, observed directly rather than "
            "claimed. Answer NO if it does not hold, was not tried, or the report shows any of:\n"
            f"{no_lines}\n\n{evidence_demand()}"
        )
        blocks.append(
            f"""\
  # Criterion ({n}). Every criterion runs, whatever the verdict: the verdict is captured and
  # the aggregate state decides.
  criterion_{n}:
    description: {yaml_quoted(_shorten(f"({n}) {criterion}"))}
    action_type: prompt
    action: {yaml_scalar(action, 6)}
    capture: c{n}
    timeout: 300
    evaluate:
      type: llm_structured
      prompt: {yaml_scalar(judge, 8)}
    route:
      _: {following}"""
        )
    checks = "\n".join(f"      check {n} ${{captured.c{n}.verdict}}" for n in range(1, count + 1))
    text = f"""\
# Verification of {_comment(issue.id)}: {_comment(issue.title)}
# Generated by `ll-loop scaffold-verify`{_from(issue)}.
#
# Does it meet each acceptance criterion? One judged state per criterion, in order. There is
# no short-circuit: every criterion is tried and judged, each verdict is captured, and
# `aggregate` reads them all: `done` (exit 0) when every criterion got YES, `failed` (exit 1)
# otherwise, with the list of verdicts in its output.
#
# Budget: {count} criteria + 1 aggregate = {count + 1} steps, exactly one pass.
name: {name}
description: {yaml_quoted(f"Verify each acceptance criterion of {issue.id} ({issue.title}).")}
category: verification
labels: [verify, {yaml_quoted(issue.id)}]
initial: criterion_1
max_steps: {count + 1}
timeout: {max(1800, 480 * count)}
# Verification writes only into its run directory; the scope names this loop so two runs of it
# never overlap. Widen it if trying the criteria changes files in the repository.
scope:
  - .loops/{name}
outputs:
  verdicts: "${{captured.aggregate.output | default('')}}"
states:
{chr(10).join(blocks)}
  # Every verdict other than yes (no, partial, blocked, cannot_judge, error) fails its criterion.
  aggregate:
    action: |-
      failed=0
      check() {{
        printf '(%s) %s\\n' "$1" "$2"
        if [ "$2" != yes ]; then failed=$((failed + 1)); fi
      }}
{checks}
      if [ "$failed" -gt 0 ]; then
        printf '%s of {count} criteria not met\\n' "$failed"
        exit 1
      fi
      printf 'all {count} criteria met\\n'
    capture: aggregate
    evaluate:
      type: exit_code
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    description: At least one acceptance criterion was not met; see the aggregate output.
    terminal: true
    failure: true
"""
    return Scaffold(name, text, "verify", (issue.id,), ())


def _criterion_no(issue: Issue, number: int, criterion: str) -> list[str]:
    lines = [f"anything criterion ({number}) rules out"] if criterion in issue.should_not else []
    if issue.is_bug and issue.actual_behavior:
        lines.append(f"the reported problem still happening: {_flat(issue.actual_behavior)}")
    lines.append(
        f"{NO_SIGNALS} (an action that seemed to work but changed nothing), unless the "
        "criterion asks for that error"
    )
    return lines


# --- scaffold-verify: adversarial mode ----------------------------------------------------------

_PROBES: tuple[tuple[str, str, str], ...] = (
    (
        "boundary",
        "boundary values",
        "Try boundary values: empty input, the smallest and largest values it should accept, "
        "one past each limit, zero and negative numbers, very long text, no items and very "
        "many items - whatever limits apply to this feature.",
    ),
    (
        "hostile",
        "malformed or hostile input",
        "Try malformed and hostile input: wrong types, broken syntax, unicode and control "
        "characters, quotes and shell metacharacters, injection strings such as "
        "`; rm -rf x`, `' OR 1=1 --` and `../../etc/passwd`, duplicate or conflicting options.",
    ),
    (
        "failure",
        "failure modes",
        "Try failure modes: a missing or unreadable file, no permission, a dependency or "
        "network that is unavailable, interrupting it half-way, running it twice at once, a "
        "read-only directory - whatever can be simulated safely here.",
    ),
)


def _adversarial(issue: Issue) -> Scaffold:
    stem = verify_file_stem(issue, adversarial=True)
    name = stem
    context = _context_lines(issue, with_criteria=True)
    blocks: list[str] = []
    for index, (key, label, instruction) in enumerate(_PROBES):
        following = _PROBES[index + 1][0] if index + 1 < len(_PROBES) else "judge_coverage"
        following = following if following == "judge_coverage" else f"probe_{following}"
        action = (
            f'You are trying to break "{issue.title}" ({issue.id}) on the real project, '
            f"probing one class of weakness: {label}."
            + (f"\n\n{context}" if context else "")
            + f"\n\n{instruction}\n\n"
            "Make at least two real attempts. For each, report the exact input or action, the "
            "command you ran, and the output you observed, copied verbatim. Never describe an "
            "attempt you did not make. If you could not attempt this class at all, start your "
            "report with NOT ATTEMPTED and say why."
        )
        blocks.append(
            f"""\
  # Probe class {index + 1} of 3: {label}. It attempts and reports; judging happens at the end.
  probe_{key}:
    action_type: prompt
    action: {yaml_scalar(action, 6)}
    capture: {key}
    timeout: 300
    next: {following}
    on_error: {following}"""
        )
    source = "\n\n".join(
        f"## {label}\n${{captured.{key}.output | default('NOT ATTEMPTED: the probe failed')}}"
        for key, label, _ in _PROBES
    )
    coverage = (
        f"You are auditing an adversarial test of {issue.id}. The text holds one report per "
        "probe class: boundary values, malformed or hostile input, failure modes. A class "
        "counts as genuinely attempted only when its report shows at least one concrete "
        "attempt: the exact input or action AND the output that was observed. Plans, "
        'hypotheticals ("one could try"), NOT ATTEMPTED, or claims without observed output do '
        "not count.\n"
        "Answer YES only if all three classes were genuinely attempted. Answer NO, naming the "
        "classes that were not, if fewer than three were - even if every attempt that was made "
        "passed: a probe that barely tried has found nothing.\n\n"
        + evidence_demand("each class you count as attempted")
    )
    findings = (
        f'Did "{issue.title}" ({issue.id}) hold up under these probes?\n'
        "Answer YES only if no attempt produced a crash, a stack trace, a hang, lost or "
        "corrupted data, a silently wrong result or a silent no-op, and every rejected input "
        "got a clear error message. Answer NO, naming each attempt that broke it and what was "
        "observed.\n\n" + evidence_demand("the probe reports")
    )
    text = f"""\
# Adversarial test of {_comment(issue.id)}: {_comment(issue.title)}
# Generated by `ll-loop scaffold-verify --adversarial`{_from(issue)}.
#
# Can it be broken? Three probe states attack it (boundary values, malformed or hostile input,
# failure modes); each attempts and reports. `judge_coverage` then checks that all three classes
# were genuinely attempted, with observed output as evidence: fewer than three ends in
# `under_probed` (exit 1) even if everything that was tried passed. Only then does
# `judge_findings` decide between `done` (exit 0) and `broken` (exit 1).
#
# Budget: 3 probes + 2 judges = 5 steps, exactly one pass.
name: {name}
description: {yaml_quoted(f"Try to break {issue.id} ({issue.title}) with three classes of probes.")}
category: verification
labels: [adversarial, {yaml_quoted(issue.id)}]
initial: probe_boundary
max_steps: 5
timeout: 1800
# The probes may create scratch files; they write only into the run directory unless the
# feature itself writes elsewhere. Widen the scope if it does.
scope:
  - .loops/{name}
states:
{chr(10).join(blocks)}
  # Were all three classes really attempted? Judged over the three reports together.
  judge_coverage:
    evaluate:
      type: llm_structured
      source: {yaml_scalar(source, 8, escape=False)}
      prompt: {yaml_scalar(coverage, 8)}
    on_yes: judge_findings
    on_no: under_probed
    on_partial: under_probed
    on_blocked: under_probed
    on_cannot_judge: under_probed
    timeout: 180
  judge_findings:
    evaluate:
      type: llm_structured
      source: {yaml_scalar(source, 8, escape=False)}
      prompt: {yaml_scalar(findings, 8)}
    on_yes: done
    on_no: broken
    on_partial: broken
    on_blocked: broken
    on_cannot_judge: broken
    timeout: 180
  done:
    terminal: true
  under_probed:
    description: Fewer than three probe classes were genuinely attempted.
    terminal: true
    failure: true
  broken:
    description: A probe broke the feature; see judge_findings' reason and evidence.
    terminal: true
    failure: true
"""
    return Scaffold(name, text, "adversarial", (issue.id,), ())


def _context_lines(issue: Issue, *, with_criteria: bool = False) -> str:
    parts: list[str] = []
    if issue.summary:
        parts.append(f"What it is:\n{issue.summary}")
    if issue.use_case:
        parts.append(f"How people use it:\n{issue.use_case}")
    if issue.expected_behavior:
        parts.append(f"What it should do:\n{issue.expected_behavior}")
    if issue.steps_to_reproduce:
        parts.append(f"How the problem was reproduced:\n{issue.steps_to_reproduce}")
    if with_criteria and issue.acceptance_criteria:
        listed = "\n".join(f"- {c}" for c in issue.acceptance_criteria)
        parts.append(f"What it promises:\n{listed}")
    return "\n\n".join(parts)


# --- YAML emission -------------------------------------------------------------------------------

# Characters YAML will not take literally: non-printables (PyYAML's reader rejects them), line
# breaks other than \n, the BOM, and surrogates. Inside double quotes they are escaped.
_NEEDS_ESCAPE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]"
)


def yaml_scalar(text: str, indent: int, *, escape: bool = True) -> str:
    """A YAML scalar holding exactly `text` (`${` escaped when `escape`): a `|-` block if it can.

    A block scalar is used for multi-line text whose lines fit one (no tabs or control
    characters, no leading space on the first line, no trailing spaces); anything else is
    double-quoted with escapes. Either way `yaml.safe_load` gives back exactly the text.
    """
    if escape:
        text = text.replace("${", "$${")
    lines = text.split("\n")
    block_safe = (
        len(lines) > 1
        and not _NEEDS_ESCAPE.search(text)
        and "\t" not in text
        and not lines[0].startswith(" ")
        and all(line == line.rstrip() for line in lines)
        and lines[-1] != ""
    )
    if not block_safe:
        return yaml_quoted(text)
    pad = " " * indent
    body = "\n".join(f"{pad}{line}" if line else "" for line in lines)
    return f"|-\n{body}"


def yaml_quoted(text: str) -> str:
    """A double-quoted YAML scalar; non-printable and YAML line-break characters are escaped."""
    out: list[str] = ['"']
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif _NEEDS_ESCAPE.match(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _comment(text: str) -> str:
    """Issue text safe inside a `#` comment: one line, no control characters."""
    return _NEEDS_ESCAPE.sub(" ", " ".join(text.split()))


def _from(issue: Issue, lead: str = " from ") -> str:
    return f"{lead}{_comment(str(issue.path))}" if issue.path else ""


def _placeholder_banner(holes: tuple[Placeholder, ...]) -> str:
    if not holes:
        return ""
    listed = "\n".join(f"#   - {_comment(h.path)}: {_comment(h.what)}" for h in holes)
    return (
        "#\n# TO FILL before this harness means anything (`ll-loop validate` lists them):\n"
        f"{listed}\n"
    )


def _safe_id(issue_id: str) -> str:
    """The ID as a token safe in file names, shell words and YAML keys."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", issue_id).strip("-.") or "ISSUE"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int = 100) -> str:
    flat = _flat(text)
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."
