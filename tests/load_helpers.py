"""Shared snippets for the loader tests: a corpus of valid loops and small assertion helpers."""

from __future__ import annotations

import textwrap

from engine.load.loader import check_loop_text
from engine.model.errors import Diagnostic


def problems(text: str) -> list[Diagnostic]:
    """All diagnostics of a YAML snippet (dedented), asserting the loader refused it."""
    loop, _, found = check_loop_text(textwrap.dedent(text), "loop.yaml")
    assert loop is None, "expected the loader to refuse this loop"
    assert found, "a refused loop must say why"
    return found


def one(text: str, code: str) -> Diagnostic:
    """The single diagnostic with `code` in the snippet's diagnostics."""
    matching = [d for d in problems(text) if d.code == code]
    assert len(matching) == 1, f"expected one {code}, got {[d.render() for d in problems(text)]}"
    return matching[0]


MINIMAL = """\
name: minimal
initial: start
states:
  start:
    action: "true"
    next: done
  done:
    terminal: true
"""

FIX_UNTIL_GREEN = """\
name: fix-until-green
description: Run the tests, let an agent fix them, re-run.
initial: test
max_steps: 20
on_max_steps: report
timeout: 600
default_timeout: 120
scope: ["src/", "tests/"]
context:
  test_cmd: make test
  attempts: 3
parameters:
  target:
    type: string
    required: true
    description: what to fix
  level:
    type: string
    enum: [low, high]
    default: low
outputs:
  verdict: ${captured.test.verdict}
llm:
  model: claude-sonnet-4-5
  max_tokens: 2048
  temperature: 0
  timeout: 60
  runner: "cmd:claude -p"
  cache: true
max_cost_usd: 2.5
category: automation
labels: [demo, tests]
lint:
  suppress:
    - code: scope
      reason: the demo writes only to its temp dir
states:
  test:
    description: run the suite
    action: ${context.test_cmd}
    timeout: 300
    capture: test
    on_yes: done
    on_no: fix
    on_error: failed
    max_retries: 3
    on_retry_exhausted: failed
  fix:
    action: Fix the failing tests in ${param.target}.
    action_type: prompt
    model: claude-opus-4
    runner: anthropic
    next: test
    on_error: failed
  report:
    action: echo out of steps
    next: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""

EVERY_EVALUATOR = """\
name: every-evaluator
initial: exit
states:
  exit:
    action: "true"
    evaluate: {type: exit_code}
    on_yes: contains
    on_no: contains
    on_error: contains
  contains:
    action: echo PASS
    evaluate:
      type: output_contains
      pattern: "^PASS$"
      negate: false
      source: ${captured.x.output}
      ignore_exit_code: true
    route: {"yes": numeric, _: numeric, _error: numeric}
  numeric:
    action: echo 3
    evaluate: {type: output_numeric, operator: ge, target: 2}
    on_yes: json
    on_no: json
  json:
    action: "echo '{\\"a\\": [1]}'"
    evaluate: {type: output_json, path: .a.0, operator: eq, target: 1}
    on_yes: converge
    on_no: converge
  converge:
    action: echo 0.8
    evaluate:
      type: convergence
      target: ${context.goal}
      tolerance: 0.03
      direction: maximize
      previous: ${captured.converge.output}
    on_target: classify
    on_progress: converge
    on_stall: classify
  classify:
    action: echo flaky
    evaluate: {type: classify, verdicts: [green, red, flaky], line: first}
    on_green: judge
    on_red: judge
    on_flaky: judge
  judge:
    action: Use the dashboard as a user would.
    action_type: prompt
    evaluate:
      type: llm_structured
      prompt: Did it work? Quote the output verbatim as evidence.
      samples: 3
      min_confidence: 0.7
      model: claude-haiku
      max_tokens: 512
      temperature: 0.2
    on_yes: rubric
    on_no: rubric
    on_partial: rubric
    on_blocked: rubric
    on_cannot_judge: rubric
  rubric:
    action: cat report.md
    evaluate:
      type: llm_structured
      dimensions:
        - {name: accuracy, description: facts are right, weight: 0.5}
        - {name: clarity, description: easy to follow, weight: 0.5}
      reviewers: 3
      threshold: 3.5
    on_yes: child
    on_no: child
  child:
    loop: fix-until-green
    with: {target: src/app.py}
    capture: child_result
    on_terminal: {blocked: done}
    on_yes: done
    on_no: done
    on_error: done
    lint:
      suppress: [{code: MR-8, reason: rubric dimensions carry the criteria}]
  done:
    terminal: true
"""

EVERY_JUDGE = """\
name: every-judge
initial: work
scope: ["src/"]
states:
  work:
    action: make build
    evaluate:
      type: assessment
      concurrency: 4
      reasoning: low
      outputs: [dist]
      annotations: {difficulty: hard}
      judges:
        - {name: budget, builtin: cost_budget, arguments: {max_cost_usd: 5.0}}
        - name: long_enough
          if: "not annotations.get('skip', False)"
          check: |
            return len(outputs["stdout"]) > 10, "length"
        - {name: quality, prompt: "Score it. Quote evidence.", samples: 3, score_range: [1, 5]}
        - {name: green, prompt_file: judge.j2, feedback_type: bool, min_confidence: 0.6}
        - {name: polite, llm_rubric: The answer is polite, model: claude-haiku-4-5}
        - {name: schema, module: evals.checks, function: check_schema, arguments: {strict: true}}
      expectations:
        - {type: test, command: make test, timeout: 60}
        - {type: script, command: "make lint\\nmake typecheck"}
        - {type: file_exists, paths: [dist/index.js]}
        - type: llm_review
          criteria: Handles the failure cases.
          threshold: 3.5
          reviewers: 3
          explore: true
          dimensions:
            - name: compatibility
              description: clients work
              weight: 0.6
              rubric: {"1": none work, "5": all work}
            - {name: errors, description: failures are clear, weight: 0.4}
      metrics:
        - {name: coverage, command: ./coverage.sh, threshold: 80}
    on_yes: done
    on_no: done
    on_error: done
  done:
    terminal: true
"""

CORPUS = {
    "minimal": MINIMAL,
    "fix-until-green": FIX_UNTIL_GREEN,
    "every-evaluator": EVERY_EVALUATOR,
    "every-judge": EVERY_JUDGE,
}
